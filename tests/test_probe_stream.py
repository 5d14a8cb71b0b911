"""The probe streams (issue 18, item 3): each group is folded into the Gram products as soon as it is
scored, so host memory does not grow with the number of groups, and the result equals the batch form."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def _batch_reference(clean, diag, q, K, M, R, seed, P_steps, G_gen):
    """The unstreamed computation: every score kept, T_ref known before any group is added."""
    from paired_rollouts.probe import (
        OUTCOME_VECTOR_KEYS,
        TRANSITION_VECTOR_KEYS,
        OutcomeProbe,
        TransitionProbe,
        schedule_major_order,
        t_ref_from_tokens,
    )

    t_ref = t_ref_from_tokens(np.concatenate([c for *_, c in clean + diag]), P_steps, G_gen)
    out = OutcomeProbe(q, t_ref)
    vec = {k: 0.0 for k in OUTCOME_VECTOR_KEYS}
    for s, success, rho, _ in clean:
        s64 = s.astype(np.float64)
        for k, c in out.add_group(s64 @ s64.T, success, rho).items():
            vec[k] = vec[k] + c @ s64
    stack = np.stack([vec[k] for k in OUTCOME_VECTOR_KEYS])
    outcome = out.summary(stack @ stack.T)
    tr = TransitionProbe(K, M, R, t_ref, seed)
    vec = {k: 0.0 for k in TRANSITION_VECTOR_KEYS}
    for s, rewards, rho, seeds, _ in diag:
        order = schedule_major_order(seeds, K, M)
        s64 = s.astype(np.float64)[order]
        coeffs = tr.add_task(
            s64 @ s64.T,
            [rewards[i] for i in order],
            np.asarray(rho)[order].tolist(),
            schedule_seeds=[seeds[i] for i in order],
        )
        for k, c in coeffs.items():
            vec[k] = vec[k] + c @ s64
    stack = np.stack([vec[k] for k in TRANSITION_VECTOR_KEYS])
    return t_ref, outcome, tr.summary(stack @ stack.T)


def _close(a, b, path=""):
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and b is not None:
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def test_streamed_summaries_equal_the_batch_form() -> None:
    from paired_rollouts.probe.scores import StreamingProbe

    rng = np.random.default_rng(3)
    P, G, K, M, R, q = 300, 4, 2, 3, 5, 0.1
    clean = [
        (
            rng.standard_normal((G, P)).astype(np.float32),
            list(rng.random(G) < 0.5),
            list(rng.uniform(0.5, 1.5, G)),
            rng.integers(5, 40, G).astype(float),
        )
        for _ in range(5)
    ]
    diag = []
    for t in range(3):
        seeds = [1000 * t + k for k in range(K) for _ in range(M)]
        perm = rng.permutation(K * M)  # arrival order is not schedule-major
        diag.append(
            (
                rng.standard_normal((K * M, P)).astype(np.float32),
                list(map(float, rng.random(K * M) < 0.5)),
                rng.uniform(0.5, 1.5, K * M),
                [seeds[i] for i in perm],
                rng.integers(5, 40, K * M).astype(float),
            )
        )
    stream = StreamingProbe(P, q, K, M, R, 7)
    for s, success, rho, counts in clean:
        stream.add_clean(s, success, rho, counts, None)
    for s, rewards, rho, seeds, counts in diag:
        stream.add_diagnostic(s, rewards, rho, seeds, counts, None)
    got = stream.summaries(24, 8)
    want = _batch_reference(clean, diag, q, K, M, R, 7, 24, 8)
    assert got[0] == pytest.approx(want[0])
    _close(got[1], want[1])
    _close(got[2], want[2])
    # The IS ratio reaches the implemented estimator: with rho = 1 its numbers differ.
    flat = StreamingProbe(P, q, K, M, R, 7)
    for s, success, _rho, counts in clean:
        flat.add_clean(s, success, [1.0] * G, counts, None)
    for s, rewards, _rho, seeds, counts in diag:
        flat.add_diagnostic(s, rewards, np.ones(K * M), seeds, counts, None)
    other = flat.summaries(24, 8)
    assert other[1]["implemented"] != got[1]["implemented"]
    assert other[1]["mean_centered"] == got[1]["mean_centered"]


class _FakeEngine:
    """Stands in for ScoreEngine: random fp32 scores of a fixed, large P (no model needed)."""

    P = 400_000

    def __init__(self, runner) -> None:
        self.size, self.coords = self.P, ["lora"]
        self.rng = np.random.default_rng(0)

    def fingerprint(self) -> str:
        return "unchanged"

    def scores(self, output, into=None):
        n = output["n"]
        out = into(self.P) if into is not None else np.empty((n, self.P), dtype=np.float32)
        out[:] = self.rng.random((n, self.P), dtype=np.float32)
        return out, np.full(n, 12.0)


class _FakeRunner:
    def rollout(self, rows, phase, sampling_seed):
        records = [
            {
                "true_success": (sampling_seed + j) % 3 != 0,
                "exposed": False,
                "schedule_seed": r["schedule_seed"],
            }
            for j, r in enumerate(rows)
        ]
        return records, {"n": len(rows), "importance_sampling_ratio": torch.full((len(rows), 1), 0.9)}


def _peak_bytes(monkeypatch, sim_tasks_dir, groups: int) -> int:
    from paired_rollouts.probe import scores
    from paired_rollouts.settings import Settings

    monkeypatch.setattr(scores, "ScoreEngine", _FakeEngine)
    settings = Settings.from_manifest(
        {
            "task_filter": "all",
            "probe_clean_tasks": groups,
            "probe_clean_rollouts": 4,
            "probe_diag_tasks": 1,
            "probe_schedules": 2,
            "probe_samples": 2,
            "probe_resamples": 3,
            "eval_batch": 8,
        }
    )
    tracemalloc.start()
    try:
        result = scores.probe_checkpoint(
            _FakeRunner(),
            run="c2-paired-s0",
            condition="C2",
            seed=0,
            step=0,
            tasks_dir=str(sim_tasks_dir),
            settings=settings,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["counts"]["clean_groups"] == groups
    return peak


def test_probe_peak_memory_does_not_grow_with_the_number_of_groups(monkeypatch, sim_tasks_dir) -> None:
    two = _peak_bytes(monkeypatch, sim_tasks_dir, 2)
    eight = _peak_bytes(monkeypatch, sim_tasks_dir, 8)
    group_scores = 4 * _FakeEngine.P * 4  # one clean group's fp32 scores
    print(
        f"probe peak: 2 groups {two / 2**20:.1f} MiB, 8 groups {eight / 2**20:.1f} MiB "
        f"(one group's scores {group_scores / 2**20:.1f} MiB)"
    )
    # Keeping every score would add 6 more groups' scores (~37 MiB here) to the peak.
    assert eight - two < group_scores
