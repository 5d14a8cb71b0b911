"""The Snakemake profiles: well-formed, consistent, and reachable by bare name from the repo root."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PROFILES = REPO / "profiles"

RULES = {
    "tasks",
    "reference",
    "prereg_freeze_local",
    "prereg_verify",
    "tokenizer",
    "warm_start",
    "prepare_model",
    "train",
    "evaluate_periodic",
    "evaluate_final",
    "evaluate_final_own_noise",
    "replay_check",
    "diagnose",
    "luck_share",
    "group_stats",
    "completeness",
    "run_register",
    "curves_register",
    "decide",
    "probe_checkpoint",
    "probe",
    "probe_verdict",
    "render_table",
    "render_figure",
    "render_document",
    "prereg_amend_local",
    "prereg_verify_amendments",
    "zero_shot_calibration",
}
GPU_RULES = {
    "train",
    "evaluate_periodic",
    "evaluate_final",
    "evaluate_final_own_noise",
    "replay_check",
    "diagnose",
    "probe_checkpoint",
    "zero_shot_calibration",
}
CPU_ONLY_RULES = {
    "tasks",
    "reference",
    "decide",
    "render_table",
    "render_figure",
    "render_document",
    "probe",
    "probe_verdict",
    "run_register",
    "curves_register",
    "prepare_model",
}
# The per-run and per-condition register rules: every profile pins them to one thread (they are many
# small jobs; without an entry a profile could hand one a whole node's cores).
REGISTER_RULES = {"group_stats", "completeness", "run_register", "curves_register"}
EXPECTED = {
    "cpu": ("cpu", "standin"),
    "h100": ("h100", "paper"),
    "mi300x": ("mi300x", "paper"),
    "slurm-cpu": ("cpu", "standin"),
    "slurm-h100": ("h100", "paper"),
    "slurm-mi300x": ("mi300x", "paper"),
}
COMMON_KEYS = {
    "retries",
    "rerun-triggers",
    "keep-incomplete",
    "printshellcmds",
    "show-failed-logs",
    "set-threads",
}


def _load(name: str) -> dict:
    data = yaml.safe_load((PROFILES / name / "config.yaml").read_text())
    assert isinstance(data, dict), f"profiles/{name}/config.yaml is not a mapping"
    return data


def test_profile_folders_are_exactly_the_expected_ones() -> None:
    found = {p.name for p in PROFILES.iterdir() if p.is_dir()}
    assert found == set(EXPECTED) | {"default"}


def test_the_default_profile_only_names_the_fallback() -> None:
    """profiles/default is merged into every --profile and replaces whole keys: it may set only `config:`,
    which no other profile sets, and only the fallback accelerator and scale (the Snakefile reads them
    when no profile names its own)."""
    data = _load("default")
    assert data == {"config": ["default_accelerator=cpu", "default_scale=standin"]}
    assert not any("config" in _load(name) for name in EXPECTED)
    assert not (REPO / "default").exists()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_profile_settings(name: str) -> None:
    data = _load(name)
    accelerator, scale = EXPECTED[name]
    # accelerator and scale come through `configfile:` so that `--config k=v` adds to them
    assert "config" not in data
    assert data["configfile"] == ["config/config.yaml", f"profiles/{name}/settings.yaml"]
    settings = yaml.safe_load((PROFILES / name / "settings.yaml").read_text())
    assert settings == {"accelerator": accelerator, "scale": scale}
    missing = COMMON_KEYS - data.keys()
    assert not missing, f"{name}: missing {sorted(missing)}"
    assert data["keep-incomplete"] is False
    assert data["retries"] >= 1
    assert set(data["rerun-triggers"]) <= {"mtime", "params", "input", "software-env", "code"}

    threads = data["set-threads"]
    resources = data.get("set-resources", {})
    assert set(threads) <= RULES, f"{name}: unknown rules in set-threads {sorted(set(threads) - RULES)}"
    assert set(resources) <= RULES, f"{name}: unknown rules in set-resources {sorted(set(resources) - RULES)}"
    assert all(isinstance(v, int) and v >= 1 for v in threads.values())
    assert {rule: threads.get(rule) for rule in REGISTER_RULES} == dict.fromkeys(REGISTER_RULES, 1), name

    # CPU-only rules never ask for a GPU, in any profile.
    for rule in CPU_ONLY_RULES:
        assert "gpu" not in resources.get(rule, {}), f"{name}: {rule} asks for a GPU"
    if accelerator == "cpu":
        assert not any("gpu" in r or "gpu_model" in r for r in resources.values()), f"{name}: GPU on cpu"
        assert "software-deployment-method" not in data, "the cpu profiles use the project venv"
    else:
        for rule in GPU_RULES:
            assert resources[rule]["gpu"] == 1, (name, rule)
            assert resources[rule]["gpu_model"] == accelerator, (name, rule)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_executor_settings(name: str) -> None:
    data = _load(name)
    if name.startswith("slurm-"):
        assert data["executor"] == "slurm"
        assert data["slurm-no-account"] is True
        assert data["default-resources"]["slurm_partition"]
        # GPU requests go through the plugin's gpu/gpu_model resources, never raw sbatch flags.
        extra = " ".join(str(r.get("slurm_extra", "")) for r in data.get("set-resources", {}).values())
        assert "--gres" not in extra and "--gpus" not in extra
    else:
        assert "executor" not in data or data["executor"] == "local"
        assert "slurm-status-command" not in data
    if name == "slurm-cpu":
        # The test cluster has no slurmdbd, so sacct cannot report status there.
        assert data["slurm-status-command"] == "squeue"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bare_profile_name_resolves_from_repo_root(name: str) -> None:
    # Snakemake looks up `--profile NAME` as ./NAME, never in profiles/.
    link = REPO / name
    assert link.is_symlink(), f"./{name} should be a symlink to profiles/{name}"
    assert Path(link.readlink()) == Path("profiles") / name, "keep the link relative so clones work"
    assert link.resolve() == (PROFILES / name).resolve()
    assert (link / "config.yaml").is_file()


DRY_RUN_SNAKEFILE = """\
rule all:
    input: "b.txt"

rule tasks:
    output: "a.txt"
    shell: "echo {config[accelerator]} {config[scale]} > {output}"

rule train:
    input: "a.txt"
    output: "b.txt"
    shell: "cp {input} {output}"
"""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_snakemake_accepts_profile(name: str, tmp_path: Path) -> None:
    # Every key must be one this Snakemake (and its SLURM plugin) knows: a dry run parses them all.
    shutil.copytree(PROFILES / name, tmp_path / name)
    # the config files the profile lists (paths relative to the repository root)
    shutil.copytree(PROFILES / name, tmp_path / "profiles" / name)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("{}\n")
    (tmp_path / "Snakefile").write_text(DRY_RUN_SNAKEFILE)
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", name, "--dry-run", "all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    accelerator, scale = EXPECTED[name]
    assert f"{accelerator} {scale}" in done.stdout + done.stderr
