"""The flaky-search study's files: its evidence, its register and its table (docs/pairing.md#the-register).

The evidence (``evidence.jsonl``) holds every number the study measured: one settings line, one line per
run (evaluation scores, training groups, final diagnostic tables) and one line per seed (the step-0
diagnostic). The register (``register.json``) names it by SHA-256 and states the summary computed from
it; ``read_register`` recomputes that summary from the evidence and refuses a register that disagrees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.examples.flaky_search.study import ARMS, PRESETS, StudySettings, summarise
from paired_rollouts.io import (
    atomic_write_all,
    dumps_json,
    iter_jsonl_numbered,
    jsonl_line,
    sha256_bytes,
    sha256_file,
)

EXAMPLE = "flaky_search"
REGISTER_KEYS = {"example", "preset", "settings", "evidence", "summary"}


def write_study(evidence: dict[str, Any], preset: str, out_dir: Path) -> dict[str, Any]:
    """Write ``evidence.jsonl``, ``register.json`` and ``table.txt`` into ``out_dir``; returns the register."""
    lines = [jsonl_line({"kind": "settings", "settings": evidence["settings"]})]
    lines += [jsonl_line({"kind": "run", **run}) for run in evidence["runs"]]
    lines += [jsonl_line({"kind": "diagnostic_step0", **d}) for d in evidence["diagnostic_step0"]]
    evidence_text = "".join(lines).encode("utf-8")
    register = {
        "example": EXAMPLE,
        "preset": preset,
        "settings": evidence["settings"],
        "evidence": {"path": "evidence.jsonl", "sha256": sha256_bytes(evidence_text)},
        "summary": json.loads(dumps_json(summarise(evidence))),
    }
    # the three files together: a path that cannot be written leaves none of them
    atomic_write_all(
        [
            (out_dir / "evidence.jsonl", evidence_text),
            (out_dir / "register.json", dumps_json(register).encode("utf-8")),
            (out_dir / "table.txt", table(register).encode("utf-8")),
        ]
    )
    return register


def read_evidence(path: Path) -> dict[str, Any]:
    """The evidence file back as ``run_study`` returned it."""
    evidence: dict[str, Any] = {"settings": None, "runs": [], "diagnostic_step0": []}
    for line_no, record in iter_jsonl_numbered(path):
        kind = record.pop("kind", None)
        if kind == "settings":
            evidence["settings"] = record["settings"]
        elif kind == "run":
            evidence["runs"].append(record)
        elif kind == "diagnostic_step0":
            evidence["diagnostic_step0"].append(record)
        else:
            raise UserError(
                f"{path}:{line_no}: unknown record kind {kind!r}; see docs/pairing.md#the-register"
            )
    if evidence["settings"] is None:
        raise UserError(f"{path}: no settings line; rerun 'paired-rollouts examples flaky-search'")
    return evidence


def read_register(path: Path) -> dict[str, Any]:
    """A register whose evidence hashes as stated and whose summary recomputes from it, byte for byte."""
    path = Path(path)
    try:
        register = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a readable register ({exc}); rerun the example") from None
    if not isinstance(register, dict) or set(register) != REGISTER_KEYS or register["example"] != EXAMPLE:
        raise UserError(f"{path}: not a flaky-search register (keys {sorted(register)}); see docs/pairing.md")
    evidence_path = path.parent / register["evidence"]["path"]
    if not evidence_path.is_file() or sha256_file(evidence_path) != register["evidence"]["sha256"]:
        raise UserError(f"{path}: its evidence {evidence_path} is missing or changed; rerun the example")
    evidence = read_evidence(evidence_path)
    if evidence["settings"] != register["settings"]:
        raise UserError(f"{path}: settings differ from its evidence's; rerun the example")
    if json.loads(dumps_json(summarise(evidence))) != register["summary"]:
        raise UserError(f"{path}: the summary does not recompute from {evidence_path}; rerun the example")
    return register


def settings_of(preset: str) -> StudySettings:
    try:
        return PRESETS[preset]
    except KeyError:
        raise UserError(f"unknown preset {preset!r}; use one of {', '.join(PRESETS)}") from None


def _fmt(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _interval(bounds: list[float | None]) -> str:
    return f"[{_fmt(bounds[0], sign=True)}, {_fmt(bounds[1], sign=True)}]"


def table(register: dict[str, Any]) -> str:
    """The study's table (Markdown text for table.txt), from the register alone."""
    s, settings = register["summary"], StudySettings(**register["settings"])
    arms = s["arms"]
    n = len(s["seeds"])
    luck = s["luck_share_step0"]
    spurious = s["spurious"]
    auc, final = s["auc_gap"], s["final_gap"]
    rows = [
        ("AUC of true validation success", "auc_mean"),
        ("validation success at step 0", "step0_mean"),
        (f"validation success at step {settings.steps}", "final_mean"),
        ("luck share after training (mean over seeds)", "luck_share_final_mean"),
    ]
    lines = [
        f"# Flaky search: paired versus independent schedules ({register['preset']} preset)",
        "",
        f"{n} seed pairs x {settings.steps} steps x {settings.prompts_per_step} questions x G = "
        f"{settings.group_size}; fault rate {settings.fault_rate}, grader flips q = "
        f"{settings.flip_rate}; evaluation on {settings.eval_tasks} questions x "
        f"{settings.eval_schedules} fixed schedules at steps {', '.join(map(str, s['eval_steps']))}.",
        "",
        "| | " + " | ".join(ARMS) + " |",
        "|---|" + "---|" * len(ARMS),
    ]
    lines += [f"| {label} | " + " | ".join(_fmt(arms[a][key]) for a in ARMS) + " |" for label, key in rows]
    lines += [
        "| zero-variance training groups | "
        + " | ".join(_fmt(arms[a]["groups"]["zero_variance_fraction"]) for a in ARMS)
        + " |",
        f"| spurious-variance rate among all-correct groups (closed form {_fmt(spurious['closed_form'])}) | "
        + " | ".join(_fmt(arms[a]["groups"]["spurious_rate"]) for a in ARMS)
        + " |",
        "",
        f"- Luck share at step 0: {_fmt(luck['mean'])} on average over the seeds (lowest {_fmt(luck['min'])}; "
        f"pooled {_fmt(luck['pooled_mean'])}).",
        f"- AUC gap, paired - independent: {_fmt(auc['gap'], 4, True)}, 95 % paired-bootstrap interval "
        f"{_interval(auc['ci95'])}; {auc['seeds_positive']} of {n} seeds positive.",
        f"- Final-step gap: {_fmt(final['gap'], 4, True)}, 95 % interval {_interval(final['ci95'])}.",
        f"- Verdict (the 95 % interval of the AUC gap): **{s['verdict']}**.",
        "",
    ]
    return "\n".join(lines)
