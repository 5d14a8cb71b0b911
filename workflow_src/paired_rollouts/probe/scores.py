"""Score vectors for the gradient probe (docs/analysis.md#probe-design) and the ``probe checkpoint`` driver.

Per rollout i: S_i = d/dtheta sum_t mask_it log pi(y_it | prefix) over every trainable LoRA coordinate,
with mask = completion_mask x tool_mask (tool results excluded, as in the loss). One forward and one
backward per rollout, through the trainer's own log-prob function (the loss forward). Scores are kept in
fp32, Gram matrices are formed in fp64. The coordinate set is fixed by the first backward (parameters that
received a gradient) and re-checked on every pass; a parameter fingerprint is taken before and after each
checkpoint's scoring and a cheap checksum on every pass, so scoring can never move the weights unnoticed.
The statistics (enumeration over grader flips, resampled transition designs) are the numpy functions of
``paired_rollouts.probe``.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.design import PAPER_CONDITIONS, parse_run
from paired_rollouts.errors import UserError


class ScoreEngine:
    """Differentiates a loaded checkpoint's log-likelihood of captured rollouts."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner
        self.trainer = runner.trainer
        self.model = self.trainer.model
        self.params = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        if not self.params:
            raise RuntimeError("no trainable (LoRA) parameters: load the adapter with is_trainable=True")
        self.coords: list[str] | None = None
        self.size = 0

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for name, param in self.params:
            digest.update(name.encode())
            digest.update(param.detach().float().cpu().numpy().tobytes())
        return digest.hexdigest()

    def checksum(self) -> float:
        import torch

        with torch.no_grad():
            return float(sum(p.detach().double().abs().sum() for _, p in self.params))

    def scores(self, output: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """(S: n x P fp32, masked token counts: n) for one rolled-out batch."""
        import torch

        model, trainer = self.model, self.trainer
        model.train()  # LoRA dropout is 0, so train mode only matters for checkpointing, as in the loss
        prompt_ids, prompt_mask = output["prompt_ids"], output["prompt_mask"]
        completion_ids, completion_mask = output["completion_ids"], output["completion_mask"]
        tool_mask = output.get("tool_mask")
        loss_mask = completion_mask if tool_mask is None else completion_mask * tool_mask
        n = completion_ids.size(0)
        out: np.ndarray | None = None
        counts = []
        before = self.checksum()
        for i in range(completion_ids.size(0)):
            p_keep = prompt_mask[i].bool()
            c_len = int(completion_mask[i].sum())
            ids = torch.cat([prompt_ids[i][p_keep], completion_ids[i][:c_len]]).unsqueeze(0)
            attention = torch.ones_like(ids)
            mask = loss_mask[i][:c_len].unsqueeze(0).to(torch.float32)
            model.zero_grad(set_to_none=True)
            logps = trainer.token_logps(model, ids, attention, c_len)
            (logps * mask).sum().backward()
            got = [n for n, p in self.params if p.grad is not None]
            if self.coords is None:
                self.coords = got
                self.size = sum(p.numel() for n, p in self.params if p.grad is not None)
            elif got != self.coords:
                raise RuntimeError("the set of LoRA parameters receiving a gradient changed between passes")
            flat = torch.cat(
                [p.grad.detach().reshape(-1).to(torch.float32) for n, p in self.params if p.grad is not None]
            )
            if out is None:
                out = np.empty((n, flat.numel()), dtype=np.float32)
            out[i] = flat.cpu().numpy()
            counts.append(float(mask.sum()))
        model.zero_grad(set_to_none=True)
        if self.checksum() != before:
            raise RuntimeError("LoRA parameters changed while scoring")
        return out, np.asarray(counts)


CHUNK = 1 << 20  # coordinates per fp64 block: products are exact-enough fp64 without an fp64 copy of S


def _gram(scores: np.ndarray) -> np.ndarray:
    """S S^T in fp64, over coordinate blocks (never an fp64 copy of the whole score matrix)."""
    n = scores.shape[0]
    out = np.zeros((n, n), dtype=np.float64)
    for b in range(0, scores.shape[1], CHUNK):
        block = scores[:, b : b + CHUNK].astype(np.float64)
        out += block @ block.T
    return out


def _fold(vector: np.ndarray, coeffs: np.ndarray, scores: np.ndarray) -> None:
    """vector += coeffs @ scores in fp64, block by block."""
    c = np.asarray(coeffs, dtype=np.float64)
    for b in range(0, scores.shape[1], CHUNK):
        vector[b : b + CHUNK] += c @ scores[:, b : b + CHUNK].astype(np.float64)


class StreamingProbe:
    """Both noise probes of one checkpoint, folding each group into the running vectors as it is scored.

    Only the running vectors (a few x P, fp64) and each group's small Gram are kept, so host memory does
    not grow with the number of groups (the score vectors of all 1,536 rollouts of a paper checkpoint
    would be ~207 GB). T_ref needs every rollout's token count, which is known only at the end; the
    implemented (SW) weights are A rho / T_ref, exactly proportional to 1 / T_ref, so the vectors are
    folded with T_ref = 1 and their implemented parts divided by T_ref at the end, and the per-group
    terms are recomputed from the kept Grams with the real T_ref (same order, same resampling seed).
    """

    def __init__(
        self, size: int, q: float, schedules: int, samples: int, resamples: int, rng_seed: int
    ) -> None:
        from paired_rollouts.probe import (
            OUTCOME_VECTOR_KEYS,
            TRANSITION_VECTOR_KEYS,
            OutcomeProbe,
            TransitionProbe,
        )

        self.size, self.q = size, q
        self.k, self.m, self.r, self.rng_seed = schedules, samples, resamples, rng_seed
        self.unit_outcome = OutcomeProbe(q, 1.0)
        self.unit_transition = TransitionProbe(schedules, samples, resamples, 1.0, rng_seed)
        self.outcome_vectors = {k: np.zeros(size, dtype=np.float64) for k in OUTCOME_VECTOR_KEYS}
        self.transition_vectors = {k: np.zeros(size, dtype=np.float64) for k in TRANSITION_VECTOR_KEYS}
        self.clean: list[tuple] = []
        self.diag: list[tuple] = []
        self.counts: list[np.ndarray] = []
        self.rho_zero = 0
        self.diag_rollouts = 0

    def add_clean(
        self, scores: np.ndarray, success: list[bool], rho: list[float], counts: np.ndarray, task_id: Any
    ) -> None:
        gram = _gram(scores)
        for key, c in self.unit_outcome.add_group(gram, success, rho, task_id=task_id).items():
            _fold(self.outcome_vectors[key], c, scores)
        self.clean.append((gram, list(success), list(rho), task_id))
        self.counts.append(np.asarray(counts, dtype=float))

    def add_diagnostic(
        self,
        scores: np.ndarray,
        rewards: list[float],
        rho: np.ndarray,
        seeds: list[int],
        counts: np.ndarray,
        task_id: Any,
    ) -> None:
        from paired_rollouts.probe import schedule_major_order

        order = schedule_major_order(seeds, self.k, self.m)
        gram = _gram(scores)[np.ix_(order, order)]
        rho_o = np.asarray(rho, dtype=float)[order]
        rewards_o = [rewards[i] for i in order]
        seeds_o = [seeds[i] for i in order]
        coeffs = self.unit_transition.add_task(
            gram, rewards_o, rho_o.tolist(), task_id=task_id, schedule_seeds=seeds_o
        )
        for key, c in coeffs.items():
            back = np.zeros(len(order), dtype=np.float64)
            back[order] = c  # coefficients on the schedule-major axis -> the rollouts' own order
            _fold(self.transition_vectors[key], back, scores)
        self.diag.append((gram, rewards_o, rho_o.tolist(), task_id, seeds_o))
        self.counts.append(np.asarray(counts, dtype=float))
        self.rho_zero += int((rho_o == 0).sum())
        self.diag_rollouts += len(order)

    def summaries(self, prompts_per_step: int, num_generations: int) -> tuple[float, dict, dict]:
        from paired_rollouts.probe import (
            OUTCOME_VECTOR_KEYS,
            TRANSITION_VECTOR_KEYS,
            OutcomeProbe,
            TransitionProbe,
            t_ref_from_tokens,
        )

        t_ref = t_ref_from_tokens(np.concatenate(self.counts), prompts_per_step, num_generations)
        outcome = OutcomeProbe(self.q, t_ref)
        for gram, success, rho, task_id in self.clean:
            outcome.add_group(gram, success, rho, task_id=task_id)
        transition = TransitionProbe(self.k, self.m, self.r, t_ref, self.rng_seed)
        for gram, rewards, rho, task_id, seeds in self.diag:
            transition.add_task(gram, rewards, rho, task_id=task_id, schedule_seeds=seeds)

        return (
            t_ref,
            outcome.summary(
                _scaled_gram(
                    _vector_gram(self.outcome_vectors, OUTCOME_VECTOR_KEYS), OUTCOME_VECTOR_KEYS, t_ref
                )
            ),
            transition.summary(
                _scaled_gram(
                    _vector_gram(self.transition_vectors, TRANSITION_VECTOR_KEYS),
                    TRANSITION_VECTOR_KEYS,
                    t_ref,
                )
            ),
        )

    def evidence(self, prompts_per_step: int, num_generations: int) -> dict[str, np.ndarray]:
        """What ``recompute_probe`` needs (docs/records.md 6.3.1): per-group Grams (fp64, schedule-major
        for diagnostic tasks), successes/rewards, IS weights, index lists, token counts, the design, and
        the Gram of the running vectors folded with T_ref = 1. Small: no score vector is kept."""
        from paired_rollouts.probe import OUTCOME_VECTOR_KEYS, TRANSITION_VECTOR_KEYS

        def flat(grams: list[np.ndarray]) -> np.ndarray:
            return np.concatenate([g.ravel() for g in grams]) if grams else np.zeros(0)

        return {
            "clean_grams": flat([g[0] for g in self.clean]),
            "clean_sizes": np.array([len(g[1]) for g in self.clean], dtype=np.int64),
            "clean_success": np.array([bool(x) for g in self.clean for x in g[1]], dtype=bool),
            "clean_rho": np.array([float(x) for g in self.clean for x in g[2]], dtype=np.float64),
            "clean_task_ids": np.array(["" if g[3] is None else str(g[3]) for g in self.clean]),
            "diag_grams": flat([g[0] for g in self.diag]),
            "diag_sizes": np.array([len(g[1]) for g in self.diag], dtype=np.int64),
            "diag_rewards": np.array([float(x) for g in self.diag for x in g[1]], dtype=np.float64),
            "diag_rho": np.array([float(x) for g in self.diag for x in g[2]], dtype=np.float64),
            "diag_task_ids": np.array(["" if g[3] is None else str(g[3]) for g in self.diag]),
            "diag_schedule_seeds": np.array([int(x) for g in self.diag for x in g[4]], dtype=np.int64),
            "token_counts": np.concatenate(self.counts) if self.counts else np.zeros(0),
            "outcome_vector_gram": _vector_gram(self.outcome_vectors, OUTCOME_VECTOR_KEYS),
            "transition_vector_gram": _vector_gram(self.transition_vectors, TRANSITION_VECTOR_KEYS),
            "params": np.array(
                [self.q, self.k, self.m, self.r, self.rng_seed, prompts_per_step, num_generations],
                dtype=np.float64,
            ),
        }


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
        outcome.summary(_scaled_gram(evidence["outcome_vector_gram"], OUTCOME_VECTOR_KEYS, t_ref)),
        transition.summary(_scaled_gram(evidence["transition_vector_gram"], TRANSITION_VECTOR_KEYS, t_ref)),
    )


def _scaled_gram(unit: np.ndarray, keys: tuple[str, ...], t_ref: float) -> np.ndarray:
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


def probe_checkpoint(
    runner: Any,
    *,
    run: str,
    condition: str,
    seed: int,
    step: int,
    tasks_dir: str,
    settings: dict[str, Any],
    evidence_out: dict | None = None,
) -> dict[str, Any]:
    """Capture clean and diagnostic rollouts at one checkpoint, score them, summarise both noise kinds.

    Each group (a clean task's G rollouts, a diagnostic task's K x M) is rolled out, scored and folded
    into ``StreamingProbe`` before the next one: peak memory is one group's scores plus the vectors.
    ``evidence_out`` (if given) receives the checkpoint's evidence for ``probe recompute``."""
    from paired_rollouts.noise.seeds import derive_seed
    from paired_rollouts.probe import probe_rng_seed
    from paired_rollouts.probe.groups import probe_groups
    from paired_rollouts.training import chat

    engine = ScoreEngine(runner)
    start_print = engine.fingerprint()
    began = time.perf_counter()
    K, M = settings["probe_schedules"], settings["probe_samples"]
    clean_groups, diag_groups = probe_groups(
        tasks_dir, settings, condition, seed, prompt=chat.prompt_messages
    )

    def capture(
        rows: list[dict], phase: str, tag: str
    ) -> tuple[list[dict], np.ndarray, np.ndarray, np.ndarray]:
        """One group: its records, scores (n x P fp32, one buffer), masked token counts and IS ratios."""
        records, counts, rho = [], [], []
        scores: np.ndarray | None = None
        batch = settings["eval_batch"]
        for b in range(0, len(rows), batch):
            chunk = rows[b : b + batch]
            sampling_seed = derive_seed("probe", seed, step, tag, b) % (2**31)
            recs, output = runner.rollout(chunk, phase, sampling_seed)
            s, c = engine.scores(output)
            if scores is None:
                scores = np.empty((len(rows), s.shape[1]), dtype=np.float32)
            scores[b : b + len(chunk)] = s
            del s
            ratio = output.get("importance_sampling_ratio")
            rho += [1.0] * len(chunk) if ratio is None else _sequence_ratio(ratio, len(chunk))
            records += recs
            counts.append(c)
        return records, scores, np.concatenate(counts), np.asarray(rho, dtype=float)

    stream: StreamingProbe | None = None

    def started() -> StreamingProbe:
        nonlocal stream
        if stream is None:
            stream = StreamingProbe(
                engine.size,
                settings["probe_q"],
                K,
                M,
                settings["probe_resamples"],
                probe_rng_seed(settings["probe_seed"], step),
            )
        return stream

    n_clean = 0
    for group in clean_groups:
        records, s, c, rho = capture(group.rows, f"probe_clean:step{step}", group.tag)
        if any(r["exposed"] for r in records):
            raise RuntimeError("a clean probe rollout was exposed to a fault")
        started().add_clean(
            s, [bool(r["true_success"]) for r in records], rho.tolist(), c, group.task["task_id"]
        )
        n_clean += len(records)
        del s
    for group in diag_groups:
        records, s, c, rho = capture(group.rows, f"probe_diag:step{step}", group.tag)
        started().add_diagnostic(
            s,
            [float(r["true_success"]) for r in records],
            rho,
            [r["schedule_seed"] for r in records],
            c,
            group.task["task_id"],
        )
        del s
    stream = started()
    t_ref, outcome_summary, transition_summary = stream.summaries(
        settings["prompts_per_step"], settings["num_generations"]
    )
    if evidence_out is not None:
        evidence_out.update(stream.evidence(settings["prompts_per_step"], settings["num_generations"]))

    end_print = engine.fingerprint()
    if end_print != start_print:
        raise RuntimeError("LoRA weights changed during the probe")
    return {
        "t_ref": t_ref,
        "P": engine.size,
        "coordinate_names_sha256": hashlib.sha256("\n".join(engine.coords or []).encode()).hexdigest(),
        "lora_fingerprint": start_print,
        "counts": {
            "clean_groups": len(stream.clean),
            "clean_rollouts": n_clean,
            "diagnostic_tasks": len(stream.diag),
            "diagnostic_rollouts": stream.diag_rollouts,
            "groups_per_design": transition_summary.get("groups_per_design"),
            "rho_zero_fraction": stream.rho_zero / max(1, stream.diag_rollouts),
        },
        "seconds": round(time.perf_counter() - began, 3),
        "outcome": outcome_summary,
        "transition": transition_summary,
    }


def _sequence_ratio(ratio: Any, n: int) -> list[float]:
    """TRL's sequence-level IS ratio per rollout (its first token's entry; sequence modes broadcast it)."""
    return ratio.detach().float().cpu().reshape(n, -1)[:, 0].tolist()


def _plain(obj: Any) -> Any:
    """numpy scalars/arrays -> JSON-native values (the register is written with json)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def _vector_gram(vectors: dict[str, np.ndarray], keys: tuple[str, ...]) -> np.ndarray:
    stack = np.stack([vectors[k] for k in keys])
    return stack @ stack.T


def probe_checkpoint_cli(args: Any) -> int:
    """``paired-rollouts probe checkpoint``: one checkpoint in its own process (one generation engine)."""
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.settings import resolve

    settings = resolve(load_settings(args.settings))
    run_dir = Path(args.run_dir)
    run = parse_run(run_dir.name, PAPER_CONDITIONS)
    condition, seed = run.condition, run.seed
    folder = ckpt.step_dir(run_dir, args.step)
    if not folder.is_dir():
        raise UserError(f"{folder}: checkpoint not found; train the run to step {args.step} first")
    runner = PolicyRunner(str(args.model_dir), folder, settings, str(args.tasks_dir), seed, trainable=True)
    try:
        evidence: dict[str, np.ndarray] = {}
        result = probe_checkpoint(
            runner,
            run=run_dir.name,
            condition=condition,
            seed=seed,
            step=args.step,
            tasks_dir=str(args.tasks_dir),
            settings=settings,
            evidence_out=evidence,
        )
    finally:
        runner.close()
    if args.evidence:
        save_evidence(Path(args.evidence), dict(evidence, step=np.array(args.step, dtype=np.int64)))
    atomic_write_json(args.out, _plain(dict(result, run=run_dir.name, step=args.step)))
    print(
        f"probe {run_dir.name} step {args.step}: P={result['P']} "
        f"outcome ratio {result['outcome']['mean_centered']['ratio_paired_over_independent']}"
    )
    return 0


def assemble_cli(args: Any) -> int:
    """``paired-rollouts probe assemble``: the trajectory's register from its per-checkpoint files."""
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.probe import build_probe_register
    from paired_rollouts.records import read_probe_checkpoint
    from paired_rollouts.training.settings import resolve

    settings = resolve(load_settings(args.settings))
    checkpoints: dict[int, dict[str, Any]] = {}
    for path in args.inputs:
        data = dict(read_probe_checkpoint(path))
        if data["run"] != args.run:
            raise UserError(
                f"{path}: a probe checkpoint of run {data['run']!r}, not {args.run!r}; "
                "rerun 'paired-rollouts probe checkpoint' for this trajectory"
            )
        step = int(data.pop("step"))
        data.pop("run")
        if step in checkpoints:
            raise UserError(f"{path}: step {step} given twice")
        checkpoints[step] = data
    register = build_probe_register(
        args.trajectory,
        args.run,
        checkpoints,
        settings={k: settings[k] for k in settings if k.startswith("probe_") or k == "task_filter"},
    )
    atomic_write_json(args.out, _plain(register))
    return 0


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
        recomputed = _plain({"t_ref": t_ref, "outcome": outcome, "transition": transition})
        stored = {
            "t_ref": payload.get("t_ref"),
            "outcome": payload["outcome"],
            "transition": payload["transition"],
        }
        diff, where = max_difference(stored, recomputed)
        rows.append({"step": int(step), "max_abs_difference": diff, "where": where, "ok": diff <= tolerance})
    return rows
