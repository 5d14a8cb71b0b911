"""Power curves (surrogate/power_curves.py, docs/records.md 8.6): the registered learning rules' pass
probability at a set true effect, checked against hand-computed probabilities, the decision stage's own
rule functions and the paper's published numbers; the register's reader refuses a tampered file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts.errors import UserError
from paired_rollouts.prereg.rules import load_rules
from paired_rollouts.surrogate import power_curves as pc

ROOT = Path(__file__).parents[1]
RULES = ROOT / "prereg/decision_rules.yaml"
PUBLISHED = ROOT / "data/published/paper.yaml"
FIXTURE = ROOT / "tests/fixtures/render/results/decisions"


def decisions(tmp_path: Path) -> list[Path]:
    """The fixture's C2 and C4 decision registers (the paper's per-seed numbers, 2 seeds), stamped with the
    sha256 of the rules file, as the decide stage would."""
    sha = load_rules(RULES).sha256
    out = []
    for name in ("c2", "c4"):
        data = json.loads((FIXTURE / f"{name}.json").read_text())
        data["rules_sha256"] = sha
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        out.append(path)
    return out


def power_curves_register(tmp_path: Path, draws: int = 400) -> Path:
    from paired_rollouts.io import atomic_write_json

    out = tmp_path / "power_curves.json"
    atomic_write_json(out, pc.power_curves(decisions(tmp_path), RULES, PUBLISHED, draws=draws))
    return out


def rate(counts: list[int], draws: int) -> list[float]:
    return [c / draws for c in counts]


# ---------------------------------------------------------------- the rule


def test_rule_on_hand_cases_with_and_without_the_every_seed_clause() -> None:
    rule = pc.Rule(0.03, True, True)
    diffs = np.array([[0.04, 0.05, 0.01], [0.08, -0.01, 0.08], [0.01, 0.02, 0.03], [0.04, 0.04, 0.04]])
    finals = np.array([[0.0, 0.0, 0.0], [0.1, 0.1, 0.1], [0.1, 0.1, 0.1], [-0.1, 0.05, 0.0]])
    assert rule.passes(diffs, finals).tolist() == [True, False, False, False]
    assert rule.passes(diffs, finals, every_seed=False).tolist() == [True, True, False, False]
    assert rule.passes(diffs, None).tolist() == [True, False, False, True]  # H3: no final clause
    # the boundary: mean exactly at the threshold passes (>=), a seed exactly at 0 is not ahead (> 0)
    edge = pc.Rule(0.03, True, False).passes(np.array([[0.03, 0.03], [0.06, 0.0]]), None)
    assert edge.tolist() == [True, False]


class _Run:
    """Just enough of a RunEvidence for the decision stage's H2 and H3 rules: flat curves at ``level``."""

    def __init__(self, run: str, seed: int, level: dict[str, float], final: float) -> None:
        self.run, self.seed, self.level, self.final_level = run, seed, level, final
        steps = {s: {"t0": None, "t1": None} for s in (0, 20, 40, 60, 80, 100)}
        self.periodic = {regime: steps for regime in level}
        self.final = {"noisy_p025": {"t0": None, "t1": None}, "clean": {"t0": None, "t1": None}}

    def periodic_steps(self, regime: str) -> list[int]:
        return sorted(self.periodic[regime])

    def curve(self, regime: str, steps, tasks) -> np.ndarray:
        return np.full((len(steps), len(tasks)), self.level[regime])

    def final_scores(self, regime: str, tasks) -> np.ndarray:
        return np.full(len(tasks), self.final_level)


@pytest.mark.parametrize(
    "diffs, finals",
    [
        ([0.05, 0.04, 0.035], [0.01, 0.0, 0.02]),
        ([0.05, -0.001, 0.07], [0.01, 0.0, 0.02]),
        ([0.02, 0.03, 0.025], [0.01, 0.0, 0.02]),
        ([0.05, 0.04, 0.035], [-0.05, 0.0, 0.02]),
        ([0.06, 0.055, 0.05, 0.07], [0.01, 0.01, 0.0, 0.0]),
    ],
)
def test_the_vectorised_rule_is_the_decision_stages(diffs, finals) -> None:
    """hypothesis_h2 and hypothesis_h3 on seed pairs with these differences give the verdict Rule gives."""
    from paired_rollouts.stats.decisions import hypothesis_h2, hypothesis_h3

    rules = load_rules(RULES)
    pairs = [
        (
            _Run(f"p{k}", k, {"at_training": 0.5 + d, "challenge": 0.5 + d}, 0.6 + f),
            _Run(f"i{k}", k, {"at_training": 0.5, "challenge": 0.5}, 0.6),
        )
        for k, (d, f) in enumerate(zip(diffs, finals, strict=True))
    ]
    d, f = np.array([diffs]), np.array([finals])
    h2 = hypothesis_h2(pairs, "C2", rules)
    assert h2["passes"] == bool(pc.rule_of("H2a", rules).passes(d, f)[0]), h2["rule"]
    h3 = hypothesis_h3(pairs, rules)
    assert h3["passes"] == bool(pc.rule_of("H3", rules).passes(d, None)[0]), h3["rule"]


# ---------------------------------------------------------------- hand-computed power


def test_no_spread_gives_power_zero_or_one() -> None:
    rule = pc.Rule(0.05, True, False)
    counts = pc.power_cell(
        rule,
        (0.0538, None),
        np.zeros((3, 1)),
        "surrogate",
        3,
        [0.5, 0.9, 1.0, 2.0],
        50,
        np.random.default_rng(0),
    )
    assert counts["rule"] == [0, 0, 50, 50] and counts["without_every_seed"] == [0, 0, 50, 50]


def test_zero_effect_gives_the_rules_false_positive_rate() -> None:
    """At effect 0 with a normal spread of SD s, the mean clause alone passes with 1 - Phi(t sqrt(n) / s);
    the every-seed clause can only lower it."""
    sd, n, draws = 0.0335, 3, 20000
    residuals = np.array([[-sd], [0.0], [sd]])  # sample SD (ddof 1) exactly sd
    counts = pc.power_cell(
        pc.Rule(0.03, True, False),
        (0.037, None),
        residuals,
        "paper_normal",
        n,
        [0.0],
        draws,
        np.random.default_rng(1),
    )
    expected = 0.5 * math.erfc(0.03 * math.sqrt(n) / sd / math.sqrt(2))
    observed = counts["without_every_seed"][0] / draws
    assert abs(observed - expected) < 4 * math.sqrt(expected * (1 - expected) / draws), (observed, expected)
    assert counts["rule"][0] <= counts["without_every_seed"][0]


def test_every_seed_clause_loses_power_as_seeds_grow_on_a_hand_case() -> None:
    """Seeds worth -0.01, +0.08, +0.08 (effect 0.05 plus residuals -0.06, 0.03, 0.03): every seed is ahead
    with probability (2/3)^n; the mean reaches 0.03 unless -0.01 is drawn twice of 2 (8/9 pass) or twice
    or more of 3 (20/27 pass). The clause costs more power at n=3 than at n=2."""
    residuals = np.array([[-0.06], [0.03], [0.03]])
    rule, draws = pc.Rule(0.03, True, False), 20000
    exact = {2: (4 / 9, 8 / 9), 3: (8 / 27, 20 / 27)}
    for n, (with_clause, without) in exact.items():
        counts = pc.power_cell(
            rule, (0.05, None), residuals, "surrogate", n, [1.0], draws, np.random.default_rng(n)
        )
        for got, want in ((counts["rule"][0], with_clause), (counts["without_every_seed"][0], without)):
            assert abs(got / draws - want) < 4 * math.sqrt(want * (1 - want) / draws), (n, got, want)


# ---------------------------------------------------------------- the paper's numbers


def test_the_paper_effects_are_its_published_means() -> None:
    h2a = pc.published_evidence(PUBLISHED, pc.TARGETS["H2a"])
    assert h2a.differences.tolist() == [0.0539, -0.0016, 0.0586]
    assert round(h2a.effect()[0], 3) == 0.037  # Section 6.2: +0.037 AUC
    assert round(100 * h2a.effect()[1], 1) == 5.1  # Section 6.2: +5.1 points final success
    assert round(100 * pc.published_evidence(PUBLISHED, pc.TARGETS["H3"]).effect()[0], 1) == 5.4  # +5.4
    h2b = pc.published_evidence(PUBLISHED, pc.TARGETS["H2b"])
    assert h2b.differences.tolist() == [0.0008, 0.0203, -0.0133]


def test_register_at_the_paper_effect_matches_hand_computed_power(tmp_path) -> None:
    """Resampling the paper's own seeds at its effect redraws its seeds: H2a passes only when seed 1
    (-0.0016) is never drawn, (2/3)^n; H3 (seeds 0.0729, 0.0156, 0.0729: all ahead) when its mean stays
    >= 0.05, i.e. seed 1 is drawn at most once of 3: 20/27."""
    draws = 20000
    path = power_curves_register(tmp_path, draws)
    register = json.loads(path.read_text())
    at = register["multipliers"].index(1.0)
    h2a = register["hypotheses"]["H2a"]["power"]["paper"]
    h3 = register["hypotheses"]["H3"]["power"]["paper"]
    for got, want in (
        (h2a["3"]["rule"][at], (2 / 3) ** 3),
        (h2a["16"]["rule"][at], (2 / 3) ** 16),
        (h3["3"]["rule"][at], 20 / 27),
    ):
        assert abs(got - want) < 4 * math.sqrt(want * (1 - want) / draws) + 1e-9, (got, want)
    # the clause loses power as seeds grow (the answer in the README), the rule without it gains
    normal = register["hypotheses"]["H2a"]["power"]["paper_normal"]
    assert normal["32"]["rule"][at] < normal["3"]["rule"][at] < normal["3"]["without_every_seed"][at]
    assert normal["32"]["without_every_seed"][at] > normal["3"]["without_every_seed"][at]
    assert max(register["hypotheses"]["H2b"]["power"]["paper"]["3"]["rule"]) < 0.01
    assert register["hypotheses"]["H2a"]["surrogate"]["seed_pairs"] == 2


# ---------------------------------------------------------------- register, reader, command


def test_reader_recomputes_and_refuses_a_tampered_register(tmp_path) -> None:
    from paired_rollouts.records import read_power_curves

    path = power_curves_register(tmp_path)
    curves = read_power_curves(path)
    assert curves.hypotheses["H3"].curve("paper", 3)[curves.at_paper] > 0.5
    data = json.loads(path.read_text())
    cell = data["hypotheses"]["H2a"]
    cell["passes_counted"]["paper"]["3"]["rule"][4] += 1  # consistent count and power, not recomputed
    cell["power"]["paper"]["3"]["rule"][4] = cell["passes_counted"]["paper"]["3"]["rule"][4] / data["draws"]
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data))
    with pytest.raises(UserError, match="not its recomputation") as info:
        read_power_curves(tampered)
    assert str(info.value).startswith(str(tampered)) and "\n" not in str(info.value)
    cell["power"]["paper"]["3"]["rule"][4] = 0.123  # power not its count over the draws
    tampered.write_text(json.dumps(data))
    with pytest.raises(UserError, match="not passes_counted / draws"):
        read_power_curves(tampered)
    c2 = tmp_path / "c2.json"  # an input changed since
    c2.write_text(c2.read_text().replace('"H2a"', '"H2a" ', 1))
    with pytest.raises(UserError, match=r"c2\.json changed since"):
        read_power_curves(path)
    assert read_power_curves(path, recompute=False).draws == 400


def test_command_writes_the_register_and_refuses_bad_inputs(tmp_path, capsys) -> None:
    from paired_rollouts.cli import main

    c2, c4 = decisions(tmp_path)
    out = tmp_path / "pc.json"
    base = ["surrogate", "power-curves", "--rules", str(RULES), "--published", str(PUBLISHED)]
    settings = ["--settings", json.dumps({"surrogate": {"power_draws": 300}})]
    assert main([*base, "--decisions", str(c2), str(c4), *settings, "--out", str(out)]) == 0
    register = json.loads(out.read_text())
    assert register["draws"] == 300 and register["pairs"] == [3, 5, 8, 16, 32]
    assert register["multipliers"] == [k / 4 for k in range(9)] and "H2a paper:" in capsys.readouterr().out
    again = tmp_path / "b.json"
    assert main([*base, "--decisions", str(c2), str(c4), "--draws", "300", "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()  # seeded: the same bytes again
    with pytest.raises(UserError, match="no decision register of C4"):
        pc.power_curves([c2], RULES, PUBLISHED, draws=10)
    data = json.loads(c4.read_text())
    data["rules_sha256"] = "0" * 64
    c4.write_text(json.dumps(data))
    # the rules file it names is here with another sha256: its reader refuses it
    with pytest.raises(UserError, match=r"c4\.json: .*decided under other rules"):
        pc.power_curves([c2, c4], RULES, PUBLISHED, draws=10)
    # decided under rules that are not at hand: read as written, but not the rules the curves are given
    data["rules_source"] = str(tmp_path / "elsewhere" / "decision_rules.yaml")
    c4.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"c4\.json: decided with rules of sha256 0+,"):
        pc.power_curves([c2, c4], RULES, PUBLISHED, draws=10)


def test_table_19_shows_the_registers_numbers_at_the_paper_effect(tmp_path) -> None:
    from paired_rollouts.render import tables

    path = power_curves_register(tmp_path)
    register = json.loads(path.read_text())
    at = register["multipliers"].index(1.0)
    text = tables.render_table(19, {"power_curves": [path]}, "tiny surrogate")
    rows = [line for line in text.splitlines() if line.startswith("H2a & ")]
    assert len(rows) == 2 and "registered rule" in rows[0] and "without every-seed clause" in rows[1]
    cells = rows[0].rstrip(" \\").split(" & ")[3:]
    expected = [
        f"{register['hypotheses']['H2a']['power'][s][str(n)]['rule'][at]:.3f}"
        for s in ("surrogate", "paper", "paper_normal")
        for n in (3, 16)
    ]
    assert cells == expected
    assert text.count("$+$0.037") == 2
