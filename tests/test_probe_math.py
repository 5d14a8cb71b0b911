"""Probe math: bandit numbers, orthogonal case, closed forms vs enumeration, resampling designs."""

import json

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.probe import (
    OUTCOME_VECTOR_KEYS,
    OutcomeProbe,
    build_probe_register,
    outcome_probe,
    probe_rng_seed,
    probe_verdict,
    schedule_major_order,
    t_ref_from_tokens,
    transition_probe,
)
from paired_rollouts.probe.bandit import bandit_enumeration, orthogonal_case
from paired_rollouts.probe.enumeration import (
    flip_masks,
    group_advantages,
    implemented_weights,
    mean_centered_weights,
    outcome_group,
)
from paired_rollouts.probe.transition import draw_groups


def test_bandit_numbers(capsys):
    assert main(["probe", "bandit", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["contrast_variance"]["independent"] == pytest.approx(0.4950, abs=5e-5)
    assert r["contrast_variance"]["paired"] == pytest.approx(0.4500, abs=5e-5)
    assert r["trace_var_mean_centered"]["independent"] == pytest.approx(0.002615, abs=5e-7)
    assert r["trace_var_mean_centered"]["paired"] == pytest.approx(0.005845, abs=5e-7)
    assert r["trace_var_implemented"]["independent"] == pytest.approx(0.007053, abs=5e-7)
    assert r["trace_var_implemented"]["paired"] == pytest.approx(0.019724, abs=5e-7)
    assert r["expected_update_implemented"]["independent"] == pytest.approx(0.3918, abs=5e-5)
    assert r["expected_update_implemented"]["paired"] == pytest.approx(0.3905, abs=5e-5)
    assert r["lhs"] == pytest.approx(0.049560546875, abs=1e-12)
    assert r["rhs"] == pytest.approx(0.013671875, abs=1e-12)
    assert r["expected_update_mean_centered"]["paired"] == pytest.approx(0.196875, abs=1e-12)
    # the exact identity: TrVar_p - TrVar_i = q(1-q)(lhs - rhs)
    assert abs(r["identity_residual"]) < 1e-14


def test_orthogonal_case():
    rows = orthogonal_case(8, s2=2.0)
    for row in rows:
        assert row["lhs"] == pytest.approx(row["lhs_closed_form"])
        assert row["rhs"] == pytest.approx(row["rhs_closed_form"])
        assert row["pairing_helps"] == (row["k"] >= 2)
    assert bandit_enumeration()["orthogonal"][1]["pairing_helps"] is False


def _random_group(rng, g=8, p=6, k=None):
    s = rng.normal(size=(g, p))
    r = rng.random(g) < 0.6 if k is None else np.arange(g) < k
    rho = rng.uniform(0.5, 1.5, size=g)
    return s, r, rho


def test_mc_closed_form_equals_enumeration():
    rng = np.random.default_rng(0)
    for k in (0, 1, 3, 8):
        s, r, rho = _random_group(rng, k=k)
        closed = outcome_group(s @ s.T, r, rho, 50.0, 0.1)
        enum = outcome_group(s @ s.T, r, rho, 50.0, 0.1, enumerate_mean_centered=True)
        for key in closed.esq:
            assert closed.esq[key] == pytest.approx(enum.esq[key], rel=1e-12, abs=1e-14)
            assert np.allclose(closed.ea[key], enum.ea[key])


def test_masks_and_weights():
    probs, obs = flip_masks(np.array([1, 0, 1, 1]), 0.1, "independent")
    assert probs.size == 8 and probs.sum() == pytest.approx(1)
    assert np.all(obs[:, 1] == 0)
    probs, obs = flip_masks(np.array([1, 0, 1, 1]), 0.1, "paired")
    assert probs.tolist() == [0.9, 0.1] and obs[1].sum() == 0
    probs, obs = flip_masks(np.ones(16), 0.1, "independent")  # the largest group the settings allow
    assert obs.shape == (2**16, 16) and probs.sum() == pytest.approx(1)
    with pytest.raises(ValueError, match="17 successes"):  # never 2^k rows past it
        flip_masks(np.ones(17), 0.1, "independent")
    assert flip_masks(np.ones(32), 0.1, "paired")[1].shape == (2, 32)  # two outcomes whatever G
    assert np.all(group_advantages(np.ones((1, 8))) == 0)
    a = implemented_weights(np.array([1.0, 0, 0, 0]), np.ones(4), 4.0)
    assert a[0] == pytest.approx(0.75 / (0.5 + 1e-4) / 4)
    assert mean_centered_weights(np.array([1.0, 0, 0, 0])).tolist() == [0.1875, -0.0625, -0.0625, -0.0625]


def _checkpoint(rng, n=6, g=8, p=5):
    groups = [_random_group(rng, g, p) for _ in range(n)]
    return [s for s, _, _ in groups], [r for _, r, _ in groups], [rho for _, _, rho in groups]


def test_outcome_paths_agree_and_identity_holds():
    rng = np.random.default_rng(1)
    scores, succ, rho = _checkpoint(rng)
    grams = [s @ s.T for s in scores]
    a = outcome_probe(grams, succ, rho, 40.0, 0.1, scores_by_group=scores)
    full = np.concatenate(scores) @ np.concatenate(scores).T
    b = outcome_probe(grams, succ, rho, 40.0, 0.1, full_gram=full)
    probe = OutcomeProbe(0.1, 40.0)
    vecs = {k: 0.0 for k in OUTCOME_VECTOR_KEYS}
    for s, r, w in zip(scores, succ, rho, strict=True):
        for key, c in probe.add_group(s @ s.T, r, w).items():
            vecs[key] = vecs[key] + c @ s
    mat = np.stack([vecs[k] for k in OUTCOME_VECTOR_KEYS])
    c = probe.summary(mat @ mat.T)
    for est in ("mean_centered", "implemented"):
        for d in ("paired", "independent"):
            assert a[est]["trace_var"][d] == pytest.approx(b[est]["trace_var"][d], rel=1e-10)
            assert a[est]["trace_var"][d] == pytest.approx(c[est]["trace_var"][d], rel=1e-10)
    mc = a["mean_centered"]
    scale = abs(mc["trace_var"]["paired"])
    assert abs(mc["identity_residual"]) < 1e-10 * scale
    # MC: within paired = q(1-q) lhs, within independent = q(1-q) rhs, between identical
    assert mc["trace_var_within"]["paired"] == pytest.approx(0.09 * a["lhs_mean"])
    assert mc["trace_var_within"]["independent"] == pytest.approx(0.09 * a["rhs_mean"])
    assert mc["trace_var_between"]["paired"] == pytest.approx(mc["trace_var_between"]["independent"])
    assert mc["cosine_paired_independent"] == pytest.approx(1.0)
    assert sum(v["count"] for v in a["by_k"].values()) == 6
    with pytest.raises(UserError):
        outcome_probe(grams, succ, rho, 40.0, 0.1)


def _explicit_trace(groups_idx, scores, rewards, weights_fn):
    grads = []
    for idx in groups_idx:
        a = weights_fn(rewards[idx], idx)
        grads.append(a @ scores[idx])
    grads = np.array(grads)
    n = len(grads)
    return (grads**2).sum() / n - (grads.sum(axis=0) ** 2).sum() / n**2


def test_transition_designs_and_traces():
    k_, m_, r_ = 4, 4, 10
    rng = np.random.default_rng(2)
    tasks = []
    for _ in range(3):
        s = rng.normal(size=(k_ * m_, 5))
        rew = (rng.random(k_ * m_) < np.repeat(rng.random(k_), m_)).astype(float)
        tasks.append((s, rew, rng.uniform(0.5, 1.5, size=k_ * m_)))
    seed = probe_rng_seed(0, 20)
    assert seed == 20

    def probe(**gram):  # the three tasks' Grams, rewards and weights, cap 30; Gram products as given
        return transition_probe(
            [s @ s.T for s, _, _ in tasks],
            [r for _, r, _ in tasks],
            [p for _, _, p in tasks],
            30.0,
            seed,
            resamples=r_,
            schedules=k_,
            samples=m_,
            **gram,
        )

    out = probe(scores_by_task=[s for s, _, _ in tasks], task_ids=["a", "b", "c"])
    assert out["groups_per_design"] == {"paired": 12, "independent_resampled": 30, "stratified": 30}
    # the same generator, consumed task by task, reproduces the stored index lists
    gen = np.random.default_rng(seed)
    stacked = {d: [] for d in ("paired", "independent_resampled", "stratified")}
    all_scores, all_rew, all_rho = [], [], []
    for t, (s, rew, rho) in enumerate(tasks):
        groups = draw_groups(gen, k_, m_, r_)
        assert groups["independent_resampled"].tolist() == out["indices"]["abc"[t]]["independent_resampled"]
        assert groups["stratified"].tolist() == out["indices"]["abc"[t]]["stratified"]
        for ix in groups["independent_resampled"]:
            assert len(set(ix.tolist())) == m_  # distinct rollouts
        assert np.all(groups["stratified"] // m_ == np.arange(k_))  # one per schedule
        for d, idx in groups.items():
            stacked[d].extend((idx + t * k_ * m_).tolist())
        all_scores.append(s)
        all_rew.append(rew)
        all_rho.append(rho)
    scores, rew, rho = np.concatenate(all_scores), np.concatenate(all_rew), np.concatenate(all_rho)
    for d in stacked:
        idx = np.array(stacked[d])
        mc = _explicit_trace(idx, scores, rew, lambda o, ix: mean_centered_weights(o))
        sw = _explicit_trace(idx, scores, rew, lambda o, ix: implemented_weights(o, rho[ix], 30.0))
        assert out["mean_centered"]["trace_var"][d] == pytest.approx(mc, rel=1e-10)
        assert out["implemented"]["trace_var"][d] == pytest.approx(sw, rel=1e-10)
    full = scores @ scores.T
    again = probe(full_gram=full)
    assert again["mean_centered"]["trace_var"] == pytest.approx(out["mean_centered"]["trace_var"])


def test_a_trace_lost_to_rounding_gives_no_ratio():
    """One task and one resampled group: the independent designs hold one group each, whose variance is
    zero by construction but computed as a difference of two equal sums (about 1e-17, either sign). The
    ratios over them are None, where they once read 1e14 or -1e14; the paired design, with two groups,
    keeps a trace, and with enough groups every ratio is a number."""
    rng = np.random.default_rng(5)
    s = rng.normal(size=(4, 3))
    rewards = np.array([1.0, 0.0, 0.0, 1.0])

    def probe(resamples: int, tasks: int) -> dict:
        return transition_probe(
            [s @ s.T] * tasks,
            [rewards] * tasks,
            None,
            4.0,
            0,
            resamples=resamples,
            schedules=2,
            samples=2,
            scores_by_task=[s] * tasks,
        )

    one = probe(resamples=1, tasks=1)
    for est in ("mean_centered", "implemented"):
        block = one[est]
        assert (
            abs(block["trace_var"]["independent_resampled"]) < 1e-12 and block["trace_var"]["paired"] > 1e-3
        )
        assert block["ratio_paired_over_independent"] is None
        assert block["ratio_paired_over_stratified"] is None
    many = probe(resamples=8, tasks=3)
    assert all(
        isinstance(many[e]["ratio_paired_over_independent"], float) for e in ("mean_centered", "implemented")
    )


def test_schedule_major_layout():
    seeds = [5, 9, 5, 9, 7, 7]
    order = schedule_major_order(seeds, 3, 2)
    assert order.tolist() == [0, 2, 4, 5, 1, 3]
    with pytest.raises(UserError):
        schedule_major_order([5, 5, 5, 9, 7, 7], 3, 2)


def _ckpt(po, pi, tp, ti, lhs=1.0, rhs=3.0):
    def block(p, i, key):
        return {"trace_var": {"paired": p, key: i}, "ratio_paired_over_independent": p / i}

    return {
        "outcome": {
            "lhs_mean": lhs,
            "rhs_mean": rhs,
            "mean_centered": block(po, pi, "independent"),
            "implemented": block(po, pi, "independent"),
        },
        "transition": {
            "mean_centered": block(tp, ti, "independent_resampled"),
            "implemented": block(tp, ti, "independent_resampled"),
        },
    }


def test_verdict_rules():
    ok = {0: _ckpt(1, 2, 1, 2), 20: _ckpt(1, 3, 3, 2), 40: _ckpt(0.5, 2, 1, 2)}
    v = probe_verdict(ok)
    assert v["outcome_noise_every_checkpoint"] and v["transition_noise_majority"] and v["passes"]
    assert v["p13"]["base_lhs_at_most_half_rhs"] and v["p13"]["outcome_ratio_falls"]
    assert v["ratios_by_step"]["outcome"]["20"] == pytest.approx(1 / 3)
    one_bad = {**ok, 60: _ckpt(3, 2, 1, 2)}
    assert probe_verdict(one_bad)["outcome_noise_every_checkpoint"] is False
    tie = {0: _ckpt(1, 2, 1, 2), 20: _ckpt(1, 2, 3, 2)}
    assert probe_verdict(tie)["transition_noise_majority"] is False  # 1 of 2 is not a strict majority


def test_register_and_t_ref():
    reg = build_probe_register(
        "c2-paired-s1",
        "c2-paired-s1",
        {"0": _ckpt(1, 2, 1, 2), "8": _ckpt(1, 3, 1, 2)},
        {"estimator": "mean_centered", "outcome": "every", "transition": "strict_majority"},
    )
    assert reg["steps"] == [0, 8] and reg["checkpoints"]["8"]["step"] == 8 and reg["verdict"]["passes"]
    # batch equivalent: 1/ratio of the MC traces (paired / independent), per noise type
    for step in ("0", "8"):
        cp = reg["checkpoints"][step]
        for noise in ("outcome", "transition"):
            ratio = cp[noise]["mean_centered"]["ratio_paired_over_independent"]
            assert cp["batch_equivalent"][noise] == pytest.approx(1 / ratio)
    assert reg["checkpoints"]["8"]["batch_equivalent"]["outcome"] == pytest.approx(3.0)
    assert t_ref_from_tokens([10, 20], 24, 8) == 24 * 8 * 15
