"""Luck-share estimator: hand example, known components, null bias, and the CLI with defects."""

import json

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.pairing import variance_components
from paired_rollouts.stats.luck_share import luck_share, summarize_tables


def test_hand_example():
    # rows (1,1,1,1) and (0,0,1,1): row means 1, .5; grand .75
    t = np.array([[1, 1, 1, 1], [0, 0, 1, 1]])
    c = variance_components(t)
    assert c["ms_between"] == pytest.approx(4 / 1 * (0.25**2 * 2))  # 0.5
    assert c["ms_within"] == pytest.approx((0 + 4 * 0.25) / (2 * 3))  # 1/6
    env = (0.5 - 1 / 6) / 4
    assert c["sigma2_env"] == pytest.approx(env)
    assert luck_share(t) == pytest.approx(env / (env + 1 / 6))


def test_undefined_and_clipped():
    assert luck_share(np.zeros((8, 8))) is None
    assert luck_share(np.ones((8, 8))) is None
    same_rows = np.tile([1, 0, 1, 0], (4, 1))  # no between-schedule variation -> clipped to 0
    assert luck_share(same_rows) == 0.0
    with pytest.raises(UserError):
        variance_components(np.ones((1, 8)))


def test_recovers_known_components():
    # p_k ~ Beta(2, 2): sigma2_env = Var(p) = 0.05, sigma2_pol = E[p(1-p)] = 0.2
    rng = np.random.default_rng(5)
    p = rng.beta(2, 2, size=(4000, 8, 1))
    tables = (rng.random((4000, 8, 8)) < p).astype(float)
    s = summarize_tables(tables)
    assert s["sigma2_env_mean"] == pytest.approx(0.05, abs=0.004)
    assert s["sigma2_pol_mean"] == pytest.approx(0.2, abs=0.004)
    assert s["lam_pooled"] == pytest.approx(0.2, abs=0.02)


def test_null_bias_is_small_and_positive():
    tables = (np.random.default_rng(6).random((20000, 8, 8)) < 0.5).astype(float)
    s = summarize_tables(tables)
    assert 0.022 < s["lam"] < 0.032  # about 0.027 (docs/analysis.md#luck-share)


def _diag(path, run, tables, drop_one=False):
    lines = []
    for t, table in enumerate(tables):
        for k, row in enumerate(table):
            for m, v in enumerate(row):
                if drop_one and t == 0 and k == 0 and m == 0:
                    continue
                lines.append(
                    {
                        "run": run,
                        "condition": "C2",
                        "arm": "paired",
                        "seed": 0,
                        "phase": "diagnostic",
                        "step": 0,
                        "regime": "diag",
                        "task_id": f"diagnostic-{t:05d}",
                        "schedule_index": k,
                        "schedule_seed": 900 - k,
                        "true_success": bool(v),
                        # the rest of the contract's episode record (the typed reader requires it)
                        "observed_reward": float(v),
                        "flipped": False,
                        "exposed": False,
                        "calls": 3,
                        "budget": 9,
                        "finished": True,
                        "faults": {},
                    }
                )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_cli_and_defects(tmp_path):
    rng = np.random.default_rng(0)
    tables = (rng.random((4, 4, 4)) < 0.5).astype(int)
    src = tmp_path / "diag-step0.jsonl"
    _diag(src, "c2-paired-s0", tables)
    out = tmp_path / "luck-step0.json"
    assert main(["luck-share", "--episodes", str(src), "--out", str(out), "--resamples", "500"]) == 0
    data = json.loads(out.read_text())
    assert data["K"] == 4 and data["M"] == 4 and data["tasks"] == 4 and data["complete"]
    # rows ordered by ascending schedule seed = reversed schedule index here
    assert data["per_task"][0]["table"] == tables[0][::-1].tolist()
    lams = [t["lam"] for t in data["per_task"] if t["lam"] is not None]
    assert data["lam"] == pytest.approx(np.mean(lams))
    first = out.read_bytes()
    main(["luck-share", "--episodes", str(src), "--out", str(out), "--resamples", "500"])
    assert out.read_bytes() == first  # deterministic

    _diag(src, "c2-paired-s0", tables, drop_one=True)
    main(
        [
            "luck-share",
            "--episodes",
            str(src),
            "--out",
            str(out),
            "--resamples",
            "500",
            "--schedules",
            "4",
            "--samples",
            "4",
            "--tasks",
            "4",
        ]
    )
    data = json.loads(out.read_text())
    assert not data["complete"] and data["tasks"] == 3
    assert data["defects"][0]["task_id"] == "diagnostic-00000"
