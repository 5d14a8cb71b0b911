"""The slurm-cpu profile drives real SLURM jobs on the local test cluster (scripts/local_slurm.sh).

A two-rule workflow is written to a temporary directory next to a copy of the project's slurm-cpu
profile. Its rules are named like the project's (`tasks`, `train`) so the profile's per-rule settings
apply; `train` also asks for a GPU the way the GPU profiles do (`gpu: 1`, `gpu_model: h100`), which
only the fake `gpu:h100` GRES of the test cluster can satisfy. The test then checks that both jobs
went through sbatch: each output carries a SLURM job id, squeue still knows those ids as COMPLETED,
the plugin kept one SLURM log per job, and the GPU job got a device assigned by SLURM.

Skipped only when `sinfo` is missing and PAIRED_ROLLOUTS_REQUIRE_SLURM is unset; CI sets the
variable, so there a missing or broken cluster is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from workflow_runs import REPO, SNAKEMAKE, copy_repo

pytestmark = pytest.mark.slurm

PROFILE = REPO / "profiles" / "slurm-cpu"

SNAKEFILE = """\
rule all:
    input: "out/train.txt"

rule tasks:
    output: "out/tasks.txt"
    shell:
        "echo job=${{SLURM_JOB_ID:-none}} rule=tasks threads={threads} "
        "accelerator={config[accelerator]} scale={config[scale]} > {output}"

rule train:
    input: "out/tasks.txt"
    output: "out/train.txt"
    resources:
        gpu=1,
        gpu_model="h100",
    shell:
        "echo job=${{SLURM_JOB_ID:-none}} rule=train "
        "devices=${{CUDA_VISIBLE_DEVICES:-unset}} upstream=$(cut -d' ' -f1 {input}) > {output}"
"""


def _require_cluster() -> None:
    if shutil.which("sinfo") is None:
        if os.environ.get("PAIRED_ROLLOUTS_REQUIRE_SLURM"):
            pytest.fail(
                "PAIRED_ROLLOUTS_REQUIRE_SLURM is set but sinfo is missing: run scripts/local_slurm.sh up"
            )
        pytest.skip("no SLURM client (sinfo) on this machine")
    probe = subprocess.run(["sinfo", "-h", "-o", "%P %a %t"], capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, (
        f"sinfo failed (is the cluster up? scripts/local_slurm.sh up): {probe.stderr}"
    )
    assert probe.stdout.strip(), "sinfo lists no partition"


def _fields(path: Path) -> dict[str, str]:
    return dict(part.split("=", 1) for part in path.read_text().split())


def _squeue_state(job_id: str) -> str:
    done = subprocess.run(
        ["squeue", "-h", "--states=all", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30
    )
    return done.stdout.strip()


def test_slurm_cpu_profile_submits_through_sbatch(tmp_path: Path) -> None:
    _require_cluster()
    shutil.copytree(PROFILE, tmp_path / "slurm-cpu")
    # the config files the profile lists (paths relative to the repository root)
    shutil.copytree(PROFILE, tmp_path / "profiles" / "slurm-cpu")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("{}\n")
    (tmp_path / "Snakefile").write_text(SNAKEFILE)

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "slurm-cpu", "all"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.monotonic() - started
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"snakemake failed after {elapsed:.0f} s:\n{log[-6000:]}"

    tasks = _fields(tmp_path / "out" / "tasks.txt")
    train = _fields(tmp_path / "out" / "train.txt")
    # The profile's workflow config reached the rules.
    assert tasks["accelerator"] == "cpu" and tasks["scale"] == "standin"
    assert tasks["threads"] == "1"
    # Both rules ran as separate SLURM jobs, in dependency order.
    assert tasks["job"].isdigit() and train["job"].isdigit(), (tasks, train)
    assert tasks["job"] != train["job"]
    assert train["upstream"] == f"job={tasks['job']}"
    # SLURM allocated the (fake) H100 to the GPU rule's job step.
    assert train["devices"] not in ("", "unset"), train

    for rule, fields in (("tasks", tasks), ("train", train)):
        # Finished jobs stay in squeue for MinJobAge (300 s on the test cluster).
        assert _squeue_state(fields["job"]) == "COMPLETED", (rule, fields["job"])
        slurm_log = tmp_path / ".snakemake" / "slurm_logs" / f"rule_{rule}" / f"{fields['job']}.log"
        assert slurm_log.is_file(), (
            f"no SLURM log for {rule}: {sorted((tmp_path / '.snakemake').rglob('*.log'))}"
        )

    # The executor really was slurm (not a local fallback) and polled with squeue.
    assert "slurm" in log.lower()
    print(f"slurm workflow: 2 jobs in {elapsed:.1f} s")


def test_project_pipeline_target_runs_through_slurm(tmp_path: Path) -> None:
    """The project's own rules (task pools and the scripted reference) through `--profile slurm-cpu`:
    both jobs are submitted with sbatch and their outputs are the paper's."""
    import json

    _require_cluster()
    work = copy_repo(tmp_path)
    result = subprocess.run(
        [
            SNAKEMAKE,
            "--profile",
            "slurm-cpu",
            "results/standin/reference/scripted_reference.json",
            "--forcerun",
            "tasks",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    logs = work / ".snakemake" / "slurm_logs"
    assert list((logs / "rule_tasks").rglob("*.log")), "the tasks job left no SLURM log"
    assert list((logs / "rule_reference").rglob("*.log")), "the reference job left no SLURM log"
    # The pools regenerated on the cluster are byte-identical to the committed ones.
    for pool in ("train", "validation", "test", "diagnostic"):
        assert (work / f"data/tasks/{pool}.jsonl").read_bytes() == (
            REPO / f"data/tasks/{pool}.jsonl"
        ).read_bytes()
    register = json.loads((work / "results/standin/reference/scripted_reference.json").read_text())
    for pool in ("validation", "test"):
        for policy in ("naive", "recovering"):
            clean = register["results"][pool]["clean"][policy]
            assert clean["success"] == 1.0
            assert abs(clean["mean_calls"] - 1981 / 300) < 1e-12
