"""A register that states a verdict, a share or a summary is read only when that statement follows from
the numbers it holds (or the registers it names): an edited ``passes``, ``decided``, power, share,
summary or total is refused with one line naming the file, before any table, figure or later register
takes it up (docs/records.md section 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from paired_rollouts import records
from paired_rollouts.errors import UserError
from paired_rollouts.render import tables

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "tests" / "fixtures" / "render" / "results"
C2 = RES / "decisions" / "c2.json"


def _edited(tmp_path: Path, source: Path, edit: Any, name: str | None = None) -> Path:
    data = json.loads(source.read_text())
    edit(data)
    out = tmp_path / (name or source.name)
    out.write_text(json.dumps(data))
    return out


def _set(*path: str, value: Any) -> Any:
    def edit(data: dict[str, Any]) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return edit


@pytest.fixture(autouse=True)
def _at_the_root(monkeypatch):
    # registers name their inputs relative to the repository root (rules_source, power's decisions)
    monkeypatch.chdir(ROOT)


# ---------------------------------------------------------------- decision registers


def test_the_fixture_registers_are_read():
    for path in sorted((RES / "decisions").glob("*.json")):
        if path.name.startswith(("c2", "c4")):
            records.read_decision_register(path)
    records.read_power_table(RES / "decisions" / "power.json")


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        # the rule's mean criterion fails (mean below the threshold): a pass does not follow
        (_set("H2a", "passes", value=True), "H2a.passes is True"),
        # ... nor when the criterion is edited with it
        (
            lambda d: (
                _set("H2a", "passes", value=True)(d),
                _set("H2a", "rule", "mean_criterion", value=True)(d),
            ),
            "H2a.rule.mean_criterion is True",
        ),
        (_set("H3", "passes", value=True), "H3.passes is True"),
        (_set("H5", "passes", value=False), "H5.passes is False"),
        (_set("H1a", "passes", value=False), "H1a.passes is False"),
        # a seed-sharing verdict edited with everything that follows from it: its counts still say otherwise
        (
            lambda d: (
                _set("H1a", "seed_sharing", "c2-paired-s0", "passes", value=False)(d),
                _set("H1a", "runs", "c2-paired-s0", "sharing_criterion", value=False)(d),
                d["H1a"].update(runs_meeting_sharing=d["H1a"]["runs_meeting_sharing"] - 1, passes=False),
            ),
            "H1a.seed_sharing.c2-paired-s0: passes is False with 0 of 32 groups breaking the rule",
        ),
        (
            _set("H1a", "seed_sharing", "c2-independent-s1", "groups_with_several_seeds", value=31),
            "H1a.seed_sharing.c2-independent-s1: 0 groups with one seed and 31 with several are not its 32",
        ),
        # partial evidence: a problem under 'missing' or a seed pair short of the design decides nothing
        (lambda d: d["missing"].append("c2-paired-s1: completeness check failed"), "decided is true"),
        (lambda d: d.update(seed_pairs=d["seed_pairs"][:1], seeds=d["seeds"][:1]), "decided is true"),
        (lambda d: d.update(decided=False, complete=False), "decided is false"),
    ],
)
def test_a_verdict_that_its_numbers_do_not_bear_out_is_refused(tmp_path, edit, says):
    path = _edited(tmp_path, C2, edit)
    with pytest.raises(UserError) as err:
        records.read_decision_register(path)
    assert str(err.value).startswith(f"{path}: {says}") and "paired-rollouts decide" in str(err.value)
    assert "\n" not in str(err.value)
    # table 2 shows no verdict it cannot recompute
    with pytest.raises(UserError):
        tables.render_table(2, {"decisions": [path]}, "s")


def test_undecided_register_with_verdicts_is_refused(tmp_path):
    """What the writer never writes: a register short of the design that still passes or misses."""
    path = _edited(
        tmp_path,
        C2,
        lambda d: d.update(decided=False, complete=False, missing=["c2-paired-s1: not admitted"]),
    )
    with pytest.raises(UserError, match="on evidence that decides nothing"):
        records.read_decision_register(path)


# ---------------------------------------------------------------- power table


def test_power_table_power_is_its_counts_over_the_draws(tmp_path):
    path = _edited(
        tmp_path, RES / "decisions" / "power.json", _set("hypotheses", "H2a", "power", "3", value=0.9)
    )
    with pytest.raises(UserError, match="H2a.power is not passes_counted / draws"):
        records.read_power_table(path)
    with pytest.raises(UserError):
        tables.render_table(13, {"power": [path]}, "s")


def test_power_table_passes_full_is_the_named_decision_registers(tmp_path):
    path = _edited(
        tmp_path, RES / "decisions" / "power.json", _set("hypotheses", "H2a", "passes_full", value=True)
    )
    with pytest.raises(UserError, match="H2a.passes_full is true, but .*c2.json says passes: False"):
        records.read_power_table(path)


# ---------------------------------------------------------------- group statistics


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_set("seed_sharing", "passes", value=False), "seed_sharing.passes is False"),
        (_set("zero_variance_frac", value=0.999), "zero_variance_frac 0.999"),
        (_set("spurious_among_all_correct", value=0.5), "spurious_among_all_correct 0.5"),
    ],
)
def test_group_statistics_shares_and_sharing_verdict_are_their_counts(tmp_path, edit, says):
    source = RES / "runs" / "c2-paired-s0" / "group_stats.json"
    records.read_group_stats(source)
    path = _edited(tmp_path, source, edit)
    with pytest.raises(UserError, match=f"^{path}: {says}"):
        records.read_group_stats(path)


# ---------------------------------------------------------------- comparison, ledger, verification


def _comparison(summary: dict[str, int]) -> dict[str, Any]:
    from paired_rollouts.compare.published import PINNED_SHA256

    statuses = ["reproduced", "differs", "not computed", "differs"]
    reproduced = {"reproduced": (0.5, True, 0.0), "differs": (1.0, False, 0.5), "not computed": (None,) * 3}
    entries = [
        {"id": f"h.{i}", "status": s, "published": 0.5, "unit": "fraction", "rounding": 0.1, "op": "value"}
        | dict(zip(("reproduced", "agrees", "difference"), reproduced[s], strict=True))
        | {"reason": "cannot be computed at tiny surrogate scale" if s == "not computed" else None}
        for i, s in enumerate(statuses)
    ]
    return {
        "published_source": "elsewhere/paper.yaml",  # not at hand: the rows are checked on their own
        "published_sha256": PINNED_SHA256["paper.yaml"],
        "entries": entries,
        "summary": summary,
        "mismatch_expected": True,
        "scale": "tiny_surrogate",
        "scale_label": "tiny surrogate",
    }


def test_comparison_summary_is_its_entries_count(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_comparison({"entries": 4, "reproduced": 1, "differs": 2, "not computed": 1})))
    assert records.read_comparison(good).summary.reproduced == 1
    bad = tmp_path / "comparison.json"
    bad.write_text(json.dumps(_comparison({"entries": 4, "reproduced": 4, "differs": 0, "not computed": 0})))
    with pytest.raises(UserError, match=f"^{bad}: summary says 4 entries"):
        records.read_comparison(bad)


def _cost(jobs: int, wall: float, cpu: float, rss: float) -> dict[str, Any]:
    return {"jobs": jobs, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": rss, "gpu_hours": None}


def _ledger(total: dict[str, Any]) -> dict[str, Any]:
    return {
        "accelerator": "cpu",
        "stages": {"decide": _cost(2, 1.5, 1.0, 80.0), "render": _cost(3, 2.25, 2.0, 120.0)},
        "runs": {},
        "total": total,
        "runs_in_study": None,
        "gpu_hours_per_run": None,
        "published_budget": None,
    }


def test_ledger_total_is_its_stages_sum(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_ledger(_cost(5, 3.75, 3.0, 120.0))))
    assert records.read_ledger(good).total.jobs == 5
    bad = tmp_path / "ledger.json"
    bad.write_text(json.dumps(_ledger(_cost(1, 1.0, 3.0, 120.0))))
    with pytest.raises(UserError, match=f"^{bad}: total is not the sum of its stages"):
        records.read_ledger(bad)


@pytest.mark.parametrize(
    "edit",
    [
        _set("failures", value=["prereg/PREREGISTRATION.md: sha256 differs from the freeze"]),
        lambda d: d["documents"][0].update(matches=False),
    ],
)
def test_verification_passes_only_with_no_failure_and_every_check_verified(tmp_path, edit):
    source = RES / "prereg" / "verification.json"
    assert records.read_verification(source).passes
    path = _edited(tmp_path, source, edit)
    with pytest.raises(UserError, match=f"^{path}: passes is true with"):
        records.read_verification(path)


# ---------------------------------------------------------------- curves registers, as render reads them


def test_render_refuses_curves_means_that_its_run_registers_do_not_give(tmp_path):
    """Table 8 showed an edited C4 paired mean beside the seeds' own values (whose mean it is not)."""
    from records_fixtures import synthetic_study

    study = synthetic_study(tmp_path)
    given = {"registers": study["registers"], "curves": study["curves"]}
    tables.render_table(8, given, "s")
    c4 = next(p for p in study["curves"] if p.stem == "c4")
    data = json.loads(c4.read_text())
    data["arms"]["paired"]["final"]["clean"] = 0.1234
    c4.write_text(json.dumps(data))
    with pytest.raises(UserError, match=f"^{c4}: arms.paired.final is not what its run registers give"):
        tables.render_table(8, given, "s")


# ---------------------------------------------------------------- probe register (H1b)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_set("verdict", "passes", value=False), "verdict.passes is False"),
        (_set("verdict", "transition_wins", value=0), "verdict.transition_wins is 0"),
    ],
)
def test_probe_verdict_is_its_checkpoints(tmp_path, edit, says):
    source = RES / "probe" / "c2-paired-s0.json"
    assert records.read_probe_register(source).need_verdict().passes is True
    path = _edited(tmp_path, source, edit)
    with pytest.raises(UserError, match=f"^{path}: {says}, its checkpoints give"):
        records.read_probe_register(path)


def test_predictions_counts_are_the_tally_of_its_verdicts(tmp_path):
    from records_fixtures import predictions_register

    source = tmp_path / "predictions.json"
    decisions = [RES / "decisions" / "c2.json", RES / "decisions" / "c4.json"]
    predictions_register(decisions, [RES / "probe" / "c2-paired-s0.json"], source)
    records.read_predictions(source)
    path = _edited(tmp_path, source, lambda d: d["counts"].update(met=d["counts"].get("met", 0) + 3))
    with pytest.raises(UserError, match=f"^{path}: counts .* is not the tally of its predictions' verdicts"):
        records.read_predictions(path)


# ---------------------------------------------------------------- zero-shot calibration gate


def test_zero_shot_gate_refuses_bands_other_than_the_rules_it_names(tmp_path):
    """A missed clean-success band edited (target and status together) into a pass used to open the gate."""
    from paired_rollouts.calibration.zero_shot import build_register, gate
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_tier_rules

    rules = "prereg/tier_rules.yaml"
    register = build_register(
        load_tier_rules(rules)["calibration"],
        "Qwen/Qwen3.5-2B",
        {"successes": 70, "episodes": 100, "tasks": 50},  # 0.70: below the registered band
        {"lam": 0.3, "ci95": [0.2, 0.4], "tasks": 4, "tasks_defined": 4, "K": 4, "M": 4, "defects": []},
        rules={"path": rules, "sha256": sha256_file(rules), "verification": None},
        evidence={},
    )
    assert register["status"] == "fail"
    band = next(b for b in register["bands"] if b["name"] == "clean_success")
    band.update(target={"low": 0.65, "high": 0.9}, passes=True, status="pass")
    register.update(status="pass", passes=True)
    path = tmp_path / "zero_shot.json"
    path.write_text(json.dumps(register))
    with pytest.raises(UserError, match=f"^{path}: not the bands of prereg/tier_rules.yaml"):
        gate(path)


def _judged(tmp_path: Path) -> Path:
    """A predictions register as ``paired-rollouts predictions`` writes it, with the inputs it names."""
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_tier_rules
    from paired_rollouts.stats.curves import round4
    from paired_rollouts.stats.predictions import judge

    rules = "prereg/tier_rules.yaml"
    decisions = [f"tests/fixtures/render/results/decisions/{c}.json" for c in ("c2", "c4")]
    probes = ["tests/fixtures/render/results/probe/c2-paired-s0.json"]
    register = judge(
        load_tier_rules(rules),
        {Path(p).stem: records.read_decision_register(p) for p in decisions},
        {Path(p).stem: records.read_probe_register(p) for p in probes},
        4,
        source=rules,
    )
    register["tier_rules"] = rules
    register["inputs"] = {
        "decisions": {p: sha256_file(p) for p in decisions},
        "probes": {p: sha256_file(p) for p in probes},
        "tier_rules_sha256": sha256_file(rules),
        "group_size": 4,
    }
    path = tmp_path / "judged.json"
    path.write_text(json.dumps(round4(register)))
    return path


def test_predictions_verdicts_are_judged_again_from_the_inputs_they_name(tmp_path):
    """A missed prediction edited into met (counts made to agree) used to reach table 6."""
    source = _judged(tmp_path)
    records.read_predictions(source)
    data = json.loads(source.read_text())
    row = next(p for p in data["predictions"] if p["verdict"] in ("met", "missed"))
    row["verdict"] = "missed" if row["verdict"] == "met" else "met"
    data["counts"] = {v: sum(p["verdict"] == v for p in data["predictions"]) for v in data["counts"]}
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=f"^{path}: predictions is not what its inputs give \\({row['id']} "):
        records.read_predictions(path)
    with pytest.raises(UserError):
        tables.render_table(6, {"predictions": [path]}, "s")
