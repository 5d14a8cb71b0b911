"""Bad input met after the audit of 2026-12 (cases 11, 12 and 5): a command with several outputs writes all
of them or none, and a benchmark row cut mid-way is refused, each in one line naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.io import sha256_file
from records_fixtures import verification_report
from tiny_qwen35 import tiny_standin

REPO = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
ROW = "1.05\t0:00:01\t42.68\t116.00\t23.32\t28.88\t0.00\t0.21\t46.61\t0.92"
# the smallest settings test_evaluation's evaluate test uses, with a small diagnostic set
SETTINGS = {
    "task_filter": "all",
    "eval_tasks": 2,
    "eval_batch": 4,
    "final_tasks": 2,
    "diag_tasks": 2,
    "diag_schedules": 2,
    "diag_samples": 2,
    "max_completion_length": 48,
    "max_tool_calling_iterations": 1,
    "lora_r": 2,
    "lora_alpha": 4,
}


def _error(capsys) -> str:
    """The command's stderr: one line, no traceback."""
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err and "\n" not in err, err
    return err


def _settings_json() -> str:
    from paired_rollouts.settings import Settings

    flat = Settings.from_manifest(SETTINGS).manifest_dict()
    return json.dumps({k: flat[k] for k in SETTINGS})


def _blocker(tmp_path: Path) -> Path:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder\n")
    return blocker


def test_evaluate_with_a_bad_second_out_writes_no_first_file(tmp_path, capsys, sim_tasks_dir, sim_pools):
    """Case 11: the second regime's --out lies under a file; the first regime's file is not left behind."""
    import peft
    from paired_rollouts.settings import Settings
    from paired_rollouts.training import checkpoints as ckpt
    from paired_rollouts.training.model import lora_config

    model, _ = tiny_standin(sim_pools, folder=tmp_path / "model")
    settings = Settings.from_manifest(SETTINGS)
    peft.get_peft_model(model, lora_config(settings.training)).save_pretrained(tmp_path / "ck")
    ckpt.install(tmp_path / "ck", tmp_path / "run", 0, kind="initial")
    clean = tmp_path / "clean.jsonl"
    bad = _blocker(tmp_path) / "challenge.jsonl"
    argv = ["evaluate", "--run", "c2-paired-s0", "--step", "0", "--phase", "periodic"]
    argv += ["--regime", "clean", "challenge", "--tasks-dir", str(sim_tasks_dir)]
    argv += ["--checkpoint", str(ckpt.step_dir(tmp_path / "run", 0)), "--model-dir", str(tmp_path / "model")]
    argv += ["--settings", _settings_json(), "--out", str(clean), str(bad)]
    capsys.readouterr()
    assert main(argv) == 1
    assert str(bad) in _error(capsys)
    assert not clean.exists() and not bad.parent.is_dir()
    assert not list(tmp_path.glob(".clean.jsonl.*")), "no temporary file is left either"


def test_evaluate_refuses_one_out_named_twice(tmp_path, capsys) -> None:
    out = str(tmp_path / "e.jsonl")
    argv = ["evaluate", "--run", "c2-paired-s0", "--step", "0", "--phase", "periodic"]
    argv += ["--regime", "clean", "challenge", "--tasks-dir", str(tmp_path), "--checkpoint", str(tmp_path)]
    argv += ["--model-dir", str(tmp_path), "--out", out, out]
    assert main(argv) == 1
    assert f"--out {out}: named twice" in _error(capsys)
    assert not Path(out).exists()


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    """tier_rules.yaml and a passing amendment verification report covering it (test_calibration_gate's)."""
    rules = tmp_path / "prereg/tier_rules.yaml"
    rules.parent.mkdir()
    shutil.copy(REPO / "prereg/tier_rules.yaml", rules)
    digest = sha256_file(rules)
    report = verification_report() | {
        "documents": [{"path": str(rules), "sha256": digest, "matches": True}],
        "covered": [{"path": str(rules), "sha256": digest, "record": "amendments/001", "imprint": "0" * 64}],
    }
    verification = tmp_path / "verification.json"
    verification.write_text(json.dumps(report))
    return rules, verification


def test_zero_shot_with_a_bad_out_writes_no_episode_files(tmp_path, capsys, sim_tasks_dir, sim_pools):
    """Case 12: --out lies under a file; the step-0 episode files are not written without their register."""
    tiny_standin(sim_pools, folder=tmp_path / "model")
    rules, verification = _workspace(tmp_path)
    episodes = tmp_path / "eps"
    bad = _blocker(tmp_path) / "zs.json"
    argv = [
        "calibrate",
        "zero-shot",
        "--tasks-dir",
        str(sim_tasks_dir),
        "--model-dir",
        str(tmp_path / "model"),
    ]
    argv += ["--model", "Qwen/Qwen3.5-2B", "--settings", _settings_json(), "--rules", str(rules)]
    argv += ["--verification", str(verification), "--resamples", "20", "--episodes-dir", str(episodes)]
    argv += ["--out", str(bad)]
    capsys.readouterr()
    assert main(argv) == 1
    assert str(bad) in _error(capsys)
    assert not episodes.exists() or not list(episodes.iterdir()), "no episode file without its register"


@pytest.mark.parametrize(
    ("row", "fields"),
    [
        ("1.05\t0:00:", 2),  # a write cut mid-row: DictReader would fill the missing columns with None
        (ROW + "\tzz", 11),  # a field more than the header
    ],
)
def test_a_benchmark_row_of_another_width_is_refused(tmp_path, capsys, row, fields) -> None:
    """Case 5: a torn row is not "not measured"; it is refused naming the file and its line."""
    bench = tmp_path / "results/benchmarks/train/c2-paired-s0/b.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text(HEADER + row + "\n")
    out = tmp_path / "l.json"
    argv = ["ledger", "--benchmarks", str(bench), "--results", str(tmp_path / "results")]
    assert main([*argv, "--accelerator", "cpu", "--out", str(out)]) == 1
    err = _error(capsys)
    assert f"{bench}:2: row has {fields} fields, the header 10" in err and not out.exists()


def test_snakemakes_own_not_measured_values_are_still_accepted(tmp_path) -> None:
    """Snakemake writes NA where it collected no data and '-' for a None value: both stay not measured."""
    import math

    from paired_rollouts.compare.ledger import read_benchmark
    from snakemake.benchmark import BenchmarkRecord, write_benchmark_records

    path = tmp_path / "b.tsv"
    write_benchmark_records([BenchmarkRecord(running_time=1.5)], str(path), False)
    assert "\tNA\t" in path.read_text()
    values = read_benchmark(path)
    assert values["s"] == 1.5 and math.isnan(values["max_rss"]) and math.isnan(values["cpu_time"])
    path.write_text(HEADER + "1.5\t-\t-\t-\t-\t-\t-\t-\t-\t-\n")
    assert math.isnan(read_benchmark(path)["cpu_time"])
