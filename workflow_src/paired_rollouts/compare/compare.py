"""Compare the published numbers with the registers of one results root (comparison.json).

Render computes no statistics, and neither does this: each published number names the register key
that holds it (docs/compare.md), so the comparison only reads, combines (difference, ratio, range over
runs) and checks the result against the published rounding. Every register is loaded through its typed
reader (paired_rollouts.records) before its paths are walked: a register of another shape stops the
comparison with the reader's one line naming the file, instead of turning into "not computed" entries.
A published key names the register's JSON keys (docs/records.md), so the walk goes through the typed
record's ``raw``, the register as written and checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paired_rollouts import design, records
from paired_rollouts.compare.published import Entry, Published, split_key
from paired_rollouts.errors import UserError

STATUS = ("reproduced", "differs", "not computed")
TOL = 1e-9  # float slack on the half-unit bound


class Missing(Exception):
    """A register or a key in it is absent: the number cannot be computed from this results root."""


# The register files a published key may name (relative to the results root; tasks/ to the task-pool
# folder) and the reader each is loaded through; the first pattern that matches the whole name wins.
READERS: tuple[tuple[re.Pattern[str], Callable[[Path], Any]], ...] = tuple(
    (re.compile(pattern), reader)
    for pattern, reader in (
        (r"decisions/(tiers/)?predictions\.json", records.read_predictions),
        (r"decisions/power\.json", records.read_power_table),
        (r"decisions/power_curves\.json", records.read_power_curves),
        (r"decisions/(tiers/)?[A-Za-z0-9_-]+\.json", records.read_decision_register),
        (r"diagnostics/[^/]+/luck-step[0-9]+\.json", records.read_luck),
        (r"probe/bandit\.json", records.read_bandit),
        (r"probe/[^/]+\.json", records.read_probe_register),
        (r"reference/scripted_reference\.json", records.read_scripted_reference),
        (r"runs/[^/]+/group_stats\.json", records.read_group_stats),
        (r"runs/[^/]+/register\.json", records.read_run_register),
        (r"runs/[^/]+/complete\.json", records.read_completeness),
        (r"curves/[^/]+\.json", records.read_curves_register),
        (r"models/surrogate/calibration\.json", records.read_calibration),
        (r"tasks/MANIFEST\.json", records.read_pool_manifest),
    )
)


def reader_for(file: str) -> Callable[[Path], Any] | None:
    """The typed reader of a register file named in a published key, or None when it has none."""
    for pattern, reader in READERS:
        if pattern.fullmatch(file):
            return reader
    return None


def check_readers(published: Published) -> None:
    """Every file a published key names must be a register with a typed reader (no raw JSON walks)."""
    for e in published.entries:
        for key in e.keys:
            for one in key if isinstance(key, tuple | list) else (key,):
                file, _ = split_key(one)
                if reader_for(file) is None:
                    raise UserError(
                        f"{published.source}: entry {e.id!r} reads {file}, which is no register with a "
                        "typed reader (compare/compare.py READERS, docs/records.md); name a register key"
                    )


class Registers:
    """Lazy reader of the JSON registers under a results root (and the task-pool folder for tasks/)."""

    def __init__(self, root: str | Path, tasks_dir: str | Path | None = None) -> None:
        self.root = Path(root)
        self.tasks_dir = Path(tasks_dir) if tasks_dir else None
        self._cache: dict[str, Any] = {}
        self.read: set[str] = set()

    def path_of(self, file: str) -> Path:
        if file.startswith("tasks/"):
            if self.tasks_dir is None:
                raise Missing("no task-pool folder given (--tasks-dir)")
            return self.tasks_dir / file[len("tasks/") :]
        return self.root / file

    def _register(self, file: str) -> Any:
        """The register ``file`` as written (checked by its typed reader), None when it is absent."""
        if file not in self._cache:
            path = self.path_of(file)
            if not path.is_file():
                self._cache[file] = None
            else:
                reader = reader_for(file)
                if reader is None:
                    raise UserError(f"{file}: no typed reader for this register (compare/compare.py READERS)")
                self._cache[file] = reader(path).raw
                self.read.add(str(path))
        return self._cache[file]

    def get(self, key: str) -> Any:
        file, parts = split_key(key)
        obj = self._register(file)
        if obj is None:
            raise Missing(f"{file} is not in this results root")
        for i, part in enumerate(parts):
            obj = _step(obj, part, file, parts[:i])
        if obj is None:
            raise Missing(f"{file}: {'.'.join(parts)} is null (undefined at this scale)")
        return obj


def _step(obj: Any, part: str, file: str, above: list[str]) -> Any:
    """One step of a key's path: an item of a list or a key of an object (Missing when absent)."""
    where = ".".join(above) or "(top)"
    if isinstance(obj, list):
        if not part.isdigit() or int(part) >= len(obj):
            raise Missing(f"{file}: {where} has {len(obj)} item(s), no item {part}")
        return obj[int(part)]
    if isinstance(obj, dict):
        if part in obj:
            return obj[part]
        if obj.get("computed") is False:
            raise Missing(f"{file}: {where} is not computed ({obj.get('reason')})")
        if _scale_dependent(part):
            raise Missing(f"{file}: {where} has no key {part!r}")
        raise UserError(
            f"{file}: {where} has no key {part!r} at any scale (not a key of this register, docs/records.md); "
            "fix the published key"
        )
    raise Missing(f"{file}: {'.'.join(above)} is a value, not an object")


def _scale_dependent(part: str) -> bool:
    """Keys that a smaller scale may lack: steps and seeds, run names, regimes, arms, conditions."""
    return bool(
        part.isdigit()
        or design.RUN_NAME.match(part)
        or part in design.REGIMES
        or part in design.ARMS
        or design.CONDITION_NAME.match(part)
    )


def _num(x: Any, key: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise Missing(f"{key} is not a number ({type(x).__name__})")
    return float(x)


def _range(values: list[float]) -> list[float]:
    return [min(values), max(values)]


# How each op combines the keys' values ``v`` into the published number, at the published scale ``s``.
OPS: dict[str, Callable[[list[float], float], Any]] = {
    "value": lambda v, s: v[0] * s,
    "difference": lambda v, s: (v[0] - v[1]) * s,
    "ratio": lambda v, s: v[0] / v[1] * s,
    "one_minus": lambda v, s: (1.0 - v[0]) * s,
    "one_minus_ratio": lambda v, s: (1.0 - v[0] / v[1]) * s,
    "difference_times": lambda v, s: (v[0] - v[1]) * 0.1 * 0.9 * s,
    "mean": lambda v, s: sum(v) / len(v) * s,
    "min_above": lambda v, s: min(v) * s,
    "max_abs_at_most": lambda v, s: max(abs(x) for x in v) * s,
    "count_below_one": lambda v, s: sum(x < 1.0 for x in v),
    "range": lambda v, s: [min(v) * s, max(v) * s],
    "range_one_minus": lambda v, s: _range([(1.0 - x) * s for x in v]),
}


def reproduce(entry: Entry, regs: Registers) -> Any:
    """The reproduced value in the published unit (scaled), or raise Missing."""
    op, keys, s = entry.op, entry.keys, entry.scale
    if entry.unit in ("sha256", "verdict"):
        return regs.get(keys[0])
    if op == "range_ratio":
        vals = [_num(regs.get(a), a) / _num(regs.get(b), b) for a, b in keys]
        return [min(vals) * s, max(vals) * s]
    if op not in OPS:
        raise AssertionError(op)
    return OPS[op]([_num(regs.get(k), k) for k in keys], s)


def _within(rep: float, pub: float, rounding: float) -> bool:
    return abs(rep - pub) <= rounding / 2 * (1 + TOL) + TOL * max(1.0, abs(pub))


def agrees(entry: Entry, rep: Any) -> bool:
    """Whether a reproduced value agrees with the published one within its printed rounding."""
    if entry.unit in ("sha256", "verdict"):
        return rep == entry.value
    if entry.op == "min_above":
        return rep > entry.value
    if entry.op == "max_abs_at_most":
        return rep <= entry.value * 100
    if entry.kind == "range":
        return _within(rep[0], entry.value[0], entry.rounding) and _within(
            rep[1], entry.value[1], entry.rounding
        )
    return _within(rep, entry.value, entry.rounding)


def _difference(entry: Entry, rep: Any) -> Any:
    if entry.unit in ("sha256", "verdict") or entry.op in ("min_above", "max_abs_at_most"):
        return None
    if entry.kind == "range":
        return [_clean(rep[0] - entry.value[0]), _clean(rep[1] - entry.value[1])]
    return _clean(rep - entry.value)


def _clean(x: float) -> float:
    """Round away float noise (12 significant digits) so the file is stable across machines."""
    return float(f"{x:.12g}") if math.isfinite(x) else x


def judged(entry: Entry, rep: Any) -> dict[str, Any]:
    """What a reproduced value (as written: float noise rounded away) says against its published entry:
    the row's status, agrees and difference. The comparison's reader recomputes every row with it."""
    ok = agrees(entry, rep)
    return {"status": "reproduced" if ok else "differs", "agrees": ok, "difference": _difference(entry, rep)}


def compare(
    published: Published,
    regs: Registers,
    *,
    scale: str,
    scale_label: str,
    published_sha256: str | None = None,
) -> dict[str, Any]:
    """Build comparison.json (docs/compare.md); ``published_sha256``: the published file's pinned sha256."""
    check_readers(published)
    rows = []
    for e in published.entries:
        row: dict[str, Any] = {
            "id": e.id,
            "where": e.where,
            "printed": e.printed,
            "published": e.value,
            "unit": e.unit,
            "rounding": e.rounding,
            "op": e.op,
            "keys": [list(k) if isinstance(k, tuple) else k for k in e.keys],
        }
        try:
            rep = reproduce(e, regs)
        except Missing as exc:
            row.update(
                status="not computed",
                reproduced=None,
                difference=None,
                agrees=None,
                reason=f"cannot be computed at {scale_label} scale: {exc}",
            )
        except ZeroDivisionError:
            row.update(
                status="not computed",
                reproduced=None,
                difference=None,
                agrees=None,
                reason="a denominator register value is 0",
            )
        else:
            if isinstance(rep, float):
                rep = _clean(rep)
            elif isinstance(rep, list):
                rep = [_clean(v) for v in rep]
            verdict = judged(e, rep)
            row.update(
                reproduced=rep,
                **verdict,
                reason=None
                if verdict["agrees"] or scale == "paper"
                else f"expected at {scale_label} scale: not the paper's model, runs or step counts",
            )
        rows.append(row)
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUS}
    expected = scale != "paper"
    return {
        "published_source": published.source,
        "published_sha256": published_sha256,
        "study": published.study,
        "scale": scale,
        "scale_label": scale_label,
        "mismatch_expected": expected,
        "summary": {
            "entries": len(rows),
            **counts,
            "text": (
                f"{counts['reproduced']} of {len(rows)} published numbers reproduced within rounding"
                + (
                    f" (at {scale_label} scale a mismatch is expected: the runs are not the paper's)"
                    if expected
                    else ""
                )
            ),
        },
        "budget": published.budget,
        "entries": rows,
    }
