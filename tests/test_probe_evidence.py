"""Probe evidence of one checkpoint (per-group Gram matrices, rewards, weights, index lists, token counts,
the streamed running vectors' Gram) reproduces that checkpoint's T_ref and summaries with numpy alone,
within 1e-6, and a changed evidence value is caught."""

import json

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.probe import build_probe_register
from paired_rollouts.probe.evidence import (
    load_evidence,
    max_difference,
    plain,
    recompute_probe,
    save_evidence,
)
from paired_rollouts.probe.scores import StreamingProbe

K, M, G, P = 3, 4, 4, 40


def _stream(seed: int, aligned: bool = False) -> StreamingProbe:
    """A checkpoint streamed group by group, as `probe checkpoint` does (random scores, no model).
    ``aligned``: each clean rollout's score is its success times one direction, so lhs = k rhs and pairing
    raises the outcome trace (the MC outcome probe fails there)."""
    rng = np.random.default_rng(seed)
    stream = StreamingProbe(P, 0.1, K, M, 64, 7 + seed)
    direction = rng.normal(size=P) if aligned else None
    for t in range(3):
        scores = rng.normal(size=(G, P))
        success = [True, True, True, False] if aligned else [bool(x) for x in rng.integers(0, 2, G)]
        if direction is not None:
            scores = np.outer(success, direction) + 0.01 * scores
        stream.add_clean(
            scores.astype(np.float32),
            success,
            list(rng.uniform(0.5, 1.5, G)),
            rng.integers(5, 40, G).astype(float),
            f"validation-{t:05d}",
        )
    for t in range(2):
        seeds = [1000 * t + k for k in range(K) for _ in range(M)]
        perm = rng.permutation(K * M)  # rollouts arrive out of schedule order
        stream.add_diagnostic(
            rng.normal(size=(K * M, P)).astype(np.float32),
            [float(x) for x in rng.integers(0, 2, K * M)],
            rng.uniform(0.5, 1.5, K * M),
            [seeds[i] for i in perm],
            rng.integers(5, 40, K * M).astype(float),
            f"diagnostic-{t:05d}",
        )
    return stream


def _checkpoint(seed: int):
    stream = _stream(seed)
    t_ref, outcome, transition = stream.summaries(24, 8)
    return {"t_ref": t_ref, "outcome": outcome, "transition": transition}, stream.evidence(24, 8)


def test_recompute_reproduces_the_summaries():
    payload, evidence = _checkpoint(0)
    t_ref, outcome, transition = recompute_probe(evidence)
    diff, where = max_difference(
        plain(payload), plain({"t_ref": t_ref, "outcome": outcome, "transition": transition})
    )
    assert diff <= 1e-6, where
    # The evidence holds no score vector: its size does not grow with P.
    assert all(a.size <= 12 * 12 * 2 + 16 for a in evidence.values())


def _write(tmp_path):
    checkpoints, files = {}, []
    for step in (0, 4):
        checkpoints[step], evidence = _checkpoint(step)
        files.append(tmp_path / "evidence" / "a" / f"step{step}.npz")
        save_evidence(files[-1], dict(evidence, step=np.array(step)))
    register = tmp_path / "probe.json"
    register.write_text(json.dumps(plain(build_probe_register("a", "c2-paired-s0", checkpoints))))
    return register, files


def _recompute(register, evidence) -> int:
    return main(["probe", "recompute", "--register", str(register), "--evidence", *map(str, evidence)])


@pytest.mark.parametrize("key", ["diag_rewards", "clean_success", "clean_rho", "token_counts", "diag_grams"])
def test_recompute_cli_and_a_changed_value(tmp_path, capsys, key):
    register, files = _write(tmp_path)
    assert _recompute(register, files) == 0
    assert "reproduced within 1e-06" in capsys.readouterr().out
    assert _recompute(register, [files[0].parent]) == 0  # the folder of a trajectory's evidence
    capsys.readouterr()
    stored = load_evidence([files[1]])[4]
    values = stored[key]
    if values.dtype == bool:
        values[0] = not values[0]
    elif key == "diag_rewards":
        values[0] = 1.0 - values[0]
    else:
        values[0] = values[0] * 1.5 + 1.0
    save_evidence(files[1], dict(stored, step=np.array(4)))
    assert _recompute(register, files) == 1
    out = capsys.readouterr().out
    assert "step 0: " in out and "step 4: " in out and "MISMATCH" in out and "NOT reproduced" in out
    assert out.split("step 4: ")[0].count("MISMATCH") == 0  # step 0 is untouched


def test_missing_evidence_is_one_line(tmp_path, capsys):
    register, _ = _write(tmp_path)  # the register as its writer writes it (records.read_probe_register)
    assert _recompute(register, [tmp_path / "none.npz"]) == 1
    assert "probe evidence not found" in capsys.readouterr().err


def test_evidence_of_a_step_not_in_the_register_is_refused(tmp_path, capsys):
    register, files = _write(tmp_path)
    assert _recompute(register, files[:1]) == 1
    assert "no evidence for checkpoint step 4" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [1, 2])
def test_schedule_major_evidence(seed):
    """Diagnostic groups are stored in schedule-major order: seeds ascend in blocks of M."""
    _, evidence = _checkpoint(seed)
    seeds = evidence["diag_schedule_seeds"][: K * M]
    assert list(seeds) == sorted(seeds) and len(set(seeds[:M])) == 1


def test_assemble_reads_each_checkpoint_through_its_typed_reader(tmp_path, capsys):
    """`probe assemble` reads every probe checkpoint file through records.read_probe_checkpoint: one
    without its transition summary is one line naming the file, and no register is written."""
    from paired_rollouts.cli import main

    path = tmp_path / "step0.json"
    path.write_text(json.dumps({"run": "c2-paired-s0", "step": 0, "outcome": {}}))
    out = tmp_path / "traces.json"
    argv = ["--trajectory", "a", "--run", "c2-paired-s0", "--inputs", str(path), "--settings", "{}"]
    assert main(["probe", "assemble", *argv, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}: missing key 'transition' in the probe checkpoint" in err[0], err
    assert not out.exists()
