"""The results layout of a scale (paired_rollouts.layout): the paper's paths and step sets, the
surrogate's job chunks and settings, and the checks that stop a dry run, each written once."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml
from paired_rollouts import layout
from paired_rollouts.errors import UserError
from paired_rollouts.settings import stage_settings

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
TEST_CONFIG = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())


def _config() -> dict:
    config = copy.deepcopy(CONFIG)
    config["scales"].update(copy.deepcopy(TEST_CONFIG["scales"]))
    return config


def test_the_papers_layout() -> None:
    """Paper scale: results/ root, checkpoints 0-100 every 20 plus the diagnostic step 50 and the probe
    steps, 3 periodic sets x 6 steps + 5 final sets (C4 adds its own at-training set)."""
    paper = layout.Layout.from_config(CONFIG, "paper", "h100")
    assert paper.root == "results" and paper.final_step == 100
    assert paper.periodic_steps() == [0, 20, 40, 60, 80, 100]
    assert paper.diagnostic_steps("c2-paired-s0") == [0, 50, 100]
    assert paper.diagnostic_steps("c2-paired-s1") == [0, 100]
    assert paper.extra_checkpoint_steps() == [50]
    assert len(paper.eval_files("c2-paired-s0")) == 18 + 5
    assert len(paper.eval_files("c4-paired-s0")) == 18 + 6
    assert paper.eval_files("c2-paired-s0")[0] == "results/evals/c2-paired-s0/periodic-step0-clean.jsonl"
    assert paper.eval_files("c2-paired-s0")[-1] == "results/evals/c2-paired-s0/final-step100-challenge.jsonl"
    assert paper.luck_files("c2-paired-s0")[1] == "results/diagnostics/c2-paired-s0/luck-step50.json"
    assert paper.runs("study") == [
        *(f"c2-{arm}-s{s}" for s in range(3) for arm in ("paired", "independent")),
        *(f"c4-{arm}-s{s}" for s in range(3) for arm in ("paired", "independent")),
        "c0-clean-s0",
        "c0-clean-s1",
    ]
    assert paper.decision_files() == ["results/decisions/c2.json", "results/decisions/c4.json"]
    assert len(paper.tier_decision_files()) == 6
    assert layout.Layout.from_config(CONFIG, "surrogate", "cpu").root == "results/surrogate"


def test_surrogate_jobs_are_chunks_of_eight_seeds() -> None:
    surrogate = layout.Layout.from_config(CONFIG, "surrogate", "cpu")
    jobs = surrogate.surrogate_jobs("study")
    assert len(jobs) == 10  # C2, C4: 2 arms x 2 chunks; C0: 1 arm x 2 chunks
    assert jobs["c2-paired-j1"] == [f"c2-paired-s{s}" for s in range(8, 16)]
    assert sum(len(runs) for runs in jobs.values()) == 80
    assert "c4-independent-scale_none-j0" in surrogate.surrogate_jobs("tiers")
    outputs = surrogate.surrogate_outputs(["c2-paired-s0"])
    assert outputs[:2] == [
        "results/surrogate/runs/c2-paired-s0/groups.jsonl",
        surrogate.manifest("c2-paired-s0"),
    ]
    assert len(outputs) == 2 + 6 * 3 + 5 + 2


def test_the_surrogate_commands_read_their_sections_as_written() -> None:
    """The arm's manifest records the config's sections under the manifests' names; the calibration's
    step-0 sets are the package's, whatever the run shape; a misspelt key names itself."""
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.calibration import estimator_settings
    from paired_rollouts.surrogate.run import manifest_settings

    config = _config()
    given = stage_settings(
        config,
        "surrogate",
        "cpu",
        "training",
        "evaluation",
        "diagnostics",
        "surrogate",
        training={"extra_checkpoint_steps": []},
        diagnostics={"steps": config["scales"]["surrogate"]["diagnostics"]["steps"]},
    )
    flat = manifest_settings(Settings.parse(json.loads(json.dumps(given))))
    assert flat["diag_pool"] == "diagnostic" and flat["diag_schedules"] == 8 and flat["eval_batch"] == 64
    assert flat["diagnostic_steps"] == {"seed0": [0, 100], "other": [0, 100]}
    written = config["scales"]["surrogate"]
    assert flat["train_episodes_seeds"] == [0]
    assert flat["learning_rate"] == written["training"]["learning_rate"]  # the fitted rate
    assert flat["prompts_per_step"] == written["training"]["prompts_per_step"] == 24  # the paper's batch
    calibration = estimator_settings(stage_settings(config, "tiny_surrogate", "cpu", "surrogate"))
    assert calibration == {
        "eval_tasks": 64,
        "diag_pool": "diagnostic",
        "diag_tasks": 16,
        "diag_schedules": 8,
        "diag_samples": 8,
        "task_filter": "all",
        "samples": 8,
    }
    with pytest.raises(UserError, match="surrogate: unknown key"):
        Settings.parse({"surrogate": {"train_episode_seeds": [0]}})


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda s: s["probe"]["trajectories"]["a"].update(run="c2-paired-s9"), "probe.trajectories.a: run"),
        (lambda s: s["diagnostics"]["steps"]["other"].append(99), "diagnostics.steps.other has steps [99]"),
        (lambda s: s["probe"]["trajectories"]["a"]["steps"].append(11), "steps [11] beyond the last"),
    ],
)
def test_layout_check_names_the_key(edit, needle) -> None:
    config = _config()
    edit(config["scales"]["tiny_surrogate"])
    with pytest.raises(UserError, match="config/config.yaml scales.tiny_surrogate") as caught:
        layout.Layout.from_config(config, "tiny_surrogate", "cpu").check()
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    layout.Layout.from_config(_config(), "tiny_surrogate", "cpu").check()  # the unedited config passes


@pytest.mark.parametrize(
    ("folder", "overlapped"),
    [
        ("results/tiny_surrogate", "results/tiny_surrogate/"),  # the scale being run: all its results
        ("results/tiny_surrogate/runs", "results/tiny_surrogate/"),
        ("results/standin", "results/standin/"),  # another scale's results
        ("results/surrogate/", "results/surrogate/"),
        ("results/runs", "results/runs/"),  # the paper scale's (its root is results/ itself)
        ("results/prereg", "results/prereg/a3/"),
    ],
)
def test_freeze_folder_may_not_overlap_a_results_root(folder: str, overlapped: str) -> None:
    """The cpu profile's freeze rule deletes and remakes prereg.local_freeze_dir. Base: the schema and the
    layout check let `results/tiny_surrogate` through, and the freeze job deleted that scale's 612 result
    files before it failed."""
    config = _config()
    config["prereg"]["local_freeze_dir"] = folder
    with pytest.raises(UserError, match=r"^config/config\.yaml: prereg\.local_freeze_dir: ") as caught:
        layout.Layout.from_config(config, "tiny_surrogate", "cpu").check()
    assert f"overlaps {overlapped}," in str(caught.value) and "\n" not in str(caught.value)
    for fine in ("results/prereg/freeze", "results/prereg/freeze-2", "results/freeze"):
        config["prereg"]["local_freeze_dir"] = fine
        layout.Layout.from_config(config, "tiny_surrogate", "cpu").check()


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (lambda c: c.update(decision_rules="prereg/decision_rule.yaml"), "decision_rules"),
        (lambda c: c.update(published="data/published"), "published"),
        (lambda c: c["prereg"]["documents"].append("prereg/NOTES.txt"), "prereg.documents[2]"),
        (lambda c: c["prereg"].update(tier_rules="prereg/tier_rule.yaml"), "prereg.tier_rules"),
    ],
)
def test_a_configured_input_file_that_is_not_there_is_refused(edit, key) -> None:
    """Base: accepted; with the outputs present `snakemake all` said "Nothing to be done" on the mistyped
    decision_rules, and a forced run failed only in the job that read it."""
    config = _config()
    edit(config)
    with pytest.raises(UserError, match=rf"^config/config\.yaml: {re.escape(key)}: ") as caught:
        layout.Layout.from_config(config, "tiny_surrogate", "cpu").check()
    assert "give the path of the committed file" in str(caught.value) and "\n" not in str(caught.value)


def test_gpu_profiles_require_the_papers_pools(tmp_path: Path) -> None:
    layout.require_paper_pools(REPO / "data/tasks", "h100")
    manifest = json.loads((REPO / "data/tasks/MANIFEST.json").read_text())
    manifest["pools"]["test"]["sha256"] = "0" * 64
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    layout.require_paper_pools(tmp_path, "cpu")  # the cpu profile may use them
    with pytest.raises(UserError, match="not the paper's"):
        layout.require_paper_pools(tmp_path, "h100")
    (tmp_path / "MANIFEST.json").write_text("{")
    with pytest.raises(UserError, match=r"MANIFEST\.json:1: not valid JSON .*restore it"):
        layout.require_paper_pools(tmp_path, "mi300x")
    # read through records.read_pool_manifest: a manifest of another shape is one line naming the key
    manifest["pools"]["test"]["sha256"] = 12
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=r"MANIFEST\.json: pools\.test: .*'sha256' is 12") as caught:
        layout.require_paper_pools(tmp_path, "h100")
    assert "\n" not in str(caught.value)


def test_a_missing_scale_block_names_the_config() -> None:
    with pytest.raises(UserError, match=r"^config/config.yaml: scale 'nope' has no block"):
        layout.Layout.from_config(CONFIG, "nope", "cpu")


def test_job_logs_and_benchmarks_name_their_job() -> None:
    """Every rule's log and benchmark come from one helper; the cost ledger reads the job back: its stage
    and the run it names (tier runs too: blocking arms, unscaled rewards)."""
    paper = layout.Layout.from_config(CONFIG, "paper", "h100")
    assert paper.log("train/{run}") == "results/logs/train/{run}.log"
    bench = paper.benchmark("evaluate/c2-paired-s0/final-step100")
    assert bench == "results/benchmarks/evaluate/c2-paired-s0/final-step100.tsv"
    assert paper.benchmark_job(bench) == ("evaluate", "c2-paired-s0")
    assert paper.benchmark_job(paper.benchmark("train/c4-blocking_paired-scale_none-s1")) == (
        "train",
        "c4-blocking_paired-scale_none-s1",
    )
    assert paper.benchmark_job(paper.benchmark("decide/tiers/c2-blocking")) == ("decide", None)
    assert paper.benchmark_job(paper.benchmark("surrogate/arm-c2-paired-j0")) == ("surrogate", None)
    with pytest.raises(UserError, match="not a benchmark file of results/benchmarks"):
        paper.benchmark_job("results/surrogate/benchmarks/train/c2-paired-s0.tsv")


def test_each_decision_reads_its_comparisons_runs() -> None:
    paper = layout.Layout.from_config(CONFIG, "paper", "h100")
    assert (
        paper.comparison_runs("c2")
        == paper.runs_of("C2")
        == [f"c2-{arm}-s{s}" for s in range(3) for arm in ("paired", "independent")]
    )
    assert paper.comparison_runs("c2-blocking") == [
        f"c2-{arm}-s{s}" for s in range(2) for arm in ("blocking_paired", "blocking")
    ]
    assert paper.decided_runs() == paper.runs_of("C2") + paper.runs_of("C4")
    assert paper.first_pair_registers("C2") == [
        "results/runs/c2-paired-s0/register.json",
        "results/runs/c2-independent-s0/register.json",
    ]


@pytest.mark.parametrize(("scale", "accelerator"), [("paper", "h100"), ("surrogate", "cpu"), ("tiny", "cpu")])
def test_every_table_and_figure_names_its_inputs_as_layout_look_ups(scale, accelerator) -> None:
    """One input function serves every render job: each key of every table and figure resolves to files
    of the scale's layout, one file where the key takes one."""
    from paired_rollouts.render.figures import FIGURES
    from paired_rollouts.render.tables import TABLES

    scale_layout = layout.Layout.from_config(_config(), scale, accelerator)
    for name, spec in [*TABLES.items(), *FIGURES.items()]:
        for key, key_spec in spec.keys.items():
            files = key_spec.files(scale_layout)
            assert files and all(isinstance(f, str) for f in files), (name, key)
            assert key_spec.many or len(files) == 1, (name, key, files)
    assert TABLES[8].keys["registers"].files(scale_layout) == scale_layout.files(scale_layout.register)


def test_the_amendment_chain() -> None:
    """Amendment N covers the freeze's documents plus those of amendments 1..N and chains to N - 1."""
    cpu = layout.Layout.from_config(CONFIG, "standin", "cpu")
    gpu = layout.Layout.from_config(CONFIG, "paper", "h100")
    assert cpu.freeze_record() == "results/prereg/freeze/freeze.json"
    assert gpu.previous_record(1) == "prereg/freeze/freeze.json"
    assert gpu.amendment_records() == ["prereg/freeze/amendments/001/amendment.json"]
    assert cpu.amendment_documents(1) == [
        *CONFIG["prereg"]["documents"],
        *CONFIG["prereg"]["amendments"][0]["documents"],
    ]
    assert cpu.all_protocol_documents() == cpu.amendment_documents(1)
    with pytest.raises(UserError, match="amendment 002 is not configured"):
        cpu.amendment_index("002")


def test_every_results_folder_the_sources_name_is_protected_from_the_freeze() -> None:
    """``layout.RESULTS_FOLDERS`` (the folders of a results root that the freeze folder may not overlap)
    is written beside the paths that make them: every top-level folder a path method or rule builds under
    a results root (``res("X/...")``, ``f"{self.root}/X/..."``) must be listed, so a new stage's folder
    cannot be left out of the freeze check."""
    sources = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    sources += sorted((REPO / "workflow_src" / "paired_rollouts").rglob("*.py"))
    pattern = re.compile(r'(?:\bres\(f?"|\{self\.root\}/|\{root\}/)([A-Za-z_][\w.-]*)(/|")')
    named = {
        match.group(1)
        for path in sources
        for match in pattern.finditer(path.read_text())
        if match.group(2) == "/" or "." not in match.group(1)  # a folder, not a file at the root
    }
    listed = {folder.split("/")[0] for folder in layout.RESULTS_FOLDERS}
    assert len(named) >= 15, named  # the pattern finds the paths (a test that can fail)
    assert named <= listed, f"not in layout.RESULTS_FOLDERS: {sorted(named - listed)}"
