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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.design import parse_conditions, parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.probe.evidence import plain, save_evidence, scaled_gram, vector_gram
from paired_rollouts.settings import Settings


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

    def scores(
        self, output: dict[str, Any], into: Callable[[int], np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(S: n x P fp32, masked token counts: n) for one rolled-out batch. ``into(P)``: the n x P array to
        fill (a block of the group's buffer, so each score vector is held once in host memory); default a
        new array."""
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
                width = flat.numel()
                out = into(width) if into is not None else np.empty((n, width), dtype=np.float32)
            out[i] = flat.cpu().numpy()
            counts.append(float(mask.sum()))
        model.zero_grad(set_to_none=True)
        if self.checksum() != before:
            raise RuntimeError("LoRA parameters changed while scoring")
        return out, np.asarray(counts)


CHUNK = 1 << 20  # coordinates per fp64 block: products are exact-enough fp64 without an fp64 copy of S
# The LLM's score rows (millions of LoRA coordinates) meet torch's matrix product here, not numeric.py's
# fixed-order sums (five times slower on these blocks) nor numpy's BLAS (its kernels follow the CPU): on
# the CPU the probe's process has pinned torch's kernels (training/kernels.py), so the Gram has the same
# bits on any x86-64 machine, like the score rows. The surrogate's probe runs in surrogate/probe.py.


def _gram(scores: np.ndarray) -> np.ndarray:
    """S S^T in fp64, over coordinate blocks (never an fp64 copy of the whole score matrix)."""
    import torch

    n = scores.shape[0]
    out = torch.zeros((n, n), dtype=torch.float64)
    for b in range(0, scores.shape[1], CHUNK):
        block = torch.from_numpy(scores[:, b : b + CHUNK]).to(torch.float64)
        out += block @ block.T
    return out.numpy()


def _fold(vector: np.ndarray, coeffs: np.ndarray, scores: np.ndarray) -> None:
    """vector += coeffs @ scores in fp64, block by block."""
    import torch

    c = torch.from_numpy(np.asarray(coeffs, dtype=np.float64))
    for b in range(0, scores.shape[1], CHUNK):
        block = torch.from_numpy(scores[:, b : b + CHUNK]).to(torch.float64)
        vector[b : b + CHUNK] += (c @ block).numpy()


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
                scaled_gram(
                    vector_gram(self.outcome_vectors, OUTCOME_VECTOR_KEYS), OUTCOME_VECTOR_KEYS, t_ref
                )
            ),
            transition.summary(
                scaled_gram(
                    vector_gram(self.transition_vectors, TRANSITION_VECTOR_KEYS),
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
            "outcome_vector_gram": vector_gram(self.outcome_vectors, OUTCOME_VECTOR_KEYS),
            "transition_vector_gram": vector_gram(self.transition_vectors, TRANSITION_VECTOR_KEYS),
            "params": np.array(
                [self.q, self.k, self.m, self.r, self.rng_seed, prompts_per_step, num_generations],
                dtype=np.float64,
            ),
        }


def probe_checkpoint(
    runner: Any,
    *,
    run: str,
    condition: str,
    seed: int,
    step: int,
    tasks_dir: str,
    settings: Settings,
    evidence_out: dict | None = None,
) -> dict[str, Any]:
    """Capture clean and diagnostic rollouts at one checkpoint, score them, summarise both noise kinds.

    Each group (a clean task's G rollouts, a diagnostic task's K x M) is rolled out, scored and folded
    into ``StreamingProbe`` before the next one: peak memory is one group's scores plus the vectors.
    ``evidence_out`` (if given) receives the checkpoint's evidence for ``probe recompute``."""
    from paired_rollouts.probe import probe_rng_seed
    from paired_rollouts.probe.groups import probe_groups
    from paired_rollouts.training import chat

    engine = ScoreEngine(runner)
    start_print = engine.fingerprint()
    began = time.perf_counter()
    probe, training = settings.probe, settings.training
    clean_groups, diag_groups = probe_groups(
        tasks_dir, settings, condition, seed, prompt=chat.prompt_messages
    )

    def capture(
        rows: list[dict], phase: str, tag: str
    ) -> tuple[list[dict], np.ndarray, np.ndarray, np.ndarray]:
        return _capture(runner, engine, rows, phase, (seed, step, tag), settings.evaluation.eval_batch)

    stream: StreamingProbe | None = None

    def started() -> StreamingProbe:
        nonlocal stream
        if stream is None:  # the vectors' size is known after the first scores
            stream = StreamingProbe(
                engine.size,
                probe.q,
                probe.schedules,
                probe.samples,
                probe.resamples,
                probe_rng_seed(probe.seed, step),
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
        training.prompts_per_step, training.num_generations
    )
    if evidence_out is not None:
        evidence_out.update(stream.evidence(training.prompts_per_step, training.num_generations))

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


def _capture(
    runner: Any, engine: ScoreEngine, rows: list[dict], phase: str, key: tuple, batch: int
) -> tuple[list[dict], np.ndarray, np.ndarray, np.ndarray]:
    """One group rolled out in batches of ``batch`` (each batch's sampling seed from ``key``, the run seed,
    step and group tag, and its offset): its records, scores (n x P fp32, one buffer: each batch's scores
    are written into it, never held twice), masked token counts and IS ratios."""
    from paired_rollouts.noise.seeds import derive_seed

    records, counts, rho = [], [], []
    scores: np.ndarray | None = None
    for b in range(0, len(rows), batch):
        chunk = rows[b : b + batch]
        recs, output = runner.rollout(chunk, phase, derive_seed("probe", *key, b) % (2**31))

        def block(width: int, b: int = b, n: int = len(chunk)) -> np.ndarray:
            nonlocal scores
            if scores is None:
                scores = np.empty((len(rows), width), dtype=np.float32)
            return scores[b : b + n]

        _, c = engine.scores(output, into=block)
        ratio = output.get("importance_sampling_ratio")
        rho += [1.0] * len(chunk) if ratio is None else _sequence_ratio(ratio, len(chunk))
        records += recs
        counts.append(c)
    return records, scores, np.concatenate(counts), np.asarray(rho, dtype=float)


def _sequence_ratio(ratio: Any, n: int) -> list[float]:
    """TRL's sequence-level IS ratio per rollout (its first token's entry; sequence modes broadcast it)."""
    return ratio.detach().float().cpu().reshape(n, -1)[:, 0].tolist()


def probe_checkpoint_cli(args: Any) -> int:
    """``paired-rollouts probe checkpoint``: one checkpoint in its own process (one generation engine)."""
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.training import checkpoints as ckpt

    settings = Settings.parse(load_settings(args.settings))
    ident = parse_run(args.run, parse_conditions(args.conditions))
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"--run-dir {run_dir}: no such run folder; give results/runs/{args.run}")
    if run_dir.name != args.run:
        raise UserError(
            f"--run {args.run} names the schedules, but --run-dir {run_dir} holds the checkpoints of "
            f"{run_dir.name}; give the folder of {args.run} (or --run {run_dir.name})"
        )
    folder = ckpt.step_dir(run_dir, args.step)
    if not folder.is_dir():
        raise UserError(f"{folder}: checkpoint not found; train the run to step {args.step} first")
    runner = PolicyRunner(
        str(args.model_dir), folder, settings, str(args.tasks_dir), ident.seed, trainable=True
    )
    try:
        evidence: dict[str, np.ndarray] = {}
        result = probe_checkpoint(
            runner,
            run=args.run,
            condition=ident.condition,
            seed=ident.seed,
            step=args.step,
            tasks_dir=str(args.tasks_dir),
            settings=settings,
            evidence_out=evidence,
        )
    finally:
        runner.close()
    if args.evidence:
        save_evidence(Path(args.evidence), dict(evidence, step=np.array(args.step, dtype=np.int64)))
    atomic_write_json(args.out, plain(dict(result, run=args.run, step=args.step)))
    print(
        f"probe {args.run} step {args.step}: P={result['P']} "
        f"outcome ratio {result['outcome']['mean_centered']['ratio_paired_over_independent']}"
    )
    return 0


def assemble_cli(args: Any) -> int:
    """``paired-rollouts probe assemble``: the trajectory's register from its per-checkpoint files."""
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.probe import build_probe_register
    from paired_rollouts.records import read_probe_checkpoint

    settings = Settings.parse(load_settings(args.settings))
    checkpoints: dict[int, dict[str, Any]] = {}
    for path in args.inputs:
        checkpoint = read_probe_checkpoint(path)
        if checkpoint.run != args.run:
            raise UserError(
                f"{path}: a probe checkpoint of run {checkpoint.run!r}, not {args.run!r}; "
                "rerun 'paired-rollouts probe checkpoint' for this trajectory"
            )
        if checkpoint.step in checkpoints:
            raise UserError(f"{path}: step {checkpoint.step} given twice")
        checkpoints[checkpoint.step] = checkpoint.summary
    register = build_probe_register(
        args.trajectory,
        args.run,
        checkpoints,
        settings=settings.manifest_dict(("probe",)),
    )
    atomic_write_json(args.out, plain(register))
    return 0
