"""The zero-shot calibration register (amendment A2): bands from the tier rules, the gate before training.

Synthetic measured values check the register and its one-line failure; the workflow tests check that
training depends on the gate, that a tampered tier_rules.yaml stops the pipeline at the amendment's
verification, and that a GPU dry run lists the missing public amendment.
"""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest
from paired_rollouts.calibration.zero_shot import build_register, check_register
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.prereg.rules import load_tier_rules
from records_fixtures import verification_report
from workflow_runs import REPO, copy_repo, snakemake

CALIBRATION = load_tier_rules(REPO / "prereg/tier_rules.yaml")["calibration"]
QWEN = "Qwen/Qwen3.5-2B"
RULES = {"path": "prereg/tier_rules.yaml", "sha256": "x", "verification": "v.json"}


def _luck(lam, ci=(0.2, 0.5), defects=()):
    return {
        "lam": lam,
        "ci95": list(ci),
        "tasks": 16,
        "tasks_defined": 16,
        "K": 8,
        "M": 8,
        "defects": list(defects),
        "episodes": 1024,
    }


def _register(model=QWEN, successes=52, episodes=64, luck=None):
    return build_register(
        CALIBRATION,
        model,
        {"successes": successes, "episodes": episodes, "tasks": 64},
        luck or _luck(0.33),
        rules=RULES,
        evidence={},
    )


def test_registered_model_inside_its_bands_passes():
    register = _register()  # 52/64 = 0.8125, luck 0.33
    assert register["status"] == "pass" and register["passes"] is True
    bands = {b["name"]: b for b in register["bands"]}
    assert bands["clean_success"]["target"] == {"low": 0.75, "high": 0.90}
    assert bands["clean_success"]["achieved"] == pytest.approx(0.8125)
    assert bands["luck_share"]["target"] == {"at_least": 0.15} and bands["luck_share"]["interval"] == [
        0.2,
        0.5,
    ]
    check_register(register, "zero_shot.json")  # no error


@pytest.mark.parametrize(
    ("successes", "luck", "needle"),
    [
        (40, _luck(0.33), "clean_success 0.6250 (registered in [0.75, 0.9])"),
        (60, _luck(0.33), "clean_success 0.9375 (registered in [0.75, 0.9])"),
        (52, _luck(0.10), "luck_share 0.1000 (registered >= 0.15)"),
        (52, _luck(None, ci=(None, None)), "luck_share not measurable"),
        (52, _luck(0.4, defects=[{"task_id": "t", "problem": "3 schedules"}]), "luck_share 0.4000"),
    ],
)
def test_a_missed_band_is_one_line_naming_the_register(successes, luck, needle):
    register = _register(successes=successes, luck=luck)
    assert register["status"] == "fail" and register["passes"] is False
    with pytest.raises(UserError) as info:
        check_register(register, "results/paper/calibration/zero_shot.json")
    text = str(info.value)
    assert needle in text and "\n" not in text
    assert text.startswith(
        "results/paper/calibration/zero_shot.json: zero-shot calibration register "
        "(prereg/tier_rules.yaml calibration) missed for Qwen/Qwen3.5-2B"
    )


def test_the_stand_in_has_no_band_and_is_not_applicable_not_pass():
    register = _register(model="stand-in (tiny)", successes=0, luck=_luck(None, ci=(None, None)))
    assert register["status"] == "not_applicable" and register["passes"] is None
    assert {b["status"] for b in register["bands"]} == {"not_applicable"}
    assert all(b["passes"] is None and b["applies"] is False for b in register["bands"])
    assert "no band is registered for model 'stand-in (tiny)'" in register["note"]
    check_register(register, "zero_shot.json")  # not applicable never blocks


def test_calibrate_check_cli(tmp_path, capsys):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_register()))
    bad.write_text(json.dumps(_register(successes=30)))
    assert main(["calibrate", "check", str(good)]) == 0
    assert "zero-shot calibration of Qwen/Qwen3.5-2B: PASS" in capsys.readouterr().out
    assert main(["calibrate", "check", str(bad)]) == 1
    captured = capsys.readouterr()
    assert "clean_success" in captured.out and "fail" in captured.out  # the table is printed too
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and f"{bad}: zero-shot calibration register" in err[0]


def _workspace(tmp_path: Path) -> Path:
    """tier_rules.yaml and a passing amendment verification report covering it (cwd-relative)."""
    (tmp_path / "prereg").mkdir()
    shutil.copy(REPO / "prereg/tier_rules.yaml", tmp_path / "prereg/tier_rules.yaml")
    digest = sha256_file(tmp_path / "prereg/tier_rules.yaml")
    # the report's shape as prereg verify writes it (records.read_covered refuses any other)
    report = verification_report() | {
        "documents": [{"path": "prereg/tier_rules.yaml", "sha256": digest, "matches": True}],
        "covered": [
            {
                "path": "prereg/tier_rules.yaml",
                "sha256": digest,
                "record": "amendments/001",
                "imprint": "0" * 64,
            }
        ],
    }
    (tmp_path / "verification.json").write_text(json.dumps(report))
    return tmp_path


def _surrogate_calibration(path: Path, clean: float, lam: float) -> None:
    """A surrogate calibration register in its writer's shape (a tiny surrogate run's, kept as a render
    fixture; records.read_calibration refuses any other) with the measured values set."""
    register = json.loads(
        (REPO / "tests/fixtures/render/results/models/surrogate/calibration.json").read_text()
    )
    # its reader recomputes every summary and verdict from the detail, so the edit keeps them consistent
    register["luck_share"].update(lam=lam, lam_by_capture=[lam] * 4, tasks=16, tasks_defined=16)
    measured = {"c4_clean_validation": clean, "luck_share_p025": lam}
    for target in register["targets"]:
        if target["target_name"] in measured:
            achieved = measured[target["target_name"]]
            difference = achieved - target["target"]
            target.update(
                achieved=achieved, difference=difference, passes=abs(difference) <= target["tolerance"]
            )
    register["passes"] = all(target["passes"] for target in register["targets"])
    register["estimation"].update(eval_tasks=64, clean_episodes=512, diagnostic_episodes=1024)
    path.write_text(json.dumps(register))


def _calibrate_surrogate(out: str) -> list[str]:
    """``calibrate surrogate`` in the workspace: calibration.json against the tier rules and verification."""
    return [
        "calibrate",
        "surrogate",
        "--calibration",
        "calibration.json",
        "--model",
        QWEN,
        "--rules",
        "prereg/tier_rules.yaml",
        "--verification",
        "verification.json",
        "--out",
        out,
    ]


@pytest.mark.parametrize(("clean", "lam", "rc"), [(0.815, 0.355, 0), (0.70, 0.355, 1), (0.815, 0.12, 1)])
def test_surrogate_register_checks_the_registered_bands(tmp_path, monkeypatch, capsys, clean, lam, rc):
    work = _workspace(tmp_path)
    monkeypatch.chdir(work)
    _surrogate_calibration(work / "calibration.json", clean, lam)
    out = work / "zero_shot.json"
    assert main(_calibrate_surrogate(str(out))) == rc
    if rc == 0:
        register = json.loads(out.read_text())
        assert register["status"] == "pass"
        assert register["rules"]["sha256"] == sha256_file(work / "prereg/tier_rules.yaml")
    else:
        assert not out.exists()  # nothing partial: the gate's output is absent, so training cannot start
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_calibration_register_of_another_shape_is_one_line(tmp_path, monkeypatch, capsys):
    """The gate reads the surrogate's register through records.read_calibration: the old hand-made shape
    (no knobs, theta or per-target tolerances) is refused, naming the file and the command that writes it."""
    work = _workspace(tmp_path)
    monkeypatch.chdir(work)
    _surrogate_calibration(work / "calibration.json", 0.815, 0.355)
    register = json.loads((work / "calibration.json").read_text())
    del register["targets"][0]["tolerance"]
    (work / "calibration.json").write_text(json.dumps(register))
    assert main(_calibrate_surrogate("z.json")) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "calibration.json: targets[0]: missing key 'tolerance'" in err
    assert (
        "regenerate it with 'paired-rollouts surrogate calibrate'" in err and not (work / "z.json").exists()
    )


def test_gate_refuses_tier_rules_not_covered_by_the_verification(tmp_path, monkeypatch, capsys):
    work = _workspace(tmp_path)
    monkeypatch.chdir(work)
    _surrogate_calibration(work / "calibration.json", 0.815, 0.355)
    rules = work / "prereg/tier_rules.yaml"
    rules.write_text(rules.read_text().replace("[0.75, 0.90]", "[0.50, 0.90]"))
    assert main(_calibrate_surrogate("z.json")) == 1
    assert "bytes differ from the verified amendments/001 record" in capsys.readouterr().err
    assert not (work / "z.json").exists()


# ------------------------------------------------------------------------------------------ workflow
_snakemake = partial(snakemake, timeout=600)


def test_gpu_dry_run_lists_the_missing_public_amendment(tmp_path):
    """A public freeze without the configured amendment: the dry run plans the job that stops with the
    command to run, and training waits on the calibration gate behind it."""
    work = copy_repo(tmp_path)
    (work / "prereg/freeze").mkdir(exist_ok=True)
    (work / "prereg/freeze/freeze.json").write_text("{}")
    shutil.rmtree(work / "prereg/freeze/amendments", ignore_errors=True)
    dry = _snakemake("--profile", "h100", "-n", "-p", "results/runs/c2-paired-s0/groups.jsonl", cwd=work)
    out = dry.stdout + dry.stderr
    assert "rule prereg_public_amendment_missing:" in out
    assert "prereg/freeze/amendments/001/amendment.json" in out
    assert "rule zero_shot_calibration:" in out and "rule prereg_public_freeze_missing:" not in out
    assert "paired-rollouts prereg amend --out prereg/freeze --reason" in out
    # the tier-1 verification does not depend on the amendment
    tier1 = _snakemake("--profile", "h100", "-n", "--forceall", "results/prereg/verification.json", cwd=work)
    assert "prereg_public_amendment_missing" not in tier1.stdout + tier1.stderr


def test_cpu_amendment_is_made_and_a_tampered_tier_rules_stops_the_gate(tmp_path):
    work = copy_repo(tmp_path)
    tiny = ("--profile", "cpu", "--configfile", ".test/config/config.yaml")
    _snakemake(
        "results/tiny/prereg/amendment_verification.json",
        "results/tiny/prereg/verification.json",
        *tiny,
        cwd=work,
    )
    report = json.loads((work / "results/tiny/prereg/amendment_verification.json").read_text())
    assert [r["record"] for r in report["records"]] == ["freeze", "amendments/001"]
    assert {c["path"] for c in report["covered"]} >= {"prereg/AMENDMENT-A2.md", "prereg/tier_rules.yaml"}
    tier1 = json.loads((work / "results/tiny/prereg/verification.json").read_text())
    assert [r["record"] for r in tier1["records"]] == ["freeze"]

    rules = work / "prereg/tier_rules.yaml"
    rules.write_text(rules.read_text().replace("luck_share_at_least: 0.15", "luck_share_at_least: 0.05", 1))
    result = _snakemake("results/tiny/calibration/zero_shot.json", *tiny, cwd=work, check=False)
    assert result.returncode != 0
    assert "Error in rule prereg_verify_amendments" in result.stdout + result.stderr
    log = (work / "results/tiny/logs/prereg_verify_amendments.log").read_text()
    assert "prereg/tier_rules.yaml" in log and "differs from the frozen" in log
    assert not (work / "results/tiny/prereg/amendment_verification.json").exists()
    assert not (work / "results/tiny/calibration/zero_shot.json").exists()


def test_calibrate_check_reads_the_register_through_its_typed_reader(tmp_path, capsys):
    """`calibrate check` reads zero_shot.json through records.read_zero_shot: a band of another shape is
    one line naming the file and the key, not a traceback from the table it prints."""
    register = _register()
    register["bands"][1]["achieved"] = "0.33"
    path = tmp_path / "zero_shot.json"
    path.write_text(json.dumps(register))
    assert main(["calibrate", "check", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    err = captured.err.strip().splitlines()
    assert (
        len(err) == 1
        and f"{path}: bands[1]: zero-shot calibration register key 'achieved' is '0.33'" in err[0]
    )
