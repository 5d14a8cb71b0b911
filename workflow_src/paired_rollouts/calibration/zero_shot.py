"""The zero-shot calibration register: the model the runs start from, at step 0, against its bands.

The bands come from ``prereg/tier_rules.yaml`` (``calibration``, amendment A2), loaded only when the
amendment verification covers the file. Two bands: clean validation true success inside the band
registered for the model, and the step-0 luck share at p = 0.25 at least the registered minimum. Both
apply only to a model with a registered band: the CPU stand-in has none, and the register says
``not_applicable`` rather than pass. A band that applies and is missed (or cannot be measured) fails
the gate, and training does not start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError

FORMAT = "paired-rollouts-zero-shot-calibration/1"
LUCK_SEED = 20260911  # the luck-share CLI's default bootstrap seed (same interval as luck-step0.json)


def _status(applies: bool, passes: bool) -> str:
    if not applies:
        return "not_applicable"
    return "pass" if passes else "fail"


def build_register(
    calibration: dict[str, Any],
    model: str,
    clean: dict[str, Any],
    luck: dict[str, Any],
    *,
    rules: dict[str, Any],
    evidence: dict[str, Any],
) -> dict[str, Any]:
    """The register from the measured values.

    ``calibration`` is the ``calibration`` block of the tier rules; ``clean`` is {"successes",
    "episodes", "tasks"} of the clean validation set; ``luck`` a luck-share record (``lam``, ``ci95``,
    ``tasks``, ``tasks_defined``, ``K``, ``M``, ``defects``).
    """
    registered = model in calibration["bands"]
    band = calibration["bands"][model]["clean_success"] if registered else None
    episodes = int(clean["episodes"])
    achieved = clean["successes"] / episodes if episodes else None
    clean_ok = achieved is not None and band is not None and band[0] <= achieved <= band[1]
    minimum = calibration["luck_share_at_least"]
    lam = luck.get("lam")
    luck_ok = lam is not None and not luck.get("defects") and lam >= minimum
    note = (
        None
        if registered
        else (
            f"no band is registered for model {model!r} (tier rules calibration.bands lists "
            f"{', '.join(sorted(calibration['bands']))}): reported, not checked"
        )
    )
    bands = [
        {
            "name": "clean_success",
            "what": "true success on the clean validation set at step 0",
            "target": {"low": band[0], "high": band[1]} if band else None,
            "achieved": achieved,
            "interval": None,
            "episodes": episodes,
            "tasks": int(clean["tasks"]),
            "applies": registered,
            "passes": bool(clean_ok) if registered else None,
            "status": _status(registered, clean_ok),
        },
        {
            "name": "luck_share",
            "what": "step-0 luck share at p = 0.25 (default mixture) on the diagnostic settings",
            "target": {"at_least": minimum},
            "achieved": lam,
            "interval": luck.get("ci95"),
            "episodes": int(luck.get("episodes", 0)),
            "tasks": luck.get("tasks"),
            "tasks_defined": luck.get("tasks_defined"),
            "schedules": luck.get("K"),
            "samples": luck.get("M"),
            "defects": list(luck.get("defects", [])),
            "applies": registered,
            "passes": bool(luck_ok) if registered else None,
            "status": _status(registered, luck_ok),
        },
    ]
    statuses = {b["status"] for b in bands}
    status = "fail" if "fail" in statuses else ("pass" if statuses == {"pass"} else "not_applicable")
    return {
        "format": FORMAT,
        "model": model,
        "registered": registered,
        "note": note,
        "rules": rules,
        "bands": bands,
        "status": status,
        "passes": None if status == "not_applicable" else status == "pass",
        "evidence": evidence,
    }


BAND_NAMES = ("clean_success", "luck_share")


def band_status(band: dict[str, Any]) -> str:
    """A band's status recomputed from what it achieved and its registered target (the status field as
    written is never trusted): inside [low, high] or at least the minimum passes; not measurable fails."""
    if not band.get("applies"):
        return "not_applicable"
    target, got = band.get("target") or {}, band.get("achieved")
    if isinstance(got, bool) or not isinstance(got, (int, float)) or got != got:
        return "fail"
    if "low" in target and "high" in target:
        ok = target["low"] <= got <= target["high"]
    elif "at_least" in target:
        ok = got >= target["at_least"] and not band.get("defects")
    else:
        return "fail"  # a band that applies without a target cannot be met
    return "pass" if ok else "fail"


def register_status(register: dict[str, Any]) -> str:
    """The register's verdict from its bands: fail if a band fails or the design's bands are not all
    there (an empty band list is a fail), pass if all pass, else not applicable."""
    bands = register.get("bands") or []
    names = [b.get("name") for b in bands]
    if sorted(names) != sorted(BAND_NAMES):
        return "fail"
    statuses = {band_status(b) for b in bands}
    if "fail" in statuses or (register.get("registered") and statuses != {"pass"}):
        return "fail"
    return "pass" if statuses == {"pass"} else "not_applicable"


def check_register(register: dict[str, Any], source: str) -> None:
    """One line naming the register and every missed band, when a band that applies is missed, the
    bands are not the design's, or a status written in the register is not its bands' recomputed one."""
    if not isinstance(register, dict) or register.get("format") != FORMAT or "bands" not in register:
        raise UserError(
            f"{source}: not a zero-shot calibration register ({FORMAT}); rerun 'calibrate zero-shot'"
        )
    bands = register["bands"]
    names = sorted(str(b.get("name")) for b in bands)
    if names != sorted(BAND_NAMES):
        raise UserError(
            f"{source}: the register's bands are {names or 'none'}, the design's are {list(BAND_NAMES)}; "
            "training does not start - rerun 'calibrate zero-shot'"
        )
    forged = [
        f"{b['name']} says {b.get('status')}, its achieved value and band give {band_status(b)}"
        for b in bands
        if b.get("status") != band_status(b)
    ]
    forged += [
        f"{b['name']} applies={b.get('applies')} but registered={register.get('registered')}"
        for b in bands
        if b.get("applies") != bool(register.get("registered"))
    ]
    overall = register_status(register)
    if register.get("status") != overall:
        forged.append(f"the register says {register.get('status')}, its bands give {overall}")
    if forged:
        raise UserError(
            f"{source}: status not recomputable from its numbers ({'; '.join(forged)}); training does not "
            "start - rerun 'calibrate zero-shot'"
        )
    missed = [b for b in bands if b.get("applies") and band_status(b) != "pass"]
    if missed:
        named = register.get("rules") if isinstance(register.get("rules"), dict) else {}
        rules = named.get("path", "the tier rules")
        parts = []
        for b in missed:
            target = b["target"] or {}
            wanted = (
                f"in [{target['low']}, {target['high']}]"
                if "low" in target
                else f">= {target.get('at_least')}"
            )
            got = "not measurable" if b["achieved"] is None else f"{b['achieved']:.4f}"
            parts.append(f"{b['name']} {got} (registered {wanted})")
        raise UserError(
            f"{source}: zero-shot calibration register ({rules} calibration) missed for {register['model']}: "
            f"{'; '.join(parts)}; training does not start - check the model and the environment"
        )


def gate(path: str | Path) -> None:
    """The training gate: the register at ``path`` read and its verdict recomputed (not its existence),
    against the bands of the tier rules it names wherever that file is here with its recorded sha256."""
    from paired_rollouts.records import read_zero_shot

    register = read_zero_shot(path).raw
    check_targets(register, str(path))
    check_register(register, str(path))


def check_targets(register: dict[str, Any], source: str) -> None:
    """Each band's target and ``registered`` as the tier rules the register names (``rules.path``) give
    them for its model, when that file is at hand with the recorded ``rules.sha256``: a band edited
    together with its status is refused, never judged on its own word."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_tier_rules

    named = register.get("rules") if isinstance(register.get("rules"), dict) else {}
    rules = named.get("path")
    if not isinstance(rules, str) or not Path(rules).is_file() or sha256_file(rules) != named.get("sha256"):
        return
    calibration = load_tier_rules(rules)["calibration"]
    model = register.get("model")
    registered = model in calibration["bands"]
    band = calibration["bands"][model]["clean_success"] if registered else None
    targets = {
        "clean_success": {"low": band[0], "high": band[1]} if band else None,
        "luck_share": {"at_least": calibration["luck_share_at_least"]},
    }
    wrong = [
        f"{b.get('name')} target {b.get('target')} (the rules give {targets[b['name']]})"
        for b in register.get("bands") or []
        if b.get("name") in targets and b.get("target") != targets[b["name"]]
    ]
    if register.get("registered") != registered:
        wrong.append(f"registered {register.get('registered')} (the rules give {registered} for {model!r})")
    if wrong:
        raise UserError(
            f"{source}: not the bands of {rules} ({'; '.join(wrong)}); training does not start - rerun "
            "'calibrate zero-shot'"
        )


def describe(register: dict[str, Any]) -> list[str]:
    """Human-readable lines (``calibrate check`` and the job log)."""
    lines = [f"zero-shot calibration of {register['model']}: {register['status'].upper()}"]
    if register.get("note"):
        lines.append(f"  {register['note']}")
    for b in register["bands"]:
        target = b["target"]
        if target is None:
            wanted = "no registered band"
        elif "low" in target:
            wanted = f"band [{target['low']}, {target['high']}]"
        else:
            wanted = f"at least {target['at_least']}"
        got = "n/a" if b["achieved"] is None else f"{b['achieved']:.4f}"
        interval = b.get("interval")
        if interval and interval[0] is not None:
            got += f" (95% CI {interval[0]:.4f}-{interval[1]:.4f})"
        lines.append(f"  {b['name']:<14} {got:<32} {wanted:<22} {b['status']}")
    return lines
