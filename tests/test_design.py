"""The study's design as data (paired_rollouts.design): conditions, run names, regimes, the run matrix and
its comparisons, and what the registered tiers plan from configuration alone (dry runs only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.noise.seeds import training_schedule_seed
from test_workflow import job_counts
from workflow_runs import REPO, copy_repo, snakemake

CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
PAPER_HOURS_PER_RUN = 16.3  # the paper's measured H100 time per run (460 s per step, evaluations included)


def test_config_conditions_are_the_registered_ones() -> None:
    """The config's conditions block is read (not only validated) and agrees with the registered values."""
    conditions = design.parse_conditions(CONFIG["conditions"], "config/config.yaml")
    assert conditions == design.PAPER_CONDITIONS
    assert (
        conditions["C2r"].mixture == "outage_free"
        and conditions["C3"].q == 0.05
        and conditions["C1"].p == 0.10
    )


@pytest.mark.parametrize(
    "block, needle",
    [
        ({"C2": {"p": 0.30, "q": 0.0}}, "registered condition"),
        ({"C5": {"p": 0.1, "q": 0.1}}, "not both"),
        ({"C5": {"p": 0.0, "q": 0.1, "mixture": "outage_free"}}, "needs transition noise"),
        ({"C5": {"p": 0.1, "q": 0.0, "mixture": "loud"}}, "unknown mixture"),
        ({"x5": {"p": 0.1, "q": 0.0}}, "condition name"),
    ],
)
def test_bad_conditions_are_refused_with_one_line(block, needle) -> None:
    with pytest.raises(UserError, match=needle):
        design.parse_conditions(block, "config/config.yaml")


def test_conditions_come_inline_or_from_a_file_as_settings_do(tmp_path) -> None:
    """``--conditions`` takes the block as JSON or as @FILE (JSON or YAML), like ``--settings``; a file or
    text that is not such a block is one line naming it."""
    path = tmp_path / "conditions.yaml"
    path.write_text(yaml.safe_dump(CONFIG["conditions"]))
    inline = design.parse_conditions(json.dumps(CONFIG["conditions"]))
    assert design.parse_conditions(f"@{path}") == inline == design.PAPER_CONDITIONS
    path.write_text("C2: {p: 0.25\n")
    for raw, needle in (
        (f"@{path}", f"conditions file {path}: not valid YAML (line 2"),
        ('{"C2": ', "not valid JSON"),
    ):
        with pytest.raises(UserError, match=re.escape(needle)) as caught:
            design.parse_conditions(raw)
        assert "\n" not in str(caught.value)


def test_final_sets_add_the_at_training_set_only_for_nonstandard_noise() -> None:
    own = {name for name, c in design.PAPER_CONDITIONS.items() if c.needs_at_training_final()}
    assert own == {"C2r", "C3", "C4"}
    assert design.learning_sets(design.PAPER_CONDITIONS["C1"]) == {
        "validation": "at_training",
        "final": "noisy_p010",
    }
    assert design.learning_sets(design.PAPER_CONDITIONS["C2r"])["final"] == "at_training"
    assert design.learning_sets(design.PAPER_CONDITIONS["C3"]) == {"validation": "clean", "final": "clean"}


def test_diagnostics_use_the_runs_own_mixture() -> None:
    """C2r's luck share is measured without outages; outcome-noise and clean runs use the default mixture."""
    c2r = design.regime_noise("diag", design.PAPER_CONDITIONS["C2r"])
    c4 = design.regime_noise("diag", design.PAPER_CONDITIONS["C4"])
    assert c2r.p == c4.p == 0.25
    assert "outage" not in c2r.weights and c4.weights["outage"] == 0.10


@pytest.mark.parametrize(
    "name, ident",
    [
        ("c2-paired-s0", ("C2", "paired", 0, "group")),
        ("c2r-independent-s11", ("C2r", "independent", 11, "group")),
        ("c4-paired-scale_none-s1", ("C4", "paired", 1, "none")),
        ("c2-blocking_paired-s3", ("C2", "blocking_paired", 3, "group")),
    ],
)
def test_run_names_round_trip(name, ident) -> None:
    run = design.parse_run(name)
    assert (run.condition, run.arm, run.seed, run.scaling) == ident
    assert run.name == name


@pytest.mark.parametrize(
    "name",
    ["c2-paired", "c2-lucky-s0", "c4-paired-scale_half-s0", "c0-paired-s0", "c2-clean-s0", "C2_paired_0"],
)
def test_bad_run_names_are_refused(name) -> None:
    with pytest.raises(UserError):
        design.parse_run(name)


def test_a_run_name_is_checked_against_the_designs_conditions() -> None:
    """One parser: given the design's conditions it refuses a condition outside them and an arm that does
    not fit a user-added condition's kind; without them any condition of the grammar is taken."""
    with_c5 = {**design.PAPER_CONDITIONS, "C5": design.Condition("C5", 0.0, 0.0)}
    assert design.parse_run("c5-clean-s3", with_c5) == design.RunId("C5", "clean", 3)
    with pytest.raises(UserError, match="a clean condition goes with arm 'clean'"):
        design.parse_run("c5-paired-s0", with_c5)
    with pytest.raises(UserError, match="unknown condition C5; the design has C0, C1"):
        design.parse_run("c5-clean-s0", design.PAPER_CONDITIONS)
    assert design.parse_run("c5-paired-s0").condition == "C5"
    assert design.parse_run("c4-blocking-scale_none-s2").to_dict() == {
        "condition": "C4",
        "arm": "blocking",
        "seed": 2,
        "scaling": "none",
    }


def test_tier_one_decides_c2_and_c4() -> None:
    """The conditions whose comparison the frozen rules decide, written once (decide, stats, power, rules)."""
    assert design.decided_comparisons() == ("C2", "C4")
    paper = design.Design.from_config(CONFIG, "paper")
    decided = [c for c in paper.comparisons() if c.tier == 1]
    assert [c.condition for c in decided] == list(design.decided_comparisons())
    assert all(c.arms == ("paired", "independent") for c in decided)


def test_the_paper_matrix_and_its_comparisons() -> None:
    paper = design.Design.from_config(CONFIG, "paper")
    assert len(paper.run_names("study")) == 14 and len(paper.run_names("tiers")) == 24
    study = {c.name: c for c in paper.comparisons("study")}
    assert set(study) == {"c2", "c4"}
    assert study["c2"].hypotheses == ("H1a", "H2a", "H3", "H5") and study["c4"].hypotheses == ("H1a", "H2b")
    tiers = {c.name: c for c in paper.comparisons("tiers")}
    assert set(tiers) == {"c1", "c2r", "c3", "c4-scale_none", "c2-blocking", "c4-blocking"}
    assert all(c.seeds == (0, 1) for c in tiers.values())
    assert tiers["c2-blocking"].pair(1)[0].name == "c2-blocking_paired-s1"
    assert tiers["c4-scale_none"].pair(0)[1].name == "c4-independent-scale_none-s0"


def test_a_run_listed_twice_is_refused() -> None:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["scales"].update(yaml.safe_load((REPO / ".test/config/config.yaml").read_text())["scales"])
    config["scales"]["tiny"]["tiers"] = [{"condition": "C2", "seeds": [0]}]
    with pytest.raises(UserError, match="listed twice"):
        design.Design.from_config(config, "tiny")


def test_blocking_rows_are_clean_and_noisy_twins_of_one_source_row() -> None:
    from paired_rollouts.backoffice.tasks import load_pool
    from paired_rollouts.training.rows import build_rows

    tasks = load_pool(REPO / "data/tasks/train.jsonl")[:7]
    rows = build_rows(tasks, "C2", "blocking_paired", 3, steps=2, prompts_per_step=4)
    assert [r["row_index"] for r in rows] == list(range(8))
    for clean, noisy in zip(rows[0::2], rows[1::2], strict=True):
        assert clean["task_id"] == noisy["task_id"] and clean["schedule_seed"] == noisy["schedule_seed"]
        assert '"p": 0.0' in clean["noise"] and '"p": 0.25' in noisy["noise"]
        assert noisy["schedule_seed"] == training_schedule_seed(3, "C2", noisy["source_row"])
    assert [r["step"] for r in rows] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_unscaled_advantages_are_centred_but_not_divided() -> None:
    from paired_rollouts.surrogate.trainer import group_advantages

    scaled, unscaled = group_advantages([1.0, 0.0, 0.0, 0.0]), group_advantages([1.0, 0.0, 0.0, 0.0], "none")
    assert unscaled == [0.75, -0.25, -0.25, -0.25]
    assert abs(scaled[0] - 0.75 / (0.5 + 1e-4)) < 1e-12


def test_paper_tiers_plan_the_gpu_dag() -> None:
    """At paper scale the same configuration plans the tiers' GPU jobs: 24 tier trainings on top of tier 1's
    14 (the tiers' decisions also read tier 1's registers), one measurement per comparison."""
    result = snakemake("--profile", "h100", "-n", "--forceall", "tiers")
    counts = job_counts(result.stdout + result.stderr)
    assert counts["train"] == 14 + 24
    assert (
        counts["decide_tier"] == 6
        and counts["predictions_tiers"] == 1
        and counts["render_tiers_document"] == 1
    )
    # C2r, C3 and the C4 cells (blocking, unscaled) add their own at-training final set.
    assert counts["evaluate_final_own_noise"] == 6 + 4 + 4 + 4 + 4
    assert counts["zero_shot_calibration"] == 1


def test_readme_states_the_tiers_gpu_hours() -> None:
    """The README's estimate is the paper's 16.3 h per run times the tier runs the configuration plans."""
    paper = design.Design.from_config(CONFIG, "paper")
    readme = (REPO / "README.md").read_text()
    total = round(len(paper.run_names("tiers")) * PAPER_HOURS_PER_RUN, 1)
    assert f"{total:.1f} GPU-hours" in readme, total
    for cell in paper.cells_of("tiers"):
        runs = len(cell.runs())
        assert re.search(rf"{cell.condition}\b.*\| {runs} \| {runs * PAPER_HOURS_PER_RUN:.1f} \|", readme), (
            cell
        )


def test_a_new_condition_needs_only_the_config(tmp_path: Path) -> None:
    """Adding a condition and a tier cell in config/config.yaml gives its runs, evaluations, measurement
    and table rows, with no code change."""
    work = copy_repo(tmp_path)
    path = work / "config/config.yaml"
    data = yaml.safe_load(path.read_text())
    data["conditions"]["C5"] = {"p": 0.15, "q": 0.0}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    test_path = work / ".test/config/config.yaml"
    test = yaml.safe_load(test_path.read_text())
    test["scales"]["tiny"]["tiers"] = [{"condition": "C5", "seeds": [0, 1]}]
    test_path.write_text(yaml.safe_dump(test, sort_keys=False))
    result = snakemake(
        "--profile", "cpu", "-n", "--forceall", "tiers", "--configfile", ".test/config/config.yaml", cwd=work
    )
    text = result.stdout + result.stderr
    counts = job_counts(text)
    assert counts["decide_tier"] == 1 and counts["render_tiers_document"] == 1
    for run in ("c5-paired-s0", "c5-independent-s0", "c5-paired-s1", "c5-independent-s1"):
        assert f"results/tiny/runs/{run}/manifest.json" in text, run
    assert "results/tiny/decisions/tiers/c5.json" in text
    # C5 is transition noise at p = 0.15: none of the final regimes, so it adds its at-training set.
    assert "results/tiny/evals/c5-paired-s0/final-step2-at_training.jsonl" in text
    assert counts["train"] == 5 + 4  # tier 1's five tiny runs feed the reference and the predictions
