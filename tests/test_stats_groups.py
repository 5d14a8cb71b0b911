"""Spurious-variance closed form against simulation; group statistics and seed sharing."""

import json

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.pairing import spurious_rate_closed_form
from paired_rollouts.stats.groups import group_statistics


@pytest.mark.parametrize("q,expected", [(0.02, 0.15), (0.05, 0.34), (0.10, 0.57)])
def test_closed_form_matches_simulation(q, expected):
    rate = spurious_rate_closed_form(q, 8)
    assert rate == pytest.approx(expected, abs=0.006)
    kept = np.random.default_rng(1).random((40000, 8)) >= q  # all-correct groups, independent flips
    sim = np.mean(kept.any(axis=1) & ~kept.all(axis=1))
    assert sim == pytest.approx(rate, abs=0.01)


def _group(run, step, g, seeds, true, obs, adv=None):
    return {
        "run": run,
        "step": step,
        "group": g,
        "task_id": f"train-{g:05d}",
        "schedule_seeds": seeds,
        "true_success": true,
        "observed_reward": obs,
        "advantages": adv or [0.0] * len(obs),
    }


def test_group_statistics(tmp_path):
    run = "c4-independent-s0"
    recs = [
        _group(run, 0, 0, [1, 2, 3, 4], [True] * 4, [1, 1, 0, 1], [0.5, 0.5, -1.5, 0.5]),  # spurious
        _group(run, 0, 1, [5, 6, 7, 8], [True] * 4, [1, 1, 1, 1]),  # all correct, flat
        _group(run, 1, 0, [9, 10, 11, 12], [False, True, False, True], [0, 1, 0, 1], [-1, 1, -1, 1]),
        _group(run, 1, 1, [13, 14, 15, 16], [False] * 4, [0, 0, 0, 0]),
    ]
    s = group_statistics(recs, q=0.1)
    assert s["groups"] == 4 and s["G"] == 4 and s["steps"] == 2
    assert s["zero_variance_groups"] == 2 and s["zero_variance_frac"] == 0.5
    assert s["all_correct_groups"] == 2 and s["spurious_groups"] == 1
    assert s["spurious_among_all_correct"] == 0.5
    assert s["mean_max_abs_advantage"] == pytest.approx((1.5 + 0 + 1 + 0) / 4)
    assert s["seed_sharing"]["passes"] is True
    assert s["expected_spurious_rate"]["rate"] == pytest.approx(1 - 0.9**4 - 0.1**4)

    bad = [dict(r) for r in recs]
    bad[0]["schedule_seeds"] = [7, 7, 7, 7]
    bad[0]["spurious"] = False
    s = group_statistics(bad)
    assert s["seed_sharing"]["passes"] is False and s["seed_sharing"]["groups_sharing_one_seed"] == 1
    assert s["defects"] and "spurious" in s["defects"][0]["problem"]

    paired = [dict(r, run="c4-paired-s0", schedule_seeds=[3] * 4) for r in recs]
    src = tmp_path / "groups.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in paired))
    out = tmp_path / "group_stats.json"
    assert main(["group-stats", "--groups", str(src), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["seed_sharing"]["passes"] is True


@pytest.mark.parametrize(
    "run,q",
    [("c4-independent-s0", 0.10), ("c3-independent-s1", 0.05), ("c2-independent-s0", None)],
)
def test_group_stats_takes_q_from_the_runs_condition(tmp_path, run, q):
    """The expected spurious rate uses the outcome-noise rate of the run's own condition (the design's,
    or the config's `conditions:` given with --conditions), never a rate written in the command."""
    recs = [_group(run, 0, g, [g] * 4, [True] * 4, [1, 1, 1, 1]) for g in range(3)]
    src = tmp_path / "groups.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "group_stats.json"
    assert main(["group-stats", "--groups", str(src), "--out", str(out)]) == 0
    expected = json.loads(out.read_text())["expected_spurious_rate"]
    if q is None:
        assert expected is None
    else:
        assert expected["q"] == q and expected["rate"] == pytest.approx(spurious_rate_closed_form(q, 4))
    # a condition the config adds (C5, q = 0.2) is looked up there
    conditions = json.dumps({"C5": {"p": 0.0, "q": 0.2, "mixture": "default"}})
    new = [dict(r, run="c5-independent-s0") for r in recs]
    src.write_text("".join(json.dumps(r) + "\n" for r in new))
    assert main(["group-stats", "--groups", str(src), "--conditions", conditions, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["expected_spurious_rate"]["q"] == 0.2
