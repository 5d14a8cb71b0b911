"""Issue 26: every register checks what it was built from.

Each test names the item of the issue it covers and fails on the typed-house base (48933d0): there the
register or verdict below was accepted as written.
"""

import contextlib
import copy
import json
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from test_decision_integrity import RUNS, _rewrite
from test_prereg import good_freeze, local_tsa  # noqa: F401 - fixtures of the freeze tests
from test_stats_decisions import (
    EXPECTED,
    V1,
    checked,
    completeness,
    decide,
    make_pools,
    rules_verification,
    seed_matrix,
)


@pytest.fixture()
def study(tmp_path):
    assert seed_matrix(tmp_path, "C2", make_pools(tmp_path)) == RUNS
    checked(tmp_path, RUNS, strict=True)
    return tmp_path


# ------------------------------------------------------------------ item 1


def test_completeness_checked_with_weaker_settings_is_not_admitted(study):
    """Item 1. Base: the run was admitted (complete: true, H2a decided) on a check that expected one
    validation task where the design has two, after the second task's periodic episodes were deleted."""
    run = "c2-paired-s1"
    for f in (study / "results" / "evals" / run).glob("periodic-*.jsonl"):
        _rewrite(f, lambda rows: [r for r in rows if r["task_id"] != V1])
    weaker = copy.deepcopy(EXPECTED)
    weaker["periodic"]["tasks"] = 1
    assert completeness(study, run, strict=True, expected=weaker)["complete"]  # against the weaker settings
    reg = decide(study, "C2", RUNS)
    reasons = reg["acceptance"][run]["reasons"]
    assert reg["acceptance"][run]["admitted"] is False
    assert any("settings.periodic.tasks = 1; the design's is 2" in r for r in reasons), reasons
    assert reg["decided"] is False and reg["H2a"]["passes"] is None


def test_a_complete_json_rehashed_over_edited_evidence_is_not_admitted(study):
    """Item 1 (recomputation). Base: complete.json with its digests rewritten over periodic files from
    which a validation task was deleted was admitted (only the digests were compared)."""
    from paired_rollouts.io import sha256_file

    run = "c2-paired-s1"
    path = study / "results" / "runs" / run / "complete.json"
    record = json.loads(path.read_text())
    for f in (study / "results" / "evals" / run).glob("periodic-*.jsonl"):
        _rewrite(f, lambda rows: [r for r in rows if r["task_id"] != V1])
        record["files"][f"evals/{f.name}"] = sha256_file(f)
    path.write_text(json.dumps(record))
    reg = decide(study, "C2", RUNS)
    reasons = reg["acceptance"][run]["reasons"]
    assert any("not what the completeness check gives on its files now" in r for r in reasons), reasons
    assert reg["decided"] is False and reg["H2a"]["passes"] is None


def test_a_complete_status_that_its_entries_contradict_is_refused(study, capsys):
    """A status is never trusted where its numbers are at hand. Base: complete: true with an entry under
    missing was admitted."""
    path = study / "results" / "runs" / "c2-paired-s0" / "complete.json"
    record = json.loads(path.read_text())
    record["missing"] = [{"kind": "file", "path": "evals/x.jsonl"}]
    path.write_text(json.dumps(record))
    with pytest.raises(AssertionError):
        decide(study, "C2", RUNS, out_name="contradicted.json")
    err = capsys.readouterr().err
    assert f"{path}: complete is true with 1 missing and 0 defects" in err
    assert not (study / "contradicted.json").exists()


def test_decide_without_the_design_settings_decides_nothing(study):
    """Item 1. Base: --settings/--expected did not exist and every run was admitted unchecked."""
    reg = decide(study, "C2", RUNS, design=False)
    assert reg["decided"] is False and reg["H2a"]["passes"] is None
    assert any("design's settings were not given" in m for m in reg["missing"])


# ------------------------------------------------------------------ item 2


def _decide_with(root: Path, luck: list[str] | None, groups: bool, out: str = "h1a.json") -> dict:
    res = root / "results"
    args = ["decide", "--condition", "C2", "--expected", json.dumps(EXPECTED), "--seeds", "0", "1"]
    args += ["--episodes", *[str(res / "evals" / r) for r in RUNS]]
    args += ["--complete", *[str(res / "runs" / r / "complete.json") for r in RUNS]]
    if groups:
        args += ["--groups", *[str(res / "runs" / r / "groups.jsonl") for r in RUNS]]
    if luck is not None:
        args += ["--luck", *luck]
    args += ["--rules", "rules.yaml", "--verification", str(rules_verification())]
    args += ["--manifest", str(root / "data" / "tasks" / "MANIFEST.json")]
    with contextlib.chdir(root):
        assert main([*args, "--out", str(root / out)]) == 0
    return json.loads((root / out).read_text())


@pytest.mark.parametrize("case", ["no_luck", "other_step", "no_groups"])
def test_h1a_without_its_evidence_is_not_decided(study, case):
    """Item 2. Base: H1a said passes false with decided true, complete true and missing []."""
    res = study / "results"
    luck = [str(res / "diagnostics" / r / "luck-step0.json") for r in RUNS]
    if case == "other_step":  # the luck share of another checkpoint, not the rule's step 0
        luck = []
        for r in RUNS:
            data = json.loads((res / "diagnostics" / r / "luck-step0.json").read_text())
            data["step"] = 6
            other = res / "diagnostics" / r / "luck-step6.json"
            other.write_text(json.dumps(data))
            luck.append(str(other))
    reg = _decide_with(study, None if case == "no_luck" else luck, groups=case != "no_groups")
    assert reg["decided"] is False and reg["complete"] is False
    assert reg["H1a"]["passes"] is None and reg["H1a"]["decided"] is False and reg["H1a"]["reason"]
    want = {"no_groups": "--groups", "no_luck": "--luck", "other_step": "luck-step6.json"}[case]
    assert any(m.startswith("c2-paired-s0: ") and want in m for m in reg["missing"]), reg["missing"]


# ------------------------------------------------------------------ item 3


def _zero_shot(tmp_path: Path, edit) -> Path:
    from test_calibration_gate import _register

    register = _register()  # a passing register of the registered model
    edit(register)
    path = tmp_path / "zero_shot.json"
    path.write_text(json.dumps(register))
    return path


def _band(register: dict, name: str) -> dict:
    return next(b for b in register["bands"] if b["name"] == name)


@pytest.mark.parametrize(
    ("case", "edit", "needle"),
    [
        ("clean_missed", lambda r: _band(r, "clean_success").update(achieved=0.5), "clean_success says pass"),
        ("luck_missed", lambda r: _band(r, "luck_share").update(achieved=0.01), "luck_share says pass"),
        ("no_bands", lambda r: r.update(bands=[]), "the register's bands are none"),
        ("status_fail", lambda r: r.update(status="fail", passes=False), "the register says fail"),
        (
            "not_applicable",
            lambda r: [b.update(applies=False, status="not_applicable") for b in r["bands"]],
            "applies=False but registered=True",
        ),
    ],
)
def test_calibrate_check_recomputes_each_band(tmp_path, capsys, case, edit, needle):
    """Item 3. Base: 'calibrate check' printed PASS and exited 0 for each of these registers."""
    path = _zero_shot(tmp_path, edit)
    assert main(["calibrate", "check", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and str(path) in err[0], err


def test_the_training_gate_reads_the_verdict(tmp_path, capsys):
    """Item 3. Base: train had no --zero-shot; the workflow gated on the register's existence only."""
    path = _zero_shot(tmp_path, lambda r: _band(r, "clean_success").update(achieved=0.5))
    for command in (["train", "--run", "c2-paired-s0"], ["surrogate", "arm", "--runs", "c2-paired-s0"]):
        args = [*command, "--tasks-dir", str(tmp_path), "--zero-shot", str(path), "--settings", "{}"]
        args += ["--model-dir", "m", "--verification", "v", "--out-dir", "o"] if command[0] == "train" else []
        args += ["--calibration", "c", "--verification", "v"] if command[0] == "surrogate" else []
        args += ["--results", str(tmp_path / "r")] if command[0] == "surrogate" else []
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "training does not start" in err and str(path) in err
    assert not (tmp_path / "r").exists() and not Path("o").exists()


# ------------------------------------------------------------------ item 4


def test_a_forged_run_register_is_refused(study, capsys):
    """Item 4. Base: verify-run said ACCEPT for a register whose AUCs were all set to 0.99 (it compared
    only complete_sha256) and curves-register averaged the forged values."""
    from test_decision_integrity import _register_and_verify

    res = study / "results"
    paths = []
    for run in ("c2-paired-s0", "c2-independent-s0"):
        assert _register_and_verify(study, run, capsys)[0] == 0
        paths.append(str(res / "runs" / run / "register.json"))
    out = study / "curves.json"
    assert main(["curves-register", "--registers", *paths, "--out", str(out)]) == 0
    path = Path(paths[0])
    forged = json.loads(path.read_text())
    forged["auc"] = {regime: 0.99 for regime in forged["auc"]}
    path.write_text(json.dumps(forged))
    capsys.readouterr()
    rc = main(["verify-run", "--run-dir", str(path.parent), "--results", str(res)])
    report = capsys.readouterr().out
    assert rc == 3 and report.startswith("c2-paired-s0: REJECT")
    assert "register.json differs from its recomputation from the files it names (auc)" in report
    out.unlink()
    assert main(["curves-register", "--registers", *paths, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: register.json differs from its recomputation" in err and not out.exists()
    manifests = [str(res / "runs" / r / "manifest.json") for r in ("c2-paired-s0", "c2-independent-s0")]
    assert main(["cross-stack", "--manifests", *manifests, "--registers", *paths, "--out", str(out)]) == 1
    assert "differs from its recomputation" in capsys.readouterr().err


# ------------------------------------------------------------------ item 7


def test_decide_on_edited_rules_is_refused_or_undecided(study, capsys):
    """Item 7. Base: decide judged an edited rules file and recorded nothing about it."""
    reg = decide(study, "C2", RUNS, verified=False, out_name="unverified.json")
    assert reg["decided"] is False and reg["H2a"]["passes"] is None
    assert any("not checked against a verification report" in m for m in reg["missing"])
    rules = study / "rules.yaml"
    rules.write_text(rules.read_text().replace("resamples: 2000", "resamples: 2001"))
    capsys.readouterr()
    with pytest.raises(AssertionError):
        decide(study, "C2", RUNS, out_name="edited.json")
    err = capsys.readouterr().err
    assert "rules.yaml: its bytes differ from the verified" in err and not (study / "edited.json").exists()


def test_decide_refuses_a_comparison_name_of_no_design(study, capsys):
    """Item 7. Base: 'decide --comparison bogus' wrote a register that table 16 rendered."""
    for name, extra in (("bogus", []), ("c2", []), ("c2-blocking", ["--scaling", "none"])):
        with pytest.raises(AssertionError):
            decide(study, "C2", RUNS, extra=["--comparison", name, *extra], out_name=f"{name}.json")
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"--comparison {name}: the comparison of C2" in err[0], err
        assert not (study / f"{name}.json").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--pairs", "0", "99"], "argument --pairs: 0 must be at least 1"),
        (["--draws", "0"], "argument --draws: 0 must be at least 1"),
        (["--bootstrap-resamples", "-1"], "argument --bootstrap-resamples: -1 must be at least 1"),
    ],
)
def test_power_refuses_bad_counts_in_one_line(tmp_path, capsys, args, needle):
    """Item 7. Base: --pairs 0 99 was accepted and --draws 0 ended in a ZeroDivisionError traceback."""
    command = ["surrogate", "power", "--decisions", "d.json", "--rules", "r.yaml", "--out", "p.json"]
    with pytest.raises(SystemExit) as info:
        main([*command, *args])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_power_refuses_an_undecided_register(study, capsys):
    """Item 7. Base: power was estimated from a register with decided: false."""
    decide(study, "C2", RUNS[:2], out_name="decisions/c2.json", seeds=("0", "1"))  # seed 1 missing
    out = study / "power.json"
    rc = main(
        ["surrogate", "power", "--decisions", str(study / "decisions" / "c2.json"), "--rules"]
        + [str(study / "rules.yaml"), "--draws", "5", "--out", str(out)]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "the decision is not decided" in err and not out.exists()


def test_predictions_need_the_amendment_verification(tmp_path, capsys):
    """Item 7. Base: 'predictions' without --verification judged tier rules nobody verified."""
    command = ["predictions", "--tier-rules", "prereg/tier_rules.yaml", "--decisions", "d.json"]
    with pytest.raises(SystemExit):
        main([*command, "--group-size", "4", "--out", str(tmp_path / "p.json")])
    assert "the following arguments are required: --verification" in capsys.readouterr().err


def test_schema_refuses_a_condition_without_seeds(tmp_path):
    """Item 7. Base: 'seeds: {C2: []}' passed the schema and ended in an IndexError."""
    import yaml
    from jsonschema import Draft202012Validator

    root = Path(__file__).resolve().parents[1]
    schema = json.loads((root / "config" / "schema.json").read_text())
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    scale = next(iter(config["scales"]))
    config["scales"][scale]["seeds"]["C2"] = []
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(config)]
    assert any("should be non-empty" in m or "is too short" in m for m in errors), errors
    from paired_rollouts.design import Design
    from paired_rollouts.errors import UserError

    with pytest.raises(UserError, match=f"scales.{scale}.seeds.C2: no seeds"):
        Design.from_config(config, scale)


# ------------------------------------------------------------------ item 9


def test_surrogate_summary_reads_the_finished_studys_registers(tmp_path, capsys):
    """Item 9. Base: the summary read probe/bandit.json as a trajectory register and stopped, recomputed
    curves from episodes nothing checked, and accepted a results root of any scale."""
    import shutil

    from records_fixtures import synthetic_study

    synthetic_study(tmp_path)
    res = tmp_path / "results"
    out = tmp_path / "summary.json"
    capsys.readouterr()
    assert main(["surrogate", "summary", "--results", str(res), "--out", str(out)]) == 1
    assert "not the results root of a surrogate scale" in capsys.readouterr().err and not out.exists()
    fixture = Path(__file__).parent / "fixtures/render/results/models/surrogate/calibration.json"
    (res / "models" / "surrogate").mkdir(parents=True)
    shutil.copy(fixture, res / "models" / "surrogate" / "calibration.json")
    assert main(["probe", "bandit", "--out", str(res / "probe" / "bandit.json")]) == 0
    assert main(["surrogate", "summary", "--results", str(res), "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    # hand-worked at_training curves (test_stats_decisions): s0 .5 .75 1, s1 .5 .5 1 -> mean .5 .625 1
    assert summary["curves_mean_over_seeds"]["C2 at_training paired"] == {"0": 0.5, "4": 0.625, "8": 1.0}
    assert summary["c2_validation_rise"]["paired"] == 0.5 and summary["probe"] == {}
    assert set(summary["c2_luck_by_step"]["paired"]) == {"0"}
    # the steps come from each run's manifest: a stray luck file is not read, a missing one is refused
    stray = res / "diagnostics" / "c2-paired-s0" / "luck-step6.json"
    shutil.copy(res / "diagnostics" / "c2-paired-s0" / "luck-step0.json", stray)
    assert main(["surrogate", "summary", "--results", str(res), "--out", str(out)]) == 0
    assert set(json.loads(out.read_text())["c2_luck_by_step"]["paired"]) == {"0"}
    stray.unlink()
    gone = res / "diagnostics" / "c2-independent-s1" / "luck-step0.json"
    kept = gone.read_bytes()
    gone.unlink()
    capsys.readouterr()
    assert main(["surrogate", "summary", "--results", str(res)]) == 1
    assert "c2-independent-s1/luck-step0.json" in capsys.readouterr().err
    # back as it was (another run's file in its place is refused: the C2 decision names this one)
    gone.write_bytes(kept)
    curves = res / "curves" / "c2.json"
    forged = json.loads(curves.read_text())
    forged["arms"]["paired"]["curves"]["at_training"]["8"] = 0.99
    curves.write_text(json.dumps(forged))
    capsys.readouterr()
    assert main(["surrogate", "summary", "--results", str(res)]) == 1
    assert "arms.paired.curves is not what its run registers give" in capsys.readouterr().err


# ------------------------------------------------------------------ item 5


def _other_stack(study: Path, capsys, edit) -> tuple[list[str], list[str]]:
    """The study's c2-paired-s0 again under a second results tree whose manifest says another stack."""
    import shutil

    from test_decision_integrity import _register_and_verify

    res = study / "results"
    run = "c2-paired-s0"
    assert _register_and_verify(study, run, capsys)[0] == 0
    other = study / "other" / "results"
    shutil.copytree(res, other)
    manifest = other / "runs" / run / "manifest.json"
    data = json.loads(manifest.read_text())
    data["hardware"] = {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"}
    edit(data)
    manifest.write_text(json.dumps(data))
    manifests = [str(r / "runs" / run / "manifest.json") for r in (res, other)]
    registers = [str(r / "runs" / run / "register.json") for r in (res, other)]
    return manifests, registers


def test_cross_stack_refuses_runs_of_different_scales(study, capsys):
    """Item 5. Base: a 100-step run and a 2-step run of one name became one replication."""
    manifests, registers = _other_stack(study, capsys, lambda m: m["settings"].update(steps=100))
    out = study / "cross.json"
    assert main(["cross-stack", "--manifests", *manifests, "--registers", *registers, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "ran different settings (steps 100 vs 2)" in err and "error: cross-stack:" not in err
    assert not out.exists()


def test_cross_stack_pairs_runs_of_one_scale_on_two_stacks(study, capsys):
    """Item 5: the stack's own settings (device, dtype, batch sizes) may differ in a replication."""
    manifests, registers = _other_stack(study, capsys, lambda m: m["settings"].update(micro_batch=16))
    out = study / "cross.json"
    assert main(["cross-stack", "--manifests", *manifests, "--registers", *registers, "--out", str(out)]) == 0
    (replication,) = json.loads(out.read_text())["replications"]
    assert replication["difference"]["auc"] == 0.0


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda r: r["difference"].update(auc=0.05), "difference.auc is 0.05, its runs give 0.0"),
        (
            lambda r: r["runs"][0].update(auc=r["runs"][0]["auc"] + 0.25),
            "difference.auc is 0.0, its runs give",
        ),
        (lambda r: r["difference"]["final"].update(clean=-0.5), "difference.final.clean is -0.5"),
        (lambda r: r.pop("difference"), "difference must be given exactly when two runs"),
        (
            lambda r: r["runs"][1].update(stack=r["runs"][0]["stack"]),
            "2 run(s) on 1 stack(s) replicate nothing",
        ),
    ],
)
def test_cross_stack_reader_recomputes_the_difference(study, capsys, edit, needle):
    """A difference its two runs do not give is refused where table 11 reads it (before: read as written)."""
    from paired_rollouts.records import read_cross_stack

    manifests, registers = _other_stack(study, capsys, lambda m: None)
    out = study / "cross.json"
    assert main(["cross-stack", "--manifests", *manifests, "--registers", *registers, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert read_cross_stack(out).replications[0].difference is not None
    edit(data["replications"][0])
    out.write_text(json.dumps(data))
    with pytest.raises(UserError) as info:
        read_cross_stack(out)
    assert needle in str(info.value) and str(out) in str(info.value), info.value


# ------------------------------------------------------------------ item 6

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"


def test_the_published_files_are_the_pinned_transcriptions():
    """Item 6: the committed files are the pinned ones (a rewrite must change the pin in a reviewed commit)."""
    from paired_rollouts.compare.published import PINNED_SHA256
    from paired_rollouts.io import sha256_file

    assert {name: sha256_file(PUBLISHED / name) for name in PINNED_SHA256} == PINNED_SHA256


def _compare_cli(results: Path, published: Path, scale: str, out: Path) -> int:
    args = ["compare", "--results", str(results), "--published", str(published), "--scale-name", scale]
    return main([*args, "--scale", scale, "--out", str(out)])


def test_rewritten_published_numbers_are_refused(tmp_path, capsys):
    """Item 6. Base: paper.yaml rewritten to a run's values was compared (95 of 227 'reproduced')."""
    import yaml

    doc = yaml.safe_load((PUBLISHED / "paper.yaml").read_text())
    doc["entries"][0]["value"] = 0.0
    rewritten = tmp_path / "paper.yaml"
    rewritten.write_text(yaml.safe_dump(doc))
    (tmp_path / "results").mkdir()
    out = tmp_path / "comparison.json"
    assert _compare_cli(tmp_path / "results", rewritten, "paper", out) == 1
    err = capsys.readouterr().err
    assert "is not the pinned transcription of the paper" in err and not out.exists()
    curves = tmp_path / "curves.yaml"
    curves.write_text((PUBLISHED / "curves.yaml").read_text() + "\n")
    from paired_rollouts.compare.published import load_published_curves
    from paired_rollouts.errors import UserError

    with pytest.raises(UserError, match="not the pinned transcription"):
        load_published_curves(curves)


def test_a_root_of_another_scale_is_not_compared_as_the_paper(tmp_path, capsys):
    """Item 6. Base: results/tiny_surrogate compared as --scale-name paper claimed agreement was expected."""
    root = tmp_path / "results" / "tiny_surrogate"
    root.mkdir(parents=True)
    out = tmp_path / "comparison.json"
    assert _compare_cli(root, PUBLISHED / "paper.yaml", "paper", out) == 1
    err = capsys.readouterr().err
    assert "the results root of scale tiny_surrogate" in err and "--scale-name tiny_surrogate" in err
    assert not out.exists()


def test_a_key_of_no_register_is_an_error_not_a_scale_gap(tmp_path):
    """Item 6. Base: a misspelled key path read 'cannot be computed at this scale'."""
    import yaml
    from paired_rollouts.compare.compare import Registers, compare
    from paired_rollouts.compare.published import load_published
    from paired_rollouts.errors import UserError
    from records_fixtures import decision_register

    (tmp_path / "decisions").mkdir()
    (tmp_path / "decisions" / "c2.json").write_text(json.dumps(decision_register()))
    doc = yaml.safe_load((PUBLISHED / "paper.yaml").read_text())
    entry = next(e for e in doc["entries"] if e["op"] == "value" and e["keys"][0].startswith("decisions/c2"))
    doc["entries"] = [entry]
    published = tmp_path / "one.yaml"
    for key, status in (("decisions/c2.json:secondary.auc.c2-paired-s7", "not computed"),):
        entry["keys"] = [key]
        published.write_text(yaml.safe_dump(doc))
        row = compare(load_published(published), Registers(tmp_path), scale="x", scale_label="x")["entries"][
            0
        ]
        assert row["status"] == status  # a run the scale lacks: a gap of the scale
    entry["keys"] = ["decisions/c2.json:secondary.aucc"]
    published.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match="has no key 'aucc' at any scale"):
        compare(load_published(published), Registers(tmp_path), scale="x", scale_label="x")


# ------------------------------------------------------------------ item 8: file-system faults


def _mount_tmpfs(folder: Path, options: str) -> bool:
    """A small tmpfs at ``folder`` (needs root and mount rights; False where they are missing)."""
    import subprocess

    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


def _umount(folder: Path) -> None:
    import subprocess

    subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.fixture()
def read_only_folder(tmp_path):
    """A folder no file can be created in: chmod 555 for a user, a read-only tmpfs for root (who ignores
    modes); skipped where neither is possible."""
    import os

    folder = tmp_path / "ro"
    if os.geteuid() != 0:
        folder.mkdir()
        folder.chmod(0o555)
        yield folder, "EACCES"
        folder.chmod(0o755)
        return
    if not _mount_tmpfs(folder, "size=64k,ro"):
        pytest.skip("root without mount rights: no read-only folder can be made here")
    yield folder, "EROFS"
    _umount(folder)


@pytest.fixture()
def full_folder(tmp_path):
    """A 16 KiB tmpfs: a larger write ends in ENOSPC (root with mount rights only, else skipped)."""
    import os

    folder = tmp_path / "full"
    if os.geteuid() != 0 or not _mount_tmpfs(folder, "size=16k"):
        pytest.skip("a small file system needs root with mount rights")
    yield folder
    _umount(folder)


def _one_line_naming(err: str, path: Path, cause: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and f"({cause})" in lines[0], err
    assert "Traceback" not in err


def test_a_read_only_output_folder_is_one_line(read_only_folder, tmp_path, capsys):
    """Item 8. Base: a 25-line traceback (only UserError was caught)."""
    folder, cause = read_only_folder
    out = folder / "luck.json"
    assert main(["probe", "bandit", "--out", str(out)]) == 1
    _one_line_naming(capsys.readouterr().err, out, cause)
    assert list(folder.iterdir()) == []


def test_a_full_disk_is_one_line_and_leaves_nothing(full_folder, capsys):
    """Item 8. Base: ENOSPC ended in a traceback and left the temporary file."""
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import atomic_write_text

    out = full_folder / "big.json"
    with pytest.raises(UserError, match=r"big\.json: No space left on device \(ENOSPC\)"):
        atomic_write_text(out, "x" * 64 * 1024)
    assert list(full_folder.iterdir()) == []


def test_a_file_size_limit_is_one_line(tmp_path):
    """Item 8 (no root needed): a subprocess under RLIMIT_FSIZE gets EFBIG writing its output."""
    import resource
    import signal
    import subprocess
    import sys

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    out = tmp_path / "bandit.json"
    done = subprocess.run(
        [sys.executable, "-m", "paired_rollouts", "probe", "bandit", "--out", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
    )
    assert done.returncode == 1, done.stderr
    _one_line_naming(done.stderr, out, "EFBIG")
    assert list(tmp_path.iterdir()) == []


def test_tasks_checks_its_output_folder_before_generating(read_only_folder, monkeypatch, capsys):
    """Item 8. Base: the pools were generated (7 s) before the write failed."""
    import paired_rollouts.backoffice.tasks as tasks

    def never(*args, **kwargs):
        raise AssertionError("the pools were generated before the folder was checked")

    monkeypatch.setattr(tasks, "write_pools", never)
    folder, cause = read_only_folder
    assert main(["tasks", "--out", str(folder / "pools")]) == 1
    _one_line_naming(capsys.readouterr().err, folder / "pools", cause)


def test_stale_temporaries_of_a_killed_write_are_removed(tmp_path):
    """Item 8. Base: temporary files of killed writes stayed forever."""
    import os
    import subprocess

    from paired_rollouts.io import atomic_write_text

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        dead = tmp_path / f".x.json.{2**22 + 12345}.abcd1234.tmp"  # beyond pid_max: no such process
        live = tmp_path / f".x.json.{sleeper.pid}.efgh5678.tmp"  # a write in progress elsewhere
        other = tmp_path / f".y.json.{2**22 + 12345}.ijkl9012.tmp"  # another target's
        for path in (dead, live, other):
            path.write_text("partial")
        atomic_write_text(tmp_path / "x.json", "{}\n")
        assert not dead.exists() and live.exists() and other.exists()
        assert (tmp_path / "x.json").read_text() == "{}\n"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert os.path.exists(live)


# ------------------------------------------------------------------ the weak cases ("Also")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["group-stats", "--groups", "{d}", "--out", "{o}"], "is a folder; give the file itself"),
        (["luck-share", "--episodes", "{d}", "--out", "{o}"], "is a folder; give the file itself"),
        (["calibrate", "check", "{d}"], "is a folder; give the file itself"),
        (
            [
                "completeness",
                "--run",
                "c2-paired-s0",
                "--settings",
                "@{d}",
                "--evals",
                "{d}",
                "--manifest",
                "m",
            ]
            + ["--out", "{o}"],
            "is a folder; give the settings file itself",
        ),
        (["verify-run", "--run-dir", "{d}/runs/x", "--results", "{d}"], "no completeness record"),
    ],
)
def test_a_folder_given_as_a_file_is_one_line(tmp_path, capsys, args, needle):
    """Also (8, 10, 11, 27). Base: 'file not found' for a folder that is there, or a traceback."""
    (tmp_path / "runs" / "x" / "complete.json").mkdir(parents=True)
    out = tmp_path / "out.json"
    argv = [a.format(d=tmp_path, o=out) for a in args]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert not out.exists()


def test_luck_share_counts_must_be_positive(tmp_path, capsys):
    """Also (16). Base: '--schedules 0' was read as 'not given'."""
    with pytest.raises(SystemExit):
        main(["luck-share", "--episodes", "e.jsonl", "--out", "o.json", "--schedules", "0"])
    assert "argument --schedules: 0 must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "needle"), [("--settings", "gives no training"), ("--expected", "no phase")]
)
def test_completeness_with_nothing_expected_is_refused(study, capsys, flag, needle):
    """Also (28). Base: 'completeness --settings {}' reported complete: true with nothing expected."""
    res = study / "results"
    out = study / "c.json"
    argv = [
        "completeness",
        "--run",
        "c2-paired-s0",
        flag,
        "{}",
        "--evals",
        str(res / "evals" / "c2-paired-s0"),
    ]
    argv += ["--manifest", str(study / "data" / "tasks" / "MANIFEST.json"), "--out", str(out)]
    assert main(argv) == 1
    assert needle in capsys.readouterr().err and not out.exists()


def test_probe_checkpoint_refuses_another_runs_folder(tmp_path, capsys):
    """Also (33). Base: --run c2-paired-s0 with the folder of c2-paired-s1 probed s1 as s0 (or said
    'train the run first' for a folder that does not exist)."""
    other = tmp_path / "runs" / "c2-paired-s1"
    other.mkdir(parents=True)
    argv = ["probe", "checkpoint", "--run", "c2-paired-s0", "--step", "0", "--model-dir", "m"]
    argv += ["--tasks-dir", "t", "--out", str(tmp_path / "p.json")]
    assert main([*argv, "--run-dir", str(other)]) == 1
    assert "holds the checkpoints of c2-paired-s1" in capsys.readouterr().err
    assert main([*argv, "--run-dir", str(tmp_path / "runs" / "c2-paired-s0")]) == 1
    assert "no such run folder" in capsys.readouterr().err


def test_a_rehashed_pool_with_bad_bytes_is_one_line(tmp_path):
    """Also (39, 43): a pool edited with a re-hashed MANIFEST is read strictly (no replaced bytes, no NaN)."""
    from paired_rollouts.backoffice.pools import load_pool
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import sha256_bytes

    for body, needle in (
        (b'{"task_id": "\xff"}\n', r"p\.jsonl:1: not UTF-8"),
        (b'{"x": NaN}\n', r"p\.jsonl:1: NaN"),
    ):
        (tmp_path / "p.jsonl").write_bytes(body)
        manifest = {"pools": {"p": {"path": "p.jsonl", "sha256": sha256_bytes(body), "count": 1}}}
        (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
        with pytest.raises(UserError, match=needle):
            load_pool(tmp_path / "p.jsonl")


@pytest.mark.parametrize(
    ("section", "key", "value", "needle"),
    [
        ("training", "micro_batch", 3, "micro_batch 3 must divide"),
        ("evaluation", "eval_tasks", 250, "eval_tasks: data/tasks/validation.jsonl: has 10 tasks"),
    ],
)
def test_settings_fail_when_the_workflow_is_read_not_in_a_job(section, key, value, needle):
    """Also (59). Base: micro_batch and eval_tasks failed in the first job that read them."""
    import yaml
    from paired_rollouts.errors import UserError
    from paired_rollouts.layout import Layout

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    tiny = yaml.safe_load((root / ".test" / "config" / "config.yaml").read_text())
    config["scales"].update(tiny["scales"])
    config["scales"]["tiny"].setdefault(section, {})[key] = value
    with contextlib.chdir(root), pytest.raises(UserError, match=needle):
        Layout.from_config(config, "tiny", "cpu").check()


def test_tsa_urls_are_http_or_https(tmp_path, capsys):
    """Also (81). Base: file:// and ftp:// TSAs were accepted."""
    (tmp_path / "doc.txt").write_text("x")
    for url in ("file:///etc/passwd", "ftp://tsa.example/tsr", "freetsa.org/tsr"):
        argv = [
            "prereg",
            "freeze",
            "--out",
            str(tmp_path / "f"),
            "--root",
            str(tmp_path),
            "--documents",
            "doc.txt",
        ]
        assert main([*argv, "--tsa", f"a={url}", "--tsa", "b=https://tsa.example/tsr"]) == 1
        assert "a TSA is an http:// or https:// URL" in capsys.readouterr().err
        assert not (tmp_path / "f").exists()


def test_luck_share_blames_the_defective_schedule_not_the_intact_ones():
    """Also (104). Base: one duplicated sample made every intact schedule 'short' (M taken as the max)."""
    from paired_rollouts.stats.luck_share import build_tables

    rows = [
        {"task_id": f"t{t}", "schedule_seed": k, "true_success": (k + m) % 2 == 0}
        for t in range(3)
        for k in range(4)
        for m in range(4)
    ]
    rows.append(dict(rows[0]))  # a fifth sample of t0's schedule 0
    built = build_tables(rows)
    assert built["M"] == 4 and sorted(built["tables"]) == ["t1", "t2"]
    assert built["defects"] == [{"task_id": "t0", "problem": "schedule 0 has 5 samples, expected 4"}]


def test_a_duplicated_training_group_is_refused(study, capsys):
    """Also (107). Base: a group recorded twice was counted twice in every rate."""
    groups = study / "results" / "runs" / "c2-paired-s0" / "groups.jsonl"
    lines = groups.read_text().splitlines(keepends=True)
    groups.write_text("".join([*lines, lines[0]]))
    out = study / "gs.json"
    assert main(["group-stats", "--groups", str(groups), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        f"{groups}:{len(lines) + 1}: a second record of c2-paired-s0 step 0 group 0 (first at line 1)" in err
    )
    assert not out.exists()


@pytest.mark.parametrize("key", ["tasks_dir", "decision_rules", "published"])
def test_a_path_starting_with_a_dash_is_refused_by_the_schema(key):
    """Also. Base: 'tasks_dir: --help' passed the path pattern (an option to the command it reached)."""
    import yaml
    from paired_rollouts.config_check import check_config
    from paired_rollouts.errors import UserError

    root = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    config.update(accelerator="cpu", scale="standin", **{key: "--help"})
    with pytest.raises(UserError, match=f"{key}: '--help' is not allowed"):
        check_config(config, root / "config" / "schema.json", "config/config.yaml")


@pytest.mark.parametrize(("value", "ok"), [("NA", True), ("nan", False), ("-5.0", False), ("inf", False)])
def test_the_ledger_takes_times_or_na_only(tmp_path, value, ok):
    """Also. Base: NaN and negative times were summed into the ledger."""
    from paired_rollouts.compare.ledger import read_benchmark
    from paired_rollouts.errors import UserError

    path = tmp_path / "b.tsv"
    path.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{value}\t0:00:01\t10.0\t0.5\n")
    if ok:
        assert read_benchmark(path)["s"] != read_benchmark(path)["s"]  # NaN: not measured
    else:
        with pytest.raises(UserError, match=r"b\.tsv: s is .*not a time or size"):
            read_benchmark(path)


@pytest.mark.tsa
@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.update(policy="1.2.3.4"), "policy differ(s) from the freeze record's copy"),
        (lambda t: t.update(tsa_name="CN=Someone Else"), "tsa_name differ(s) from the freeze record's copy"),
        (
            lambda t: t["tsa_certificate"].update(not_after="2099-01-01T00:00:00Z"),
            "tsa_certificate.not_after",
        ),
        (lambda t: t["tsa_certificate"].update(issuer="CN=Public CA"), "tsa_certificate.issuer"),
    ],
)
def test_informational_freeze_fields_are_checked(request, tmp_path, capsys, edit, needle):
    """Also (79). Base: the policy, TSA name and certificate fields freeze.json copies were never compared
    with the token and the stored certificate, so a reader of freeze.json could be told anything."""
    import shutil

    from test_prereg import _assert_rejected

    ws = tmp_path / "ws"
    shutil.copytree(request.getfixturevalue("good_freeze"), ws)

    path = ws / "freeze" / "freeze.json"
    record = json.loads(path.read_text())
    edit(record["tokens"][0])
    path.write_text(json.dumps(record))
    _assert_rejected(ws, capsys, needle)
