"""One strict, typed reader for the records that stages hand each other (docs/records.md section 0).

Every consumer of episode, training-group, run-manifest, completeness, luck-share and pool-manifest
files reads them through here, so a record with a missing key, a wrong type (``true_success: "false"``,
which ``bool()`` would count as a success) or a NaN is refused with ``file:line`` and the fix, instead of
silently changing a decision or ending in a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl_numbered, read_json

ARMS = tuple(design.ARMS)
PHASES = ("periodic", "final", "diagnostic", "train")
REGIMES = design.REGIMES


def _is_condition(v: Any) -> bool:
    return isinstance(v, str) and bool(design.CONDITION_NAME.match(v))


_is_condition.__name__ = "condition name (C0, C2r, ...)"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) and math.isfinite(v)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _list_of(check):
    def test(v: Any) -> bool:
        return isinstance(v, list) and all(check(x) for x in v)

    test.__name__ = f"list of {check.__name__.removeprefix('_is_')}"
    return test


def _one_of(*values: str):
    def test(v: Any) -> bool:
        return v in values

    test.__name__ = "one of " + "/".join(values)
    return test


def _is_int_or_none(v: Any) -> bool:
    return v is None or _is_int(v)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


TYPE_WORDS = {
    _is_int: "an integer",
    _is_num: "a finite number",
    _is_bool: "true or false",
    _is_str: "a non-empty string",
    _is_dict: "an object",
    _is_int_or_none: "an integer or null",
}

# CONTRACT: the episode record's required keys and their types.
EPISODE = {
    "run": _is_str,
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "seed": _is_int,
    "phase": _one_of(*PHASES),
    "step": _is_int,
    "regime": _one_of(*REGIMES),
    "task_id": _is_str,
    "schedule_index": _is_int_or_none,
    "schedule_seed": _is_int,
    "true_success": _is_bool,
    "observed_reward": _is_num,
    "flipped": _is_bool,
    "exposed": _is_bool,
    "calls": _is_int,
    "budget": _is_int,
    "finished": _is_bool,
    "faults": _is_dict,
}
# CONTRACT: the training-group record (``zero_variance``/``spurious`` are derived; checked when present).
GROUP = {
    "run": _is_str,
    "step": _is_int,
    "group": _is_int,
    "task_id": _is_str,
    "schedule_seeds": _list_of(_is_int),
    "true_success": _list_of(_is_bool),
    "observed_reward": _list_of(_is_num),
    "advantages": _list_of(_is_num),
}
GROUP_OPTIONAL = {
    "zero_variance": _is_bool,
    "spurious": _is_bool,
    "row_index": _is_int,
    "schedule_seed": _is_int,
}


def _word(check: Any) -> str:
    return TYPE_WORDS.get(check, getattr(check, "__name__", "valid"))


def validate(
    record: Any, schema: dict[str, Any], where: str, what: str, optional: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Check ``record`` against ``schema`` (key -> predicate); UserError naming ``where`` and the key."""
    if not isinstance(record, dict):
        raise UserError(f"{where}: a {what} must be a JSON object")
    for key, check in schema.items():
        if key not in record:
            raise UserError(
                f"{where}: missing key '{key}' in the {what} (docs/records.md section 0); regenerate the file"
            )
        if not check(record[key]):
            raise UserError(
                f"{where}: {what} key '{key}' is {record[key]!r}, expected {_word(check)}; "
                "regenerate the file"
            )
    for key, check in (optional or {}).items():
        if key in record and not check(record[key]):
            raise UserError(f"{where}: {what} key '{key}' is {record[key]!r}, expected {_word(check)}")
    return record


def iter_episodes(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of an episode file, each record type-checked against the contract."""
    for line, rec in _numbered(path):
        yield line, validate(rec, EPISODE, f"{path}:{line}", "episode record")


def read_episodes(path: str | Path) -> list[dict[str, Any]]:
    return [rec for _, rec in iter_episodes(path)]


def iter_groups(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) of a groups.jsonl, each type-checked; the lists must have one length."""
    for line, rec in _numbered(path):
        where = f"{path}:{line}"
        validate(rec, GROUP, where, "training-group record", GROUP_OPTIONAL)
        lengths = {len(rec[k]) for k in ("schedule_seeds", "true_success", "observed_reward", "advantages")}
        if len(lengths) != 1 or 0 in lengths:
            raise UserError(
                f"{where}: training-group lists have lengths {sorted(lengths)}; each needs G entries"
            )
        yield line, rec


def read_groups(path: str | Path) -> list[dict[str, Any]]:
    return [rec for _, rec in iter_groups(path)]


def _numbered(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return iter_jsonl_numbered(path)


# ----------------------------------------------------------------------------------------------
# JSON registers


def _need(data: dict[str, Any], key: str, check: Any, where: str, what: str) -> Any:
    if key not in data:
        raise UserError(f"{where}: missing key '{key}' in the {what} (docs/records.md); regenerate it")
    if not check(data[key]):
        raise UserError(f"{where}: {what} key '{key}' is {data[key]!r}, expected {_word(check)}")
    return data[key]


def read_pool_manifest(path: str | Path) -> dict[str, Any]:
    """data/tasks/MANIFEST.json: ``pools: {name: {count, sha256}}``."""
    data = read_json(path)
    what = "pool manifest"
    if not isinstance(data, dict):
        raise UserError(f"{path}: a {what} must be a JSON object")
    pools = _need(data, "pools", _is_dict, str(path), what)
    for name, entry in pools.items():
        where = f"{path}: pools.{name}"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: expected {{count, sha256}}; regenerate with 'paired-rollouts tasks'")
        _need(entry, "sha256", _is_sha256, where, what)
        if "count" in entry and not _is_int(entry["count"]):
            raise UserError(f"{where}: 'count' is {entry['count']!r}, expected an integer")
    return data


def _is_sha256(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


TYPE_WORDS[_is_sha256] = "a sha256 hex digest"


def read_run_manifest(path: str | Path) -> dict[str, Any]:
    """results/runs/RUN/manifest.json: an object whose pool hashes and attempts are well typed."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: a run manifest must be a JSON object")
    attempts = data.get("attempts")
    if attempts is not None and not (
        isinstance(attempts, list) and all(isinstance(a, dict) for a in attempts)
    ):
        raise UserError(f"{path}: run manifest 'attempts' must be a list of objects")
    return data


COMPLETE = {
    "run": _is_str,
    "complete": _is_bool,
    "files": _is_dict,
    "task_pools": _is_dict,
    "code_versions": _list_of(_is_str),
    "missing": _list_of(_is_dict),
    "defects": _list_of(_is_dict),
}


def read_completeness(path: str | Path) -> dict[str, Any]:
    """results/runs/RUN/complete.json, typed; its ``files`` map relative paths to sha256 digests."""
    data = read_json(path)
    validate(data, COMPLETE, str(path), "completeness record")
    for rel, digest in data["files"].items():
        if not _is_sha256(digest):
            raise UserError(f"{path}: files.{rel} is {digest!r}, expected a sha256 hex digest")
    return data


LUCK = {
    "run": _is_str,
    "step": _is_int,
    "source_sha256": _is_sha256,
    "defects": _list_of(_is_dict),
    "per_task": _list_of(_is_dict),
}


def read_luck(path: str | Path) -> dict[str, Any]:
    """results/diagnostics/RUN/luck-stepN.json, typed (per-task lam a finite number or null)."""
    data = read_json(path)
    validate(data, LUCK, str(path), "luck-share record")
    for i, task in enumerate(data["per_task"]):
        lam = task.get("lam")
        if lam is not None and not _is_num(lam):
            raise UserError(f"{path}: per_task[{i}].lam is {lam!r}, expected a finite number or null")
    lam = data.get("lam")
    if lam is not None and not _is_num(lam):
        raise UserError(f"{path}: 'lam' is {lam!r}, expected a finite number or null")
    return data


DECISION = {
    "condition": _is_condition,
    "decided": _is_bool,
    "complete": _is_bool,
    "seeds": _list_of(_is_int),
    "missing": _list_of(_is_str),
}


def read_decision_register(path: str | Path) -> dict[str, Any]:
    """results/decisions/{c2,c4}.json or decisions/tiers/NAME.json, typed at the keys consumers judge by."""
    data = read_json(path)
    validate(data, DECISION, str(path), "decision register")
    return data


PROBE = {"trajectory": _is_str, "run": _is_str, "checkpoints": _is_dict}


def read_probe_register(path: str | Path) -> dict[str, Any]:
    """results/probe/TRAJECTORY.json, typed at the keys the predictions read."""
    data = read_json(path)
    validate(data, PROBE, str(path), "probe register")
    if not isinstance(data.get("verdict"), dict | type(None)):
        raise UserError(f"{path}: 'verdict' is {type(data['verdict']).__name__}, expected an object")
    return data
