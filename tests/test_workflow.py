"""The Snakemake workflow itself: lint, the paper's DAG (job counts per rule from a dry run), and which
stages a change reruns. Dry runs only: nothing trains here."""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from pathlib import Path

import pytest
from workflow_runs import COPY_IGNORE, REPO, snakemake
from workflow_runs import copy_repo as _copy_repo


def job_counts(output: str) -> Counter:
    """Parse Snakemake's 'Job stats' table into {rule: count}."""
    counts: Counter = Counter()
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Job stats"))
    for line in lines[start + 3 :]:
        match = re.match(r"^(\S+)\s+(\d+)$", line.strip())
        if not match:
            break
        if match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


def test_a_scratch_copy_leaves_out_every_virtualenv_and_the_results() -> None:
    """Each workflow test copies the checkout; a copied 2.4 GB ``.venv-vllm-cpu`` per test filled the disk."""
    names = [".venv", ".venv-vllm-cpu", ".venv-cuda", ".git", "results", "rules", "config", "workflow_src"]
    assert set(COPY_IGNORE(str(REPO), names)) == {".venv", ".venv-vllm-cpu", ".venv-cuda", ".git", "results"}


def test_lint_is_clean_for_every_accelerator() -> None:
    for accelerator, scale in (("cpu", "standin"), ("h100", "paper"), ("mi300x", "paper")):
        result = snakemake("--lint", "--config", f"accelerator={accelerator}", f"scale={scale}", check=False)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_bare_lint_needs_no_profile() -> None:
    """`snakemake --lint` alone lints the stand-in configuration (a run still needs a profile: below)."""
    result = snakemake("--lint", check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "No profile given" not in result.stdout + result.stderr


def test_workflow_refuses_to_run_without_a_profile() -> None:
    """Without the workflow profile (profiles/default) and without --profile nothing names a scale."""
    result = snakemake("-n", "--workflow-profile", "none", check=False)
    assert result.returncode != 0
    assert "--profile cpu" in result.stdout + result.stderr


def test_the_default_profile_falls_back_to_the_standin_study_only() -> None:
    """profiles/default names cpu/standin for a bare call, and never overrides a profile's own choice."""
    bare = snakemake("-n", "--forceall", "-p", "results/standin/runs/c2-paired-s0/groups.jsonl")
    assert '"device":"cpu"' in bare.stdout + bare.stderr
    gpu = snakemake("--profile", "h100", "-n", "--forceall", "-p", "results/runs/c2-paired-s0/groups.jsonl")
    text = gpu.stdout + gpu.stderr
    assert "workflow specific profile profiles/default" in text
    assert '"device":"cuda"' in text and '"backend":"vllm"' in text


def test_paper_dag_has_the_papers_job_counts() -> None:
    """14 trainings; every evaluation, diagnostic, probe, decision and render job exactly once."""
    result = snakemake("--profile", "h100", "-n", "--forceall", "all")
    counts = job_counts(result.stdout + result.stderr)
    runs = 14
    # One evaluation job (one process, one generation engine) per (run, checkpoint), each writing every
    # regime's file: periodic at steps 0,20,...,100 (3 regimes each), final at step 100 (5 regimes, 6 for C4).
    evaluation_files = runs * 6 * 3 + runs * 5 + 6
    # Diagnostics at [0, 50, 100] for the 5 seed-0 runs and [0, 100] for the other 9.
    diagnostics = 5 * 3 + 9 * 2
    assert counts["train"] == runs
    assert "evaluate" not in counts and evaluation_files == 328
    assert counts["evaluate_periodic"] == runs * 6
    assert counts["evaluate_final"] == 8 and counts["evaluate_final_own_noise"] == 6
    assert counts["diagnose"] == diagnostics == 33
    assert counts["luck_share"] == diagnostics
    assert counts["group_stats"] == runs
    assert counts["completeness"] == runs
    assert counts["probe"] == 2 and counts["probe_verdict"] == 2
    assert counts["probe_checkpoint"] == 3 + 6  # trajectories a (0, 80, 100) and b (0, 20, ..., 100)
    assert counts["decide"] == 2
    assert counts["render_table"] == 13  # tables 1-12 and 18 (replay determinism)
    assert counts["replay_check"] == runs  # each run's final checkpoint
    assert counts["render_figure"] == 7
    assert counts["render_document"] == 1
    assert counts["compare"] == 1 and counts["probe_bandit"] == 1 and counts["ledger"] == 1
    assert counts["run_register"] == runs
    assert counts["curves_register"] == 3  # C0, C2, C4: each condition's means over its seeds
    assert counts["tasks"] == 1 and counts["reference"] == 1 and counts["prereg_verify"] == 1
    # No stand-in model is built for the real model; its snapshot is prepared once.
    assert "tokenizer" not in counts and "warm_start" not in counts
    assert counts["prepare_model"] == 1


def test_paper_training_settings_are_the_papers() -> None:
    """The dry run prints the shell command of each training job: its settings are the paper's."""
    result = snakemake(
        "--profile", "h100", "-n", "--forceall", "-p", "results/runs/c2-paired-s0/groups.jsonl"
    )
    text = result.stdout + result.stderr
    command = next(line for line in text.splitlines() if "paired-rollouts train" in line)
    for expected in (
        '"steps":100',
        '"prompts_per_step":24',
        '"num_generations":8',
        '"lora_r":32',
        '"lora_alpha":64',
        '"learning_rate":1e-05',
        '"max_completion_length":6144',
        '"max_tool_calling_iterations":24',
        '"vllm_gpu_memory_utilization":0.35',
        '"backend":"vllm"',
        '"dtype":"bfloat16"',
        '"task_filter":"all"',
        "--model-dir results/models/paper/prepared",
    ):
        assert expected in command, expected


def test_standin_dag_builds_the_model_and_every_table() -> None:
    result = snakemake("--profile", "cpu", "-n", "--forceall", "all")
    counts = job_counts(result.stdout + result.stderr)
    assert counts["tokenizer"] == 1 and counts["warm_start"] == 1
    assert counts["prereg_freeze_local"] == 1
    assert counts["train"] == 9
    assert counts["render_table"] == 13  # tables 1-12 and 18


def _touch_all_outputs(work: Path) -> None:
    """Pretend the whole stand-in study ran: create every planned output (empty), then let `--touch`
    give them modification times in DAG order."""
    summary = snakemake("--profile", "cpu", "-n", "--forceall", "--summary", "all", cwd=work).stdout
    for line in summary.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) < 5 or fields[0] == "output_file":
            continue
        path = work / fields[0]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    # Benchmark files are not in the summary; the cost ledger reads them (the dry run prints its inputs).
    dry = snakemake("--profile", "cpu", "-n", "--forceall", "results/standin/ledger.json", cwd=work).stdout
    block = dry.split("rule ledger:", 1)[1]
    inputs = next(x for x in block.splitlines() if x.strip().startswith("input:")).split("input:", 1)[1]
    for name in inputs.strip().split(", "):
        if "/benchmarks/" in name:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).touch()
    snakemake("--profile", "cpu", "--touch", "--forceall", "all", cwd=work)


def _rerun_rules(work: Path) -> Counter:
    result = snakemake("--profile", "cpu", "-n", "all", cwd=work)
    text = result.stdout + result.stderr
    if "Nothing to be done" in text:
        return Counter()
    return job_counts(text)


@pytest.fixture(scope="module")
def touched_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = _copy_repo(tmp_path_factory.mktemp("rerun"))
    # touch needs the outputs' folders; directories of checkpoints are not outputs.
    _touch_all_outputs(work)
    assert _rerun_rules(work) == Counter()
    return work


class _edited:
    """Append a harmless line to a file (Snakemake compares checksums, so a bare touch is not an edit),
    make it newer than every output, and restore bytes and time afterwards."""

    def __init__(self, path: Path, line: str) -> None:
        self.path, self.line = path, line

    def __enter__(self) -> Path:
        self.saved = self.path.read_bytes()
        self.mtime = self.path.stat().st_mtime
        self.path.write_bytes(self.saved + self.line.encode())
        later = time.time() + 3600
        os.utime(self.path, (later, later))
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.saved)
        os.utime(self.path, (self.mtime, self.mtime))


def test_editing_the_simulator_reruns_pools_and_everything_downstream(touched_copy: Path) -> None:
    work = touched_copy
    with _edited(work / "workflow_src/paired_rollouts/backoffice/world.py", "\n# edited\n"):
        counts = _rerun_rules(work)
    assert counts["tasks"] == 1 and counts["reference"] == 1
    assert counts["train"] == 9 and counts["render_document"] == 1
    assert counts["decide"] == 2


def test_editing_a_threshold_reruns_only_decisions_and_tables(touched_copy: Path) -> None:
    work = touched_copy
    verification = work / "results/standin/prereg/verification.json"
    # The threshold is edited, the freeze amended and re-verified: the verifications are newest (the
    # amendments' verification covers decision_rules.yaml too).
    amended = work / "results/standin/prereg/amendment_verification.json"
    bench = (
        work / "results/standin/benchmarks/prereg_verify.tsv"
    )  # the re-verification writes its benchmark too
    amended_bench = work / "results/standin/benchmarks/prereg_verify_amendments.tsv"
    with (
        _edited(work / "prereg/decision_rules.yaml", "\n# edited threshold\n"),
        _edited(verification, "\n"),
        _edited(bench, ""),
        _edited(amended, "\n"),
        _edited(amended_bench, ""),
    ):
        later = time.time() + 7200
        for path in (verification, bench, amended, amended_bench):
            os.utime(path, (later, later))
        counts = _rerun_rules(work)
    # final_success (figure 3) shows the decision registers' final values, so it is redrawn too; the
    # predictions register judges the decision registers
    assert set(counts) <= {
        "prereg_verify",
        "decide",
        "probe_verdict",
        "render_table",
        "render_figure",
        "render_document",
        "compare",
        "predictions",
        "ledger",
        "all",
    }, counts
    # every stage that reads a frozen key reruns (the H1b verdict too), the expensive probe does not
    assert counts["decide"] == 2 and counts["probe_verdict"] == 2
    assert "train" not in counts and not any(r.startswith(("evaluate", "probe_checkpoint")) for r in counts)
    assert "probe" not in counts


def test_editing_a_template_reruns_only_rendering(touched_copy: Path) -> None:
    work = touched_copy
    with _edited(work / "workflow_src/paired_rollouts/render/templates/table3.tex.j2", "\n"):
        counts = _rerun_rules(work)
    assert set(counts) <= {"render_table", "render_document", "ledger", "all"}, counts
    assert counts["render_table"] == 1 and counts["render_document"] == 1


def test_deleting_one_evaluation_reruns_only_that_job_and_its_dependants(touched_copy: Path) -> None:
    work = touched_copy
    victim = sorted((work / "results/standin/evals/c2-paired-s0").glob("periodic-step*-clean.jsonl"))[-1]
    saved = victim.read_bytes()
    mtime = victim.stat().st_mtime
    victim.unlink()
    try:
        counts = _rerun_rules(work)
    finally:
        victim.write_bytes(saved)
        os.utime(victim, (mtime, mtime))
    assert counts["evaluate_periodic"] == 1  # the checkpoint's job (all its periodic regimes)
    assert "train" not in counts and "diagnose" not in counts
    assert counts["completeness"] == 1 and counts["decide"] == 1


def test_an_edited_protocol_stops_the_pipeline_before_training(tmp_path: Path) -> None:
    """Freeze and verify (local test authority), edit one byte of the protocol: verification fails
    with the file named, and the training target cannot be reached."""
    work = _copy_repo(tmp_path)
    tiny = ("--profile", "cpu", "--configfile", ".test/config/config.yaml")
    # Targets first: `--configfile` takes every word after it.
    snakemake("results/tiny/prereg/verification.json", *tiny, cwd=work)
    assert '"passes": true' in (work / "results/tiny/prereg/verification.json").read_text()

    protocol = work / "prereg/PREREGISTRATION.md"
    text = protocol.read_text()
    protocol.write_text(text.replace("e", "E", 1))
    result = snakemake("results/tiny/runs/c2-paired-s0/groups.jsonl", *tiny, cwd=work, check=False)
    assert result.returncode != 0
    assert "Error in rule prereg_verify" in result.stdout + result.stderr
    log = (work / "results/tiny/logs/prereg_verify.log").read_text()
    assert "PREREGISTRATION.md" in log
    assert not (work / "results/tiny/prereg/verification.json").exists()
    assert not (work / "results/tiny/runs/c2-paired-s0/groups.jsonl").exists()


def test_mi300x_refuses_the_conda_route_without_vllm() -> None:
    """envs/rocm.yaml has no vLLM while the rules select it: `--sdm conda` stops before any job (issue 18,
    item 7); the container route (no --sdm) plans the vLLM backend."""
    refused = snakemake("--profile", "mi300x", "--sdm", "conda", "-n", "all", check=False)
    assert refused.returncode != 0
    assert "envs/rocm.Dockerfile" in refused.stdout + refused.stderr
    planned = snakemake(
        "--profile", "mi300x", "-n", "--forceall", "-p", "results/runs/c2-paired-s0/groups.jsonl"
    )
    assert '"backend":"vllm"' in planned.stdout + planned.stderr


def test_paper_model_is_prepared_once_and_loaded_by_every_learning_job() -> None:
    result = snakemake(
        "--profile",
        "h100",
        "-n",
        "--forceall",
        "-p",
        "results/probe/a.json",
        "results/evals/c2-paired-s0/periodic-step0-clean.jsonl",
    )
    text = result.stdout + result.stderr
    assert (
        "paired-rollouts model prepare --source Qwen/Qwen3.5-2B --out results/models/paper/prepared "
        "--chat-template check" in text
    )
    learning = [
        line
        for line in text.splitlines()
        if re.search(r"paired-rollouts (train|evaluate|probe checkpoint) ", line)
    ]
    assert learning and all("--model-dir results/models/paper/prepared" in line for line in learning)


def test_prepare_model_takes_the_chat_template_choice_from_the_config(tmp_path: Path) -> None:
    overlay = tmp_path / "template.yaml"
    overlay.write_text("scales:\n  paper:\n    model:\n      chat_template: trl\n")
    result = snakemake(
        "--profile",
        "h100",
        "--configfile",  # replaces the profile's list: name its files, then the overlay
        "config/config.yaml",
        "profiles/h100/settings.yaml",
        str(overlay),
        "-n",
        "--forceall",
        "-p",
        "results/models/paper/prepared/config.json",
    )
    assert "--out results/models/paper/prepared --chat-template trl" in result.stdout + result.stderr


def test_gpu_profiles_refuse_pools_that_are_not_the_papers(tmp_path: Path) -> None:
    """A pool edited together with a re-hashed MANIFEST (what `tasks --no-check` writes) passes every
    manifest check; the GPU profiles compare with the paper's hashes and stop before anything runs."""
    import hashlib
    import json

    work = _copy_repo(tmp_path)
    pool = work / "data/tasks/test.jsonl"
    pool.write_bytes(pool.read_bytes().replace(b'"instruction": "', b'"instruction": "Now: ', 1))
    manifest_path = work / "data/tasks/MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["pools"]["test"]["sha256"] = hashlib.sha256(pool.read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest))
    result = snakemake("-n", "--config", "accelerator=h100", "scale=paper", cwd=work, check=False)
    assert result.returncode != 0
    assert "not the paper's" in result.stdout + result.stderr


def test_config_on_the_command_line_adds_to_the_profile() -> None:
    """`--config scale=NAME` used to replace the profile's whole `config:` block (accelerator lost) and
    fail with a misleading 'No profile given'."""
    result = snakemake(
        "--profile",
        "cpu",
        "-n",
        "results/surrogate/prereg/verification.json",
        "--config",
        "scale=surrogate",
        check=False,
    )
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-3000:]
    assert "No profile given" not in text


def test_missing_scale_block_is_one_clear_error(tmp_path: Path) -> None:
    """A scale named by the profile but without its block in config/config.yaml used to be a bare KeyError;
    the test scales are only in .test/config/config.yaml, so naming one without that file is refused."""
    result = snakemake("--profile", "cpu", "-n", "--config", "scale=tiny", check=False)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and "scale 'tiny' has no block" in text and "KeyError" not in text
    assert ".test/config/config.yaml" in text


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: d["scales"]["tiny"]["training"].update(learnig_rate=1e-3), "learnig_rate"),
        (lambda d: d["scales"]["tiny"]["model"].update(hiden_size=8), "hiden_size"),
        (
            lambda d: d["scales"]["tiny"]["probe"]["trajectories"][
                sorted(d["scales"]["tiny"]["probe"]["trajectories"])[0]
            ].update(run="c2-paired-s7"),
            "not in the seed matrix",
        ),
        (
            lambda d: d["scales"]["tiny"]["diagnostics"]["steps"]["seed0"].append(10_000),
            "beyond the last training step",
        ),
    ],
)
def test_config_mistakes_fail_the_dry_run(tmp_path: Path, edit, needle) -> None:
    """A typo in training:/model: used to surface after the warm start; a probe of a run outside the seed
    matrix silently added a training job; diagnostic steps past the last step passed the dry run."""
    import yaml

    work = _copy_repo(tmp_path)
    path = work / ".test/config/config.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data))
    result = snakemake(
        "--profile", "cpu", "-n", "--configfile", ".test/config/config.yaml", cwd=work, check=False
    )
    text = result.stdout + result.stderr
    assert result.returncode != 0 and needle in text, text[-2000:]
