"""A probe checkpoint's evidence (per-group Gram matrices, rewards, weights, index lists, token counts,
the streamed running vectors' Gram) as one ``.npz``, and the recompute that reproduces the checkpoint's
T_ref and summaries from it with numpy alone (``paired-rollouts probe recompute``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.numeric import gram_matrix


def plain(obj: Any) -> Any:
    """numpy scalars/arrays -> JSON-native values (the register is written with json)."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def vector_gram(vectors: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    """The Gram matrix of the named running vectors (rows in the order of ``keys``)."""
    stack = np.stack([vectors[k] for k in keys])
    return gram_matrix(stack)


def _savez_atomic(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Arrays only (no pickles), written atomically."""
    import io as _io

    from paired_rollouts.io import atomic_write_bytes

    buffer = _io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def save_evidence(path: Path, evidence: dict[str, np.ndarray]) -> None:
    """One checkpoint's evidence (``StreamingProbe.evidence``) as one ``.npz``."""
    _savez_atomic(Path(path), evidence)


def _split(sizes: np.ndarray) -> list[slice]:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def _grams(flat: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    """Per-group Gram matrices from their concatenated row-major entries."""
    return [
        flat[block].reshape(int(n), int(n))
        for block, n in zip(_split(np.asarray(sizes) ** 2), sizes, strict=True)
    ]


def recompute_probe(evidence: dict[str, np.ndarray]) -> tuple[float, dict, dict]:
    """T_ref and the outcome and transition summaries from one checkpoint's evidence (numpy, no model).

    Everything is recomputed from the per-group Grams, successes/rewards, weights, index lists and token
    counts; only the Gram of the running vectors (cross-group products of score vectors, which streaming
    never keeps) is taken as stored."""
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        t_ref_from_tokens,
    )

    q, schedules, samples, resamples, rng_seed, prompts_per_step, num_generations = evidence[
        "params"
    ].tolist()
    t_ref = t_ref_from_tokens(evidence["token_counts"], int(prompts_per_step), int(num_generations))
    outcome = OutcomeProbe(q, t_ref)
    sizes = evidence["clean_sizes"]
    for gram, block, task_id in zip(
        _grams(evidence["clean_grams"], sizes),
        _split(sizes),
        evidence["clean_task_ids"].tolist(),
        strict=True,
    ):
        outcome.add_group(
            gram,
            [bool(x) for x in evidence["clean_success"][block]],
            evidence["clean_rho"][block].tolist(),
            task_id=task_id or None,
        )
    transition = TransitionProbe(int(schedules), int(samples), int(resamples), t_ref, int(rng_seed))
    sizes = evidence["diag_sizes"]
    for gram, block, task_id in zip(
        _grams(evidence["diag_grams"], sizes), _split(sizes), evidence["diag_task_ids"].tolist(), strict=True
    ):
        transition.add_task(
            gram,
            evidence["diag_rewards"][block].tolist(),
            evidence["diag_rho"][block].tolist(),
            task_id=task_id or None,
            schedule_seeds=[int(x) for x in evidence["diag_schedule_seeds"][block]],
        )
    return (
        t_ref,
        outcome.summary(scaled_gram(evidence["outcome_vector_gram"], OUTCOME_VECTOR_KEYS, t_ref)),
        transition.summary(scaled_gram(evidence["transition_vector_gram"], TRANSITION_VECTOR_KEYS, t_ref)),
    )


def scaled_gram(unit: np.ndarray, keys: tuple[str, ...], t_ref: float) -> np.ndarray:
    """The vectors' Gram at the real T_ref from the one folded with T_ref = 1 (implemented rows / T_ref)."""
    d = np.array([1.0 / t_ref if k.startswith("implemented") else 1.0 for k in keys])
    return unit * np.outer(d, d)


def max_difference(a: Any, b: Any, path: str = "") -> tuple[float, str]:
    """Largest absolute difference between two nested summaries (numbers compared, keys must agree)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return float("inf"), f"{path}: keys differ"
        worst = (0.0, "")
        for key in a:
            got = max_difference(a[key], b[key], f"{path}.{key}" if path else str(key))
            worst = max(worst, got, key=lambda x: x[0])
        return worst
    if isinstance(a, list | tuple | np.ndarray) and isinstance(b, list | tuple | np.ndarray):
        a, b = list(a), list(b)
        if len(a) != len(b):
            return float("inf"), f"{path}: lengths differ"
        worst = (0.0, "")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            worst = max(worst, max_difference(x, y, f"{path}[{i}]"), key=lambda t: t[0])
        return worst
    if isinstance(a, bool | str) or a is None or isinstance(b, bool | str) or b is None:
        return (0.0, "") if a == b else (float("inf"), f"{path}: {a!r} != {b!r}")
    if isinstance(a, int | float | np.number) and isinstance(b, int | float | np.number):
        x, y = float(a), float(b)
        if np.isnan(x) and np.isnan(y):
            return 0.0, ""
        return abs(x - y), path
    return (0.0, "") if a == b else (float("inf"), f"{path}: {a!r} != {b!r}")


def load_evidence(paths: list[Path]) -> dict[int, dict[str, np.ndarray]]:
    """{step: evidence arrays} from one ``.npz`` per checkpoint (or folders of them)."""
    files: list[Path] = []
    for path in map(Path, paths):
        files += sorted(path.glob("step*.npz")) if path.is_dir() else [path]
    out: dict[int, dict[str, np.ndarray]] = {}
    for path in files:
        if not path.is_file():
            raise UserError(
                f"{path}: probe evidence not found; rerun 'paired-rollouts probe checkpoint --evidence ...'"
            )
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {key: data[key] for key in data.files}
            step = int(arrays.pop("step"))
        except (ValueError, OSError, KeyError) as exc:
            raise UserError(f"{path}: not a probe evidence file ({exc})") from exc
        if step in out:
            raise UserError(f"{path}: evidence for step {step} given twice")
        out[step] = arrays
    return out


def recompute_register(
    register: dict[str, Any], evidence_paths: list[Path], tolerance: float = 1e-6
) -> list[dict]:
    """Per checkpoint: the largest difference between the register's T_ref and summaries and the recompute."""
    evidence = load_evidence(evidence_paths)
    rows = []
    for step, payload in sorted(register["checkpoints"].items(), key=lambda kv: int(kv[0])):
        if int(step) not in evidence:
            raise UserError(f"{' '.join(map(str, evidence_paths))}: no evidence for checkpoint step {step}")
        t_ref, outcome, transition = recompute_probe(evidence[int(step)])
        recomputed = plain({"t_ref": t_ref, "outcome": outcome, "transition": transition})
        stored = {
            "t_ref": payload.get("t_ref"),
            "outcome": payload["outcome"],
            "transition": payload["transition"],
        }
        diff, where = max_difference(stored, recomputed)
        rows.append({"step": int(step), "max_abs_difference": diff, "where": where, "ok": diff <= tolerance})
    return rows
