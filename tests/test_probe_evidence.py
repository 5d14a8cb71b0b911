"""Probe evidence (Gram matrices, rewards, weights, index lists) reproduces the probe summaries with
numpy alone, within 1e-6, and a changed evidence value is caught."""

import json

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.probe import build_probe_register
from paired_rollouts.probe.scores import (
    _plain,
    load_evidence,
    max_difference,
    recompute_probe,
    save_evidence,
    summarise_probe,
)

K, M, G = 3, 4, 4


def _groups(seed: int):
    rng = np.random.default_rng(seed)
    size = 40
    clean = [(f"validation-{t:05d}", rng.normal(size=(G, size)).astype(np.float32),
              [bool(x) for x in rng.integers(0, 2, G)], rng.uniform(0.5, 1.5, G)) for t in range(3)]
    diag = []
    for t in range(2):
        seeds = [1000 * t + k for k in range(K) for _ in range(M)]
        perm = rng.permutation(K * M)   # rollouts arrive out of schedule order
        diag.append((f"diagnostic-{t:05d}", rng.normal(size=(K * M, size)).astype(np.float32),
                     [float(x) for x in rng.integers(0, 2, K * M)], rng.uniform(0.5, 1.5, K * M),
                     [seeds[i] for i in perm]))
    return clean, diag


def _summaries(seed: int):
    clean, diag = _groups(seed)
    return summarise_probe(clean, diag, q=0.1, t_ref=123.0, schedules=K, samples=M, resamples=64, rng_seed=7)


def test_recompute_reproduces_the_summaries():
    outcome, transition, evidence = _summaries(0)
    again_o, again_t = recompute_probe(evidence)
    diff, where = max_difference(_plain({"o": outcome, "t": transition}), _plain({"o": again_o, "t": again_t}))
    assert diff <= 1e-6, where


def test_recompute_cli_and_a_changed_reward(tmp_path, capsys):
    checkpoints, evidence = {}, {}
    for step in (0, 4):
        outcome, transition, evidence[step] = _summaries(step)
        checkpoints[step] = {"outcome": outcome, "transition": transition}
    path = tmp_path / "evidence" / "a.npz"
    save_evidence(path, evidence)
    register = tmp_path / "probe.json"
    register.write_text(json.dumps(_plain(build_probe_register("a", "c2-paired-s0", checkpoints))))
    assert main(["probe", "recompute", "--register", str(register), "--evidence", str(path)]) == 0
    assert "reproduced within 1e-06" in capsys.readouterr().out
    stored = load_evidence(path)
    stored[4]["clean_success"][0] = not stored[4]["clean_success"][0]
    save_evidence(path, stored)
    assert main(["probe", "recompute", "--register", str(register), "--evidence", str(path)]) == 1
    out = capsys.readouterr().out
    assert "step 0: " in out and "step 4: " in out and "MISMATCH" in out and "NOT reproduced" in out


def test_missing_evidence_is_one_line(tmp_path, capsys):
    register = tmp_path / "probe.json"
    register.write_text(json.dumps({"checkpoints": {"0": {"outcome": {}, "transition": {}}}}))
    assert main(["probe", "recompute", "--register", str(register), "--evidence", str(tmp_path / "none.npz")]) == 1
    assert "probe evidence not found" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [1, 2])
def test_schedule_major_evidence(seed):
    """The diagnostic Gram is stored in schedule-major order: seeds ascend in blocks of M."""
    *_, evidence = _summaries(seed)
    seeds = evidence["diag_schedule_seeds"][: K * M]
    assert list(seeds) == sorted(seeds) and len(set(seeds[:M])) == 1
