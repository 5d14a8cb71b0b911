"""The zero-shot calibration register: the model the runs start from, at step 0, against its bands.

The bands come from ``prereg/tier_rules.yaml`` (``calibration``, amendment A2), loaded only when the
amendment verification covers the file. Two bands: clean validation true success inside the band
registered for the model, and the step-0 luck share at p = 0.25 at least the registered minimum. Both
apply only to a model with a registered band: the CPU stand-in has none, and the register says
``not_applicable`` rather than pass. A band that applies and is missed (or cannot be measured) fails
the gate, and training does not start.
"""

from __future__ import annotations

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


def check_register(register: dict[str, Any], source: str) -> None:
    """One line naming the register and every missed band, when a band that applies is missed."""
    if not isinstance(register, dict) or register.get("format") != FORMAT or "bands" not in register:
        raise UserError(
            f"{source}: not a zero-shot calibration register ({FORMAT}); rerun 'calibrate zero-shot'"
        )
    missed = [b for b in register["bands"] if b.get("applies") and b.get("status") != "pass"]
    if missed:
        rules = register.get("rules", {}).get("path", "the tier rules")
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
