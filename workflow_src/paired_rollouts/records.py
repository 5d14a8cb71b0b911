"""One strict, typed reader for the records that stages hand each other (docs/records.md section 0).

Every consumer of episode, training-group, run-manifest, completeness, luck-share and pool-manifest
files, and of the registers (group statistics, run and curves registers, decisions, predictions, probe,
power table, surrogate calibration, verification), reads them through here, so a record with a missing key, a wrong type (``true_success: "false"``,
which ``bool()`` would count as a success) or a NaN is refused with ``file:line`` and the fix, instead of
silently changing a decision or ending in a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
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
    record: Any,
    schema: dict[str, Any],
    where: str,
    what: str,
    optional: dict[str, Any] | None = None,
    fix: str = "regenerate the file",
) -> dict[str, Any]:
    """Check ``record`` against ``schema`` (key -> predicate); UserError naming ``where``, the key and
    ``fix`` (a register's readers name the command that writes it)."""
    if not isinstance(record, dict):
        tail = "" if fix == "regenerate the file" else f"; {fix}"
        raise UserError(f"{where}: a {what} must be a JSON object{tail}")
    for key, check in schema.items():
        if key not in record:
            raise UserError(f"{where}: missing key '{key}' in the {what} (docs/records.md section 0); {fix}")
        if not check(record[key]):
            raise UserError(f"{where}: {what} key '{key}' is {record[key]!r}, expected {_word(check)}; {fix}")
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


def read_pool_manifest(path: str | Path) -> PoolManifest:
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
    return PoolManifest(str(path), data, {name: entry["sha256"] for name, entry in pools.items()})


def _is_sha256(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


TYPE_WORDS[_is_sha256] = "a sha256 hex digest"


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


# A computed H2a/H2b block (stats/decisions.py hypothesis_h2): per seed and the means over seeds that
# tables 3 and 4 show as written.
H2_BY_SEED = (
    "auc_paired",
    "auc_independent",
    "auc_difference_by_seed",
    "final_paired_by_seed",
    "final_independent_by_seed",
    "final_difference_by_seed",
)
H2_MEANS = (
    "auc_paired_mean",
    "auc_independent_mean",
    "auc_difference_mean",
    "final_paired_mean",
    "final_independent_mean",
    "final_difference_mean",
)


def read_decision_register(path: str | Path) -> dict[str, Any]:
    """results/decisions/{c2,c4}.json or decisions/tiers/NAME.json, typed at the keys consumers judge by;
    a computed H2a/H2b block has one value per seed in each per-seed list and its means over seeds, a
    computed C2 H1a or H3 block the counts and minima table 2 shows."""
    data = read_json(path)
    validate(data, DECISION, str(path), "decision register")
    for name in ("H2a", "H2b"):
        block = data.get(name)
        if not isinstance(block, dict) or block.get("computed") is not True:
            continue
        schema = {"seeds": _list_of(_is_int), "auc_difference_positive_seeds": _is_int}
        schema.update({key: _list_of(_is_num) for key in H2_BY_SEED})
        schema.update({key: _is_num for key in H2_MEANS})
        _need_keys(path, name, block, schema)
        for key in H2_BY_SEED:
            if len(block[key]) != len(block["seeds"]):
                raise UserError(
                    f"{path}: key '{name}.{key}' has {len(block[key])} values for {len(block['seeds'])} "
                    "seeds; regenerate it with 'paired-rollouts decide'"
                )
    for name, schema in (("H1a", H1A_C2), ("H3", H3_SHOWN)):
        block = data.get(name)
        if isinstance(block, dict) and block.get("computed") is True and data["condition"] == "C2":
            _need_keys(path, name, block, schema)
    return data


def _need_keys(path: str | Path, name: str, block: dict[str, Any], schema: dict[str, Any]) -> None:
    """A decision register's hypothesis block typed at ``schema``; the error names ``name.key``."""
    fix = "regenerate it with 'paired-rollouts decide'"
    for key, check in schema.items():
        if key not in block:
            raise UserError(f"{path}: missing key '{name}.{key}' in the decision register; {fix}")
        if not check(block[key]):
            raise UserError(f"{path}: key '{name}.{key}' is {block[key]!r}, expected {_word(check)}; {fix}")


PROBE = {"trajectory": _is_str, "run": _is_str, "checkpoints": _is_dict}


def read_probe_register(path: str | Path) -> dict[str, Any]:
    """results/probe/TRAJECTORY.json, typed at the keys the predictions read."""
    data = read_json(path)
    validate(data, PROBE, str(path), "probe register")
    if not isinstance(data.get("verdict"), dict | type(None)):
        raise UserError(f"{path}: 'verdict' is {type(data['verdict']).__name__}, expected an object")
    for step, checkpoint in data["checkpoints"].items():
        outcome = checkpoint.get("outcome") if isinstance(checkpoint, dict) else None
        if not isinstance(outcome, dict):
            continue
        for key in PROBE_OUTCOME_SHARES:  # checked when present; table 12 requires them
            if key in outcome and not _is_num(outcome[key]):
                raise UserError(
                    f"{path}: checkpoints.{step}.outcome.{key} is {outcome[key]!r}, expected a finite number; "
                    "regenerate it with 'paired-rollouts probe checkpoint' and 'probe assemble'"
                )
    return data


# The outcome probe's clean success and share of mixed-outcome groups (probe/enumeration.py success_shares).
PROBE_OUTCOME_SHARES = ("clean_success", "nonzero_share")


# ----------------------------------------------------------------------------------------------
# Typed records read by stats and render alike: one shape each (the one its writer writes); any
# other shape is refused with one line naming the file.


def _obj(data: Any, key: str, where: str, what: str) -> dict[str, Any]:
    return _need(data, key, _is_dict, where, what)


@dataclass(frozen=True)
class RunManifest:
    """results/runs/RUN/manifest.json as training/grpo.py and surrogate/run.py write it."""

    path: str
    run: str
    condition: str
    arm: str
    seed: int
    steps: int
    prompts_per_step: int
    num_generations: int
    p: float
    q: float
    device: str
    gpu: str | None
    versions: dict[str, str]
    pools_sha256: dict[str, str]
    code_versions: list[str]
    attempts: list[dict[str, Any]]
    timings: list[dict[str, Any]]


MANIFEST_TOP = {
    "run": _is_str,
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "seed": _is_int,
    "settings": _is_dict,
    "noise": _is_dict,
    "pools_sha256": _is_dict,
    "versions": _is_dict,
    "hardware": _is_dict,
    "code": _is_dict,
    "attempts": _list_of(_is_dict),
}


def read_run_manifest(path: str | Path) -> RunManifest:
    """The run manifest, typed; a missing or mistyped key is one UserError naming the file and key."""
    data = read_json(path)
    where, what = str(path), "run manifest"
    validate(data, MANIFEST_TOP, where, what)
    settings, noise, hardware = data["settings"], data["noise"], data["hardware"]
    for key in ("steps", "prompts_per_step", "num_generations"):
        _need(settings, key, _is_int, f"{where}: settings", what)
    for key in ("p", "q"):
        _need(noise, key, _is_num, f"{where}: noise", what)
    _need(hardware, "device", _is_str, f"{where}: hardware", what)
    if "gpu" in hardware and not _is_str(hardware["gpu"]):
        raise UserError(f"{where}: hardware.gpu is {hardware['gpu']!r}, expected a non-empty string")
    for name, digest in data["pools_sha256"].items():
        if not _is_sha256(digest):
            raise UserError(f"{where}: pools_sha256.{name} is {digest!r}, expected a sha256 hex digest")
    for name, version in data["versions"].items():
        if version is not None and not isinstance(version, str):
            raise UserError(f"{where}: versions.{name} is {version!r}, expected a string or null")
    top = _need(data["code"], "sources_sha256", _is_str, f"{where}: code", what)
    per_attempt = []
    for i, attempt in enumerate(data["attempts"]):
        if "code_version" in attempt:
            per_attempt.append(_need(attempt, "code_version", _is_str, f"{where}: attempts[{i}]", what))
    timings = data.get("timings") or []
    if not _list_of(_is_dict)(timings):
        raise UserError(f"{where}: 'timings' must be a list of objects")
    return RunManifest(
        path=where,
        run=data["run"],
        condition=data["condition"],
        arm=data["arm"],
        seed=data["seed"],
        steps=settings["steps"],
        prompts_per_step=settings["prompts_per_step"],
        num_generations=settings["num_generations"],
        p=float(noise["p"]),
        q=float(noise["q"]),
        device=hardware["device"],
        gpu=hardware.get("gpu"),
        versions={str(k): v for k, v in data["versions"].items() if v is not None},
        pools_sha256=dict(data["pools_sha256"]),
        code_versions=sorted(set(per_attempt or [top])),
        attempts=list(data["attempts"]),
        timings=list(timings),
    )


@dataclass(frozen=True)
class PoolManifest:
    """data/tasks/MANIFEST.json: ``pools: {name: {count, sha256}}`` (paired-rollouts tasks)."""

    path: str
    raw: dict[str, Any]
    sha256: dict[str, str]


@dataclass(frozen=True)
class Token:
    """One time-stamp token of a verification report (prereg/verify.py)."""

    record: str
    name: str
    gen_time: str | None
    verified: bool


@dataclass(frozen=True)
class Verification:
    """results/prereg/verification.json as ``paired-rollouts prereg verify`` writes it."""

    path: str
    passes: bool
    imprint: str
    test_authority: bool
    documents: list[dict[str, Any]]
    tokens: list[Token]
    failures: list[str]


def read_verification(path: str | Path) -> Verification:
    data = read_json(path)
    where, what = str(path), "pre-registration verification"
    validate(
        data,
        {
            "passes": _is_bool,
            "imprint": _is_str,
            "documents": _list_of(_is_dict),
            "records": _list_of(_is_dict),
            "failures": _list_of(_is_str),
        },
        where,
        what,
    )
    documents = []
    for i, doc in enumerate(data["documents"]):
        validate(
            doc, {"path": _is_str, "sha256": _is_str, "matches": _is_bool}, f"{where}: documents[{i}]", what
        )
        documents.append(doc)
    tokens = []
    for i, record in enumerate(data["records"]):
        here = f"{where}: records[{i}]"
        validate(record, {"record": _is_str, "tokens": _list_of(_is_dict)}, here, what)
        for j, token in enumerate(record["tokens"]):
            at = f"{here}.tokens[{j}]"
            validate(token, {"name": _is_str, "rfc3161_client": _is_dict, "openssl": _is_dict}, at, what)
            gen_time = token.get("gen_time")
            if gen_time is not None and not _is_str(gen_time):
                raise UserError(f"{at}: gen_time is {gen_time!r}, expected a string or null")
            ok = [_need(token[k], "ok", _is_bool, f"{at}.{k}", what) for k in ("rfc3161_client", "openssl")]
            tokens.append(Token(record["record"], token["name"], gen_time, all(ok)))
    test_authority = data.get("test_authority", False)
    if not _is_bool(test_authority):
        raise UserError(f"{where}: 'test_authority' is {test_authority!r}, expected true or false")
    return Verification(
        where, data["passes"], data["imprint"], test_authority, documents, tokens, list(data["failures"])
    )


RUN_REGISTER = {
    "run": _is_str,
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "seed": _is_int,
    "curves": _is_dict,
    "auc": _is_dict,
    "final": _is_dict,
}


def read_run_register(path: str | Path) -> dict[str, Any]:
    """results/runs/RUN/register.json (stats/run_register.py), typed at the keys render reads."""
    data = read_json(path)
    validate(data, RUN_REGISTER, str(path), "run register")
    for block in ("auc", "final"):
        for regime, value in data[block].items():
            if value is not None and not _is_num(value):
                raise UserError(f"{path}: {block}.{regime} is {value!r}, expected a finite number or null")
    for regime, curve in data["curves"].items():
        if not isinstance(curve, dict) or not all(k.isdigit() and _is_num(v) for k, v in curve.items()):
            raise UserError(f"{path}: curves.{regime} must map steps to finite numbers")
    return data


# ----------------------------------------------------------------------------------------------
# The registers render shows and the stats code reads back: group statistics, predictions, power
# table, surrogate calibration and the conditions' curves registers. A register of another shape
# names its file, the key and the command that rewrites it.


def _nullable(check):
    def test(v: Any) -> bool:
        return v is None or check(v)

    test.__name__ = f"{_word(check)} or null"
    return test


# What table 2 shows of computed H1a (C2) and H3 blocks, as written.
H1A_C2 = {
    "luck_share_step0_min": _nullable(_is_num),
    "luck_share_step0_lower_min": _nullable(_is_num),
    "runs_meeting_luck": _is_int,
    "runs_meeting_sharing": _is_int,
}
H3_SHOWN = {"difference_by_seed": _list_of(_is_num), "difference_positive_seeds": _is_int}


def _map_of(check):
    def test(v: Any) -> bool:
        return isinstance(v, dict) and all(isinstance(k, str) and check(x) for k, x in v.items())

    test.__name__ = f"an object whose values are each {_word(check)}"
    return test


def _steps_of(check):
    def test(v: Any) -> bool:
        return isinstance(v, dict) and all(k.isdigit() and check(x) for k, x in v.items())

    test.__name__ = f"an object from step numbers to values that are each {_word(check)}"
    return test


def _typed(data: Any, schema: dict[str, Any], where: str, what: str, command: str) -> dict[str, Any]:
    """``validate`` with the register's writer named in the fix."""
    return validate(data, schema, where, what, fix=f"regenerate it with '{command}'")


GROUP_STATS = {
    "run": _is_str,
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "seed": _is_int,
    "groups": _is_int,
    "rollouts": _is_int,
    "G": _is_int,
    "steps": _is_int,
    "zero_variance_groups": _is_int,
    "zero_variance_frac": _is_num,
    "all_correct_groups": _is_int,
    "spurious_groups": _is_int,
    "spurious_among_all_correct": _nullable(_is_num),
    "expected_spurious_rate": _nullable(_is_dict),
    "seed_sharing": _is_dict,
    "by_step": _list_of(_is_dict),
    "defects": _list_of(_is_dict),
}


def read_group_stats(path: str | Path) -> dict[str, Any]:
    """results/runs/RUN/group_stats.json (stats/groups.py, docs/records.md section 2), typed."""
    data = read_json(path)
    where, what, command = str(path), "group statistics", "paired-rollouts group-stats"
    _typed(data, GROUP_STATS, where, what, command)
    expected = data["expected_spurious_rate"]
    if expected is not None:
        _typed(
            expected,
            {"q": _is_num, "G": _is_int, "rate": _is_num},
            f"{where}: expected_spurious_rate",
            what,
            command,
        )
    _typed(data["seed_sharing"], {"passes": _nullable(_is_bool)}, f"{where}: seed_sharing", what, command)
    return data


PREDICTION_VERDICTS = ("met", "missed", "not run", "not decided")
PREDICTIONS = {
    "predictions": _list_of(_is_dict),
    "counts": _map_of(_is_int),
    "H4": _is_dict,
    "registers": _list_of(_is_str),
    "probes": _list_of(_is_str),
}
PREDICTION_ROW = {
    "id": _is_str,
    "statement": _is_str,
    "confidence": _is_num,
    "check": _is_str,
    "verdict": _one_of(*PREDICTION_VERDICTS),
    "observed": _is_dict,
}


def read_predictions(path: str | Path) -> dict[str, Any]:
    """results/decisions/predictions.json or decisions/tiers/predictions.json (stats/predictions.py),
    typed: every row and the H4 block (docs/records.md section 4.1)."""
    data = read_json(path)
    where, what, command = str(path), "predictions register", "paired-rollouts predictions"
    _typed(data, PREDICTIONS, where, what, command)
    for i, row in enumerate(data["predictions"]):
        _typed(row, PREDICTION_ROW, f"{where}: predictions[{i}]", what, command)
    h4 = _typed(
        data["H4"], {"decided": _is_bool, "passes": _nullable(_is_bool)}, f"{where}: H4", what, command
    )
    if h4["decided"]:
        _typed(
            h4,
            {"gap_group": _nullable(_is_num), "gap_none": _nullable(_is_num)},
            f"{where}: H4",
            what,
            command,
        )
    return data


POWER = {
    "hypotheses": _is_dict,
    "full_pairs": _is_int,
    "pairs": _list_of(_is_int),
    "draws": _is_int,
    "seed": _is_int,
    "bootstrap_resamples": _is_int,
    "decisions": _map_of(_is_sha256),
    "rules_sha256": _is_str,
}
POWER_ROW = {
    "condition": _is_condition,
    "passes_full": _is_bool,
    "passes_full_recomputed": _is_bool,
    "seed_pairs": _is_int,
    "power": _map_of(_is_num),
    "passes_counted": _map_of(_is_int),
    "draws": _is_int,
}


def read_power_table(path: str | Path) -> dict[str, Any]:
    """results/<scale>/decisions/power.json (surrogate/power.py, docs/records.md section 8.3), typed."""
    data = read_json(path)
    where, what, command = str(path), "power table", "paired-rollouts surrogate power"
    _typed(data, POWER, where, what, command)
    for name, row in data["hypotheses"].items():
        _typed(row, POWER_ROW, f"{where}: hypotheses.{name}", what, command)
        if not all(n.isdigit() for n in row["power"]):
            raise UserError(
                f"{where}: hypotheses.{name}.power must be keyed by seed-pair counts; regenerate it with "
                f"'{command}'"
            )
    return data


CALIBRATION = {
    "stage": _one_of("step0", "curves"),
    "passes": _is_bool,
    "knobs": _map_of(_is_num),
    "shape": _map_of(_is_num),
    "theta": _list_of(_is_num),
    "parameter_names": _list_of(_is_str),
    "targets": _list_of(_is_dict),
    "luck_share": _is_dict,
    "mechanism": _is_dict,
    "signal_to_noise": _map_of(_is_dict),
    "iterations": _list_of(_is_dict),
    "estimation": _is_dict,
}
# The calibration register proper (stage "curves") adds the unpaired arms' curves to the step-0 register.
CALIBRATION_CURVES = {"step0_sha256": _is_sha256, "curves": _map_of(_is_dict)}
CALIBRATION_TARGET = {
    "target_name": _is_str,
    "target": _is_num,
    "tolerance": _is_num,
    "achieved": _nullable(_is_num),
    "difference": _nullable(_is_num),
    "passes": _is_bool,
    "kind": _is_str,
    "source": _is_str,
}
CALIBRATION_ESTIMATION = {
    "eval_tasks": _is_int,
    "samples": _is_int,
    "clean_episodes": _is_int,
    "noisy_episodes": _is_int,
    "diagnostic_episodes": _is_int,
    "probe_captures": _is_int,
    "snr_groups": _is_int,
}
CALIBRATION_CURVE = {
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "regime": _is_str,
    "runs": _list_of(_is_str),
    "points": _list_of(_is_dict),
    "rms_gap": _nullable(_is_num),
    "tolerance": _is_num,
    "checked": _is_bool,
}


def read_calibration(path: str | Path) -> dict[str, Any]:
    """results/<scale>/models/surrogate/{step0,calibration}.json (surrogate/calibration.py, docs/records.md
    section 8.2), typed; theta has one value per parameter name; the calibration register proper (stage
    "curves") also carries the unpaired arms' curves."""
    data = read_json(path)
    where, what, command = str(path), "surrogate calibration register", "paired-rollouts surrogate calibrate"
    _typed(data, CALIBRATION, where, what, command)
    for i, row in enumerate(data["targets"]):
        _typed(row, CALIBRATION_TARGET, f"{where}: targets[{i}]", what, command)
    _typed(data["estimation"], CALIBRATION_ESTIMATION, f"{where}: estimation", what, command)
    _typed(
        data["luck_share"],
        {"lam": _nullable(_is_num), "tasks": _is_int, "tasks_defined": _is_int},
        f"{where}: luck_share",
        what,
        command,
    )
    if data["stage"] == "curves":
        command = "paired-rollouts surrogate curves"
        _typed(data, CALIBRATION_CURVES, where, what, command)
        for name, curve in data["curves"].items():
            _typed(curve, CALIBRATION_CURVE, f"{where}: curves.{name}", what, command)
    if len(data["theta"]) != len(data["parameter_names"]):
        raise UserError(
            f"{where}: {len(data['theta'])} theta values for {len(data['parameter_names'])} parameter names; "
            f"regenerate it with '{command}'"
        )
    from paired_rollouts.surrogate.calibration import summary_mismatch

    mismatch = summary_mismatch(data)
    if mismatch is not None:
        raise UserError(
            f"{where}: {mismatch}; its summaries must follow from its detail: regenerate it with '{command}'"
        )
    return data


CURVES = {
    "condition": _is_condition,
    "arms": _is_dict,
    "pairs": _is_dict,
    "differences": _is_dict,
    "registers": _map_of(_is_sha256),
}
# An arm's group statistics pooled over its runs (stats/groups.py pool_group_stats), when given.
CURVES_GROUPS = {
    "runs": _list_of(_is_str),
    "groups": _is_int,
    "zero_variance_groups": _is_int,
    "zero_variance_frac": _nullable(_is_num),
    "all_correct_groups": _is_int,
    "spurious_groups": _is_int,
    "spurious_among_all_correct": _nullable(_is_num),
}
# One seed pair of the condition (stats/condition_curves.py seed_pairs): paired - independent.
CURVES_PAIR = {
    "paired": _is_str,
    "independent": _is_str,
    "curves_difference": _map_of(_steps_of(_is_num)),
    "auc_difference": _map_of(_nullable(_is_num)),
}
CURVES_ARM = {
    "runs": _list_of(_is_str),
    "curves": _map_of(_steps_of(_is_num)),
    "curve_runs": _map_of(_is_int),
    "final": _map_of(_nullable(_is_num)),
}


def read_curves_register(path: str | Path) -> dict[str, Any]:
    """results/curves/CONDITION.json (stats/condition_curves.py, docs/records.md section 3.2), typed:
    per arm the runs averaged, the mean curve per periodic set and the mean final success per set."""
    data = read_json(path)
    where, what, command = str(path), "curves register", "paired-rollouts curves-register"
    _typed(data, CURVES, where, what, command)
    for arm, block in data["arms"].items():
        if arm not in ARMS:
            raise UserError(
                f"{where}: arms.{arm} is not an arm ({', '.join(ARMS)}); regenerate it with '{command}'"
            )
        _typed(block, CURVES_ARM, f"{where}: arms.{arm}", what, command)
        if "group_stats" in block:
            _typed(block["group_stats"], CURVES_GROUPS, f"{where}: arms.{arm}.group_stats", what, command)
        if set(block["curve_runs"]) != set(block["curves"]):
            raise UserError(
                f"{where}: arms.{arm}.curve_runs names other sets than arms.{arm}.curves; "
                f"regenerate it with '{command}'"
            )
    for name, block in data["differences"].items():
        here = f"{where}: differences.{name}"
        if not _is_condition(name):
            raise UserError(f"{here} is not a condition; regenerate it with '{command}'")
        _typed(
            block, {"arms": _map_of(_map_of(_nullable(_is_num))), "sha256": _is_sha256}, here, what, command
        )
    for seed, pair in data["pairs"].items():
        if not seed.isdigit():
            raise UserError(f"{where}: pairs.{seed} is not a seed; regenerate it with '{command}'")
        _typed(pair, CURVES_PAIR, f"{where}: pairs.{seed}", what, command)
    return data


CROSS_STACK = {"manifests": _is_int, "stacks": _list_of(_is_str), "replications": _list_of(_is_dict)}
CROSS_STACK_REPLICATION = {
    "condition": _is_condition,
    "arm": _one_of(*ARMS),
    "seed": _is_int,
    "runs": _list_of(_is_dict),
}
CROSS_STACK_RUN = {
    "run": _is_str,
    "root": _is_str,
    "stack": _is_str,
    "register": _is_bool,
    "auc": _nullable(_is_num),
    "final": _map_of(_nullable(_is_num)),
}


def read_cross_stack(path: str | Path) -> dict[str, Any]:
    """results/cross_stack.json (stats/cross_stack.py, docs/records.md section 3.3), typed: each
    replication's runs and, with two runs, their difference."""
    data = read_json(path)
    where, what, command = str(path), "cross-stack register", "paired-rollouts cross-stack"
    _typed(data, CROSS_STACK, where, what, command)
    for i, entry in enumerate(data["replications"]):
        here = f"{where}: replications[{i}]"
        _typed(entry, CROSS_STACK_REPLICATION, here, what, command)
        for j, run in enumerate(entry["runs"]):
            _typed(run, CROSS_STACK_RUN, f"{here}.runs[{j}]", what, command)
        if "difference" in entry:
            _typed(
                entry["difference"],
                {"auc": _nullable(_is_num), "final": _map_of(_nullable(_is_num))},
                f"{here}.difference",
                what,
                command,
            )
    return data


# ----------------------------------------------------------------------------------------------
# The registers that do not depend on the runs (compare reads them beside the run registers): the
# aligned-scalar bandit and the scripted reference agent.

BANDIT_DESIGNS = _map_of(_is_num)
BANDIT = {
    "setup": _is_dict,
    "contrast_variance": BANDIT_DESIGNS,
    "trace_var_mean_centered": BANDIT_DESIGNS,
    "trace_var_implemented": BANDIT_DESIGNS,
    "expected_update_implemented": BANDIT_DESIGNS,
    "expected_update_mean_centered": BANDIT_DESIGNS,
    "lhs": _is_num,
    "rhs": _is_num,
    "identity_residual": _is_num,
    "orthogonal": _list_of(_is_dict),
}


def read_bandit(path: str | Path) -> dict[str, Any]:
    """results/probe/bandit.json (probe/bandit.py, docs/records.md section 6.4), typed: each quantity
    for the independent and the paired design."""
    data = read_json(path)
    where, what, command = str(path), "bandit register", "paired-rollouts probe bandit"
    _typed(data, BANDIT, where, what, command)
    for key, check in BANDIT.items():
        if check is BANDIT_DESIGNS and set(data[key]) != {"independent", "paired"}:
            raise UserError(
                f"{where}: {key} has designs {sorted(data[key])}, expected independent and paired; "
                f"regenerate it with '{command}'"
            )
    return data


REFERENCE = {
    "pools": _is_dict,
    "schedule_indices": _list_of(_is_int),
    "conditions": _is_dict,
    "policies": _list_of(_is_str),
    "results": _is_dict,
}
REFERENCE_CELL = {
    "episodes": _is_int,
    "success": _is_num,
    "exposed_frac": _is_num,
    "outage_hit_frac": _is_num,
    "budget_exceeded_frac": _is_num,
    "mean_calls": _is_num,
}


def read_scripted_reference(path: str | Path) -> dict[str, Any]:
    """results/reference/scripted_reference.json (agents/reference.py, docs/simulator.md), typed:
    ``results[pool][condition][policy]`` is a cell of metrics (``{"episodes": 0}`` when empty)."""
    data = read_json(path)
    where, what, command = str(path), "scripted reference register", "paired-rollouts reference"
    _typed(data, REFERENCE, where, what, command)
    for pool, conditions in data["results"].items():
        _typed(conditions, {}, f"{where}: results.{pool}", what, command)
        for condition, policies in conditions.items():
            here = f"{where}: results.{pool}.{condition}"
            _typed(policies, {}, here, what, command)
            for policy, cell in policies.items():
                at = f"{here}.{policy}"
                _typed(cell, {"episodes": _is_int}, at, what, command)
                if cell["episodes"] > 0:
                    _typed(cell, REFERENCE_CELL, at, what, command)
    return data


VERIFICATION_FORMAT = "paired-rollouts-prereg-verification/1"
COVERED = {"path": _is_str, "sha256": _is_sha256, "record": _is_str}


def read_covered(path: str | Path) -> tuple[Verification, list[dict[str, Any]]]:
    """A verification report (``read_verification``) and the documents it covers with their verified
    bytes (``covered``: path, sha256, record), for the stages that apply amended rules."""
    verification = read_verification(path)
    data = read_json(path)
    where, what, command = str(path), "pre-registration verification", "paired-rollouts prereg verify"
    if data.get("format") != VERIFICATION_FORMAT:
        raise UserError(
            f"{where}: format is {data.get('format')!r}, not {VERIFICATION_FORMAT!r}; rerun '{command}'"
        )
    covered = _typed(data, {"covered": _list_of(_is_dict)}, where, what, command)["covered"]
    for i, entry in enumerate(covered):
        _typed(entry, COVERED, f"{where}: covered[{i}]", what, command)
    return verification, covered


SURROGATE_MARKER = {"step": _is_int, "files": _map_of(_is_sha256)}
SURROGATE_THETA = {
    "step": _is_int,
    "theta": _list_of(_is_num),
    "parameter_names": _list_of(_is_str),
    "adam": _is_dict,
}


def read_surrogate_checkpoint(folder: str | Path) -> dict[str, Any]:
    """RUN/checkpoints/stepNNNN/theta.json of a surrogate arm job (surrogate/run.py), typed and checked
    against its COMPLETE marker (same step, theta.json's sha256), one value per parameter name."""
    from paired_rollouts.io import sha256_file

    folder = Path(folder)
    what, command = "surrogate checkpoint", "paired-rollouts surrogate arm"
    marker = _typed(read_json(folder / "COMPLETE"), SURROGATE_MARKER, f"{folder}/COMPLETE", what, command)
    where = f"{folder}/theta.json"
    if marker["files"].get("theta.json") != sha256_file(where):
        raise UserError(f"{where}: does not match its COMPLETE marker; rerun the surrogate arm job")
    data = _typed(read_json(where), SURROGATE_THETA, where, what, command)
    if data["step"] != marker["step"] or len(data["theta"]) != len(data["parameter_names"]):
        raise UserError(
            f"{where}: step {data['step']} with {len(data['theta'])} values for "
            f"{len(data['parameter_names'])} parameter names (marker step {marker['step']}); rerun '{command}'"
        )
    return data


ZERO_SHOT_FORMAT = "paired-rollouts-zero-shot-calibration/1"
ZERO_SHOT = {
    "format": _one_of(ZERO_SHOT_FORMAT),
    "model": _is_str,
    "registered": _is_bool,
    "bands": _list_of(_is_dict),
    "status": _one_of("pass", "fail", "not_applicable"),
    "passes": _nullable(_is_bool),
}
ZERO_SHOT_BAND = {
    "name": _is_str,
    "target": _nullable(_is_dict),
    "achieved": _nullable(_is_num),
    "applies": _is_bool,
    "status": _one_of("pass", "fail", "not_applicable"),
}


def read_zero_shot(path: str | Path) -> dict[str, Any]:
    """results/<scale>/calibration/zero_shot.json (calibration/zero_shot.py, docs/prereg.md), typed: the
    register and each band (its target, what was achieved, whether it applies)."""
    data = read_json(path)
    where, what, command = str(path), "zero-shot calibration register", "paired-rollouts calibrate zero-shot"
    _typed(data, ZERO_SHOT, where, what, command)
    for i, band in enumerate(data["bands"]):
        _typed(band, ZERO_SHOT_BAND, f"{where}: bands[{i}]", what, command)
    return data


PROBE_CHECKPOINT = {"run": _is_str, "step": _is_int, "outcome": _is_dict, "transition": _is_dict}


def read_probe_checkpoint(path: str | Path) -> dict[str, Any]:
    """results/probe/TRAJECTORY/stepN.json (probe/scores.py ``probe checkpoint``), typed at the keys the
    trajectory's register is assembled from."""
    data = read_json(path)
    command = "paired-rollouts probe checkpoint"
    return _typed(data, PROBE_CHECKPOINT, str(path), "probe checkpoint", command)
