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


def probe_checkpoint(runner: Any, *, run: str, condition: str, seed: int, step: int, tasks_dir: str,
                     settings: dict[str, Any]) -> dict[str, Any]:
    """Capture clean and diagnostic rollouts at one checkpoint, score them, summarise both noise kinds."""
    from paired_rollouts.backoffice.tasks import budget_for, load_pool
    from paired_rollouts.evaluation.evaluate import diagnostic_tasks
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.noise.seeds import derive_seed, diagnostic_seed, eval_schedule_seed
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        probe_rng_seed,
        schedule_major_order,
        t_ref_from_tokens,
    )
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

    outcome = OutcomeProbe(settings["probe_q"], t_ref)
    vectors = {k: np.zeros(engine.size, dtype=np.float64) for k in OUTCOME_VECTOR_KEYS}
    for (records, s, _, rho), task in zip(clean, clean_tasks, strict=True):
        success = [bool(r["true_success"]) for r in records]
        coeffs = outcome.add_group(_gram(s), success, rho.tolist(), task_id=task["task_id"])
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ s.astype(np.float64)
    outcome_summary = outcome.summary(_vector_gram(vectors, OUTCOME_VECTOR_KEYS))

    transition = TransitionProbe(K, M, settings["probe_resamples"], t_ref,
                                 probe_rng_seed(settings["probe_seed"], step))
    vectors = {k: np.zeros(engine.size, dtype=np.float64) for k in TRANSITION_VECTOR_KEYS}
    rho_zero = 0
    for (records, s, _, rho), task in zip(diag, diag_tasks, strict=True):
        seeds = [r["schedule_seed"] for r in records]
        order = schedule_major_order(seeds, K, M)
        s, rho = s[order], rho[order]
        rewards = [float(records[i]["true_success"]) for i in order]
        coeffs = transition.add_task(_gram(s), rewards, rho.tolist(), task_id=task["task_id"],
                                     schedule_seeds=[seeds[i] for i in order])
        rho_zero += int((rho == 0).sum())
        for key, c in coeffs.items():
            vectors[key] += np.asarray(c, dtype=np.float64) @ s.astype(np.float64)
    transition_summary = transition.summary(_vector_gram(vectors, TRANSITION_VECTOR_KEYS))

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
    for step in args.steps:
        folder = ckpt.step_dir(run_dir, step)
        if not folder.is_dir():
            raise UserError(f"{folder}: checkpoint not found; train the run to step {step} first")
        runner = PolicyRunner(str(args.model_dir), folder, settings, str(args.tasks_dir), seed, trainable=True)
        try:
            checkpoints[step] = probe_checkpoint(runner, run=run, condition=condition, seed=seed, step=step,
                                                 tasks_dir=str(args.tasks_dir), settings=settings)
        finally:
            runner.close()
        print(f"probe {trajectory} step {step}: P={checkpoints[step]['P']} "
              f"outcome ratio {checkpoints[step]['outcome']['mean_centered']['ratio_paired_over_independent']}")
    register = build_probe_register(trajectory, run, checkpoints, settings={
        k: settings[k] for k in settings if k.startswith("probe_") or k == "task_filter"})
    atomic_write_json(args.out, _plain(register))
    return 0
