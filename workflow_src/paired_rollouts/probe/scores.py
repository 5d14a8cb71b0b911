"""Score vectors for the gradient probe (docs/analysis.md#probe-design) and the ``probe run`` driver.

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
        rows, counts = [], []
        before = self.checksum()
        for i in range(completion_ids.size(0)):
            p_keep = prompt_mask[i].bool()
            c_len = int(completion_mask[i].sum())
            ids = torch.cat([prompt_ids[i][p_keep], completion_ids[i][:c_len]]).unsqueeze(0)
            attention = torch.ones_like(ids)
            mask = loss_mask[i][:c_len].unsqueeze(0).to(torch.float32)
            model.zero_grad(set_to_none=True)
            logps, _, _ = trainer._get_per_token_logps_and_entropies(model, ids, attention, c_len, batch_size=1)
            (logps * mask).sum().backward()
            got = [n for n, p in self.params if p.grad is not None]
            if self.coords is None:
                self.coords = got
                self.size = sum(p.numel() for n, p in self.params if p.grad is not None)
            elif got != self.coords:
                raise RuntimeError("the set of LoRA parameters receiving a gradient changed between passes")
            flat = torch.cat([p.grad.detach().reshape(-1).to(torch.float32) for n, p in self.params
                              if p.grad is not None])
            rows.append(flat.cpu().numpy())
            counts.append(float(mask.sum()))
        model.zero_grad(set_to_none=True)
        if self.checksum() != before:
            raise RuntimeError("LoRA parameters changed while scoring")
        return np.stack(rows).astype(np.float32), np.asarray(counts)


def _gram(scores: np.ndarray) -> np.ndarray:
    s = scores.astype(np.float64)
    return s @ s.T


def summarise_probe(clean_groups: list, diag_groups: list, *, q: float, t_ref: float, schedules: int,
                    samples: int, resamples: int, rng_seed: int) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """Outcome and transition summaries from score vectors, and the evidence that reproduces them.

    ``clean_groups``: (task_id, scores n x P, successes, rho) per clean group; ``diag_groups``: (task_id,
    scores, rewards, rho, schedule_seeds) per diagnostic task. The summaries depend on the scores only
    through Gram matrices, so the evidence (the fp64 Gram of all clean rollouts and of all diagnostic
    rollouts in schedule-major order, the rewards, weights and index lists) lets ``recompute_probe``
    reproduce them without a model or a GPU."""
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        schedule_major_order,
    )

    outcome = OutcomeProbe(q, t_ref)
    size = clean_groups[0][1].shape[1] if clean_groups else diag_groups[0][1].shape[1]
    vectors = {k: np.zeros(size, dtype=np.float64) for k in OUTCOME_VECTOR_KEYS}
    for task_id, scores, success, rho in clean_groups:
        coeffs = outcome.add_group(_gram(scores), list(success), np.asarray(rho, dtype=float).tolist(),
                                   task_id=task_id)
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ scores.astype(np.float64)
    outcome_summary = outcome.summary(_vector_gram(vectors, OUTCOME_VECTOR_KEYS))

    transition = TransitionProbe(schedules, samples, resamples, t_ref, rng_seed)
    vectors = {k: np.zeros(size, dtype=np.float64) for k in TRANSITION_VECTOR_KEYS}
    ordered_scores, rewards_all, rho_all, seeds_all, diag_ids, diag_sizes = [], [], [], [], [], []
    for task_id, scores, rewards, rho, seeds in diag_groups:
        order = schedule_major_order(list(seeds), schedules, samples)
        s_ord, rho_ord = scores[order], np.asarray(rho, dtype=float)[order]
        r_ord = [float(rewards[i]) for i in order]
        seeds_ord = [int(seeds[i]) for i in order]
        coeffs = transition.add_task(_gram(s_ord), r_ord, rho_ord.tolist(), task_id=task_id,
                                     schedule_seeds=seeds_ord)
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ s_ord.astype(np.float64)
        ordered_scores.append(s_ord)
        rewards_all += r_ord
        rho_all += rho_ord.tolist()
        seeds_all += seeds_ord
        diag_ids.append(task_id)
        diag_sizes.append(len(order))
    transition_summary = transition.summary(_vector_gram(vectors, TRANSITION_VECTOR_KEYS))
    clean_scores = [g[1] for g in clean_groups]
    evidence = {
        "gram_clean": _gram(np.concatenate(clean_scores)) if clean_scores else np.zeros((0, 0)),
        "clean_success": np.array([bool(x) for g in clean_groups for x in g[2]]),
        "clean_rho": np.array([float(x) for g in clean_groups for x in np.asarray(g[3], dtype=float)]),
        "clean_sizes": np.array([len(g[2]) for g in clean_groups], dtype=np.int64),
        "clean_task_ids": np.array([str(g[0]) for g in clean_groups]),
        "gram_diag": _gram(np.concatenate(ordered_scores)) if ordered_scores else np.zeros((0, 0)),
        "diag_rewards": np.array(rewards_all, dtype=np.float64),
        "diag_rho": np.array(rho_all, dtype=np.float64),
        "diag_schedule_seeds": np.array(seeds_all, dtype=np.int64),
        "diag_sizes": np.array(diag_sizes, dtype=np.int64),
        "diag_task_ids": np.array([str(t) for t in diag_ids]),
        "params": np.array([q, t_ref, schedules, samples, resamples, rng_seed], dtype=np.float64),
    }
    return outcome_summary, transition_summary, evidence


def save_evidence(path: Path, by_step: dict[int, dict[str, np.ndarray]]) -> None:
    """One ``.npz`` per trajectory (arrays only, no pickles; keys ``step{N}.{name}``), written atomically."""
    import io as _io

    from paired_rollouts.io import atomic_write_bytes

    arrays = {f"step{int(step)}.{name}": value for step, ev in by_step.items() for name, value in ev.items()}
    buffer = _io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def _split(sizes: np.ndarray) -> list[slice]:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [slice(int(a), int(b)) for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def recompute_probe(evidence: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """The outcome and transition summaries from the evidence alone (numpy, no model): every vector
    Gram entry is sum_g sum_h c_g^k . Gram[g, h] . c_h^l over the stored full Gram matrix."""
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
    )

    q, t_ref, schedules, samples, resamples, rng_seed = evidence["params"].tolist()
    outcome = OutcomeProbe(q, t_ref)
    gram = evidence["gram_clean"]
    blocks = _split(evidence["clean_sizes"])
    coeff = {k: np.zeros(gram.shape[0]) for k in OUTCOME_VECTOR_KEYS}
    for block, task_id in zip(blocks, evidence["clean_task_ids"].tolist(), strict=True):
        c = outcome.add_group(gram[block, block], [bool(x) for x in evidence["clean_success"][block]],
                              evidence["clean_rho"][block].tolist(), task_id=task_id)
        for key in OUTCOME_VECTOR_KEYS:
            coeff[key][block] = np.asarray(c[key], dtype=np.float64)
    c_mat = np.stack([coeff[k] for k in OUTCOME_VECTOR_KEYS])
    outcome_summary = outcome.summary(c_mat @ gram @ c_mat.T)

    transition = TransitionProbe(int(schedules), int(samples), int(resamples), t_ref, int(rng_seed))
    gram = evidence["gram_diag"]
    coeff = {k: np.zeros(gram.shape[0]) for k in TRANSITION_VECTOR_KEYS}
    for block, task_id in zip(_split(evidence["diag_sizes"]), evidence["diag_task_ids"].tolist(), strict=True):
        c = transition.add_task(gram[block, block], evidence["diag_rewards"][block].tolist(),
                                evidence["diag_rho"][block].tolist(), task_id=task_id,
                                schedule_seeds=[int(x) for x in evidence["diag_schedule_seeds"][block]])
        for key in TRANSITION_VECTOR_KEYS:
            coeff[key][block] = np.asarray(c[key], dtype=np.float64)
    c_mat = np.stack([coeff[k] for k in TRANSITION_VECTOR_KEYS])
    transition_summary = transition.summary(c_mat @ gram @ c_mat.T)
    return outcome_summary, transition_summary


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


def probe_checkpoint(runner: Any, *, run: str, condition: str, seed: int, step: int, tasks_dir: str,
                     settings: dict[str, Any], evidence_out: dict | None = None) -> dict[str, Any]:
    """Capture clean and diagnostic rollouts at one checkpoint, score them, summarise both noise kinds."""
    from paired_rollouts.backoffice.tasks import budget_for, load_pool
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.seeds import derive_seed, diagnostic_seed, eval_schedule_seed
    from paired_rollouts.probe import probe_rng_seed, t_ref_from_tokens
    from paired_rollouts.training import chat
    from paired_rollouts.training.settings import filter_tasks

    engine = ScoreEngine(runner)
    start_print = engine.fingerprint()
    began = time.perf_counter()
    G, K, M = settings["probe_clean_rollouts"], settings["probe_schedules"], settings["probe_samples"]
    clean_tasks = filter_tasks(load_pool(Path(tasks_dir) / "validation.jsonl"),
                               settings["task_filter"])[: settings["probe_clean_tasks"]]
    diag_tasks = diagnostic_tasks(tasks_dir, settings, settings["probe_diag_tasks"])
    clean_noise = NoiseConfig.clean().to_json()
    diag_noise = NoiseConfig.transition(settings["probe_p"]).to_json()

    def rows_for(task: dict, noise: str, seeds: list[int]) -> list[dict]:
        return [{"prompt": chat.prompt_messages(task), "task_id": task["task_id"], "schedule_seed": s,
                 "noise": noise, "condition": condition, "budget": budget_for(task), "row_index": j}
                for j, s in enumerate(seeds)]

    def capture(rows: list[dict], phase: str, tag: str) -> tuple[list[dict], np.ndarray, np.ndarray, np.ndarray]:
        records, scores, counts, rho = [], [], [], []
        batch = settings["eval_batch"]
        for b in range(0, len(rows), batch):
            chunk = rows[b : b + batch]
            sampling_seed = derive_seed("probe", seed, step, tag, b) % (2**31)
            recs, output = runner.rollout(chunk, phase, sampling_seed)
            s, c = engine.scores(output)
            ratio = output.get("importance_sampling_ratio")
            rho += [1.0] * len(chunk) if ratio is None else ratio.reshape(len(chunk), -1)[:, 0].tolist()
            records += recs
            scores.append(s)
            counts.append(c)
        return records, np.concatenate(scores), np.concatenate(counts), np.asarray(rho)

    clean = []
    for task in clean_tasks:
        seeds = [eval_schedule_seed(task["task_id"], 1)] * G
        clean.append(capture(rows_for(task, clean_noise, seeds), f"probe_clean:step{step}", f"clean-{task['task_id']}"))
    diag = []
    for task in diag_tasks:
        seeds = [diagnostic_seed(seed, task["task_id"], k) for k in range(K) for _ in range(M)]
        diag.append(capture(rows_for(task, diag_noise, seeds), f"probe_diag:step{step}", f"diag-{task['task_id']}"))
    for records, *_ in clean:
        if any(r["exposed"] for r in records):
            raise RuntimeError("a clean probe rollout was exposed to a fault")

    all_counts = np.concatenate([c for _, _, c, _ in clean + diag])
    t_ref = t_ref_from_tokens(all_counts, settings["prompts_per_step"], settings["num_generations"])
    clean_groups = [(task["task_id"], s, [bool(r["true_success"]) for r in records], rho)
                    for (records, s, _, rho), task in zip(clean, clean_tasks, strict=True)]
    diag_groups = [(task["task_id"], s, [float(r["true_success"]) for r in records], rho,
                    [r["schedule_seed"] for r in records])
                   for (records, s, _, rho), task in zip(diag, diag_tasks, strict=True)]
    outcome_summary, transition_summary, evidence = summarise_probe(
        clean_groups, diag_groups, q=settings["probe_q"], t_ref=t_ref, schedules=K, samples=M,
        resamples=settings["probe_resamples"], rng_seed=probe_rng_seed(settings["probe_seed"], step))
    rho_zero = int(sum(int((np.asarray(rho) == 0).sum()) for *_, rho, _ in diag_groups))
    if evidence_out is not None:
        evidence_out[step] = evidence

    end_print = engine.fingerprint()
    if end_print != start_print:
        raise RuntimeError("LoRA weights changed during the probe")
    n_clean = sum(len(r) for r, *_ in clean)
    n_diag = sum(len(r) for r, *_ in diag)
    return {
        "t_ref": t_ref,
        "P": engine.size,
        "coordinate_names_sha256": hashlib.sha256("\n".join(engine.coords or []).encode()).hexdigest(),
        "lora_fingerprint": start_print,
        "counts": {"clean_groups": len(clean), "clean_rollouts": n_clean, "diagnostic_tasks": len(diag),
                   "diagnostic_rollouts": n_diag,
                   "groups_per_design": transition_summary.get("groups_per_design"),
                   "rho_zero_fraction": rho_zero / max(1, n_diag)},
        "seconds": round(time.perf_counter() - began, 3),
        "outcome": outcome_summary,
        "transition": transition_summary,
    }


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


def run_probe_cli(args: Any) -> int:
    """``paired-rollouts probe run``: probe each listed checkpoint of a run and write the register."""
    from paired_rollouts.evaluation.rollout import PolicyRunner
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.probe import build_probe_register
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.rows import parse_run
    from paired_rollouts.training.settings import resolve

    settings = resolve(load_settings(args.settings))
    run_dir = Path(args.run_dir)
    run = run_dir.name
    condition, _arm, seed = parse_run(run)
    trajectory = args.trajectory or run
    checkpoints = {}
    evidence: dict[int, dict[str, np.ndarray]] = {}
    for step in args.steps:
        folder = ckpt.step_dir(run_dir, step)
        if not folder.is_dir():
            raise UserError(f"{folder}: checkpoint not found; train the run to step {step} first")
        runner = PolicyRunner(str(args.model_dir), folder, settings, str(args.tasks_dir), seed, trainable=True)
        try:
            checkpoints[step] = probe_checkpoint(runner, run=run, condition=condition, seed=seed, step=step,
                                                 tasks_dir=str(args.tasks_dir), settings=settings,
                                                 evidence_out=evidence)
        finally:
            runner.close()
        print(f"probe {trajectory} step {step}: P={checkpoints[step]['P']} "
              f"outcome ratio {checkpoints[step]['outcome']['mean_centered']['ratio_paired_over_independent']}")
    register = build_probe_register(trajectory, run, checkpoints, settings={
        k: settings[k] for k in settings if k.startswith("probe_") or k == "task_filter"})
    if args.evidence:
        save_evidence(Path(args.evidence), evidence)
    atomic_write_json(args.out, _plain(register))
    return 0


def load_evidence(path: Path) -> dict[int, dict[str, np.ndarray]]:
    """{step: evidence arrays} from a trajectory's ``.npz``."""
    if not Path(path).is_file():
        raise UserError(f"{path}: probe evidence not found; rerun 'paired-rollouts probe run --evidence ...'")
    out: dict[int, dict[str, np.ndarray]] = {}
    try:
        with np.load(path, allow_pickle=False) as data:
            for key in data.files:
                step, _, name = key.partition(".")
                out.setdefault(int(step.removeprefix("step")), {})[name] = data[key]
    except (ValueError, OSError) as exc:
        raise UserError(f"{path}: not a probe evidence file ({exc})") from exc
    return out


def recompute_register(register: dict[str, Any], evidence_path: Path, tolerance: float = 1e-6) -> list[dict]:
    """Per checkpoint: the largest difference between the register's summaries and the recompute."""
    evidence = load_evidence(evidence_path)
    rows = []
    for step, payload in sorted(register["checkpoints"].items(), key=lambda kv: int(kv[0])):
        if int(step) not in evidence:
            raise UserError(f"{evidence_path}: no evidence for checkpoint step {step}")
        outcome, transition = recompute_probe(evidence[int(step)])
        recomputed = _plain({"outcome": outcome, "transition": transition})
        diff, where = max_difference({"outcome": payload["outcome"], "transition": payload["transition"]},
                                     recomputed)
        rows.append({"step": int(step), "max_abs_difference": diff, "where": where, "ok": diff <= tolerance})
    return rows
