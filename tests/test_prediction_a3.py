"""Amendment A3: the paired arms of a surrogate scale as a registered prediction.

The rules' published gaps are the paper's; the verdict logic on hand cases (inside, outside, too few seed
pairs, registered too late); the branch amendment frozen and verified with real local RFC 3161
authorities, and broken by one changed byte of the calibration register; the prediction register's reader
refusing a register whose summaries or verdicts do not follow from its per-pair values.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.prereg.local_tsa import _openssl_available
from paired_rollouts.prereg.rules import load_prediction_rules, validate_prediction_rules
from paired_rollouts.records import read_prediction_a3
from paired_rollouts.surrogate import prediction as pr
from prereg_workspaces import A2, BASE, REPO, copy_documents, freeze_with_a2, verify

A3 = ["prereg/AMENDMENT-A3.md", "prereg/prediction_rules.yaml"]
CALIBRATION = "results/s/models/surrogate/calibration.json"
BRANCH = "results/s/prereg/a3"
RULES = load_prediction_rules(REPO / "prereg/prediction_rules.yaml")
tsa = pytest.mark.tsa
needs_openssl = pytest.mark.skipif(not _openssl_available(), reason="openssl CLI not installed")


# ------------------------------------------------------------------------------------------ the rules
def test_published_gaps_are_the_papers():
    """Each gap's published value is data/published/paper.yaml's entry (printed unit / scale: a fraction)."""
    entries = {
        e["id"]: e for e in yaml.safe_load((REPO / "data/published/paper.yaml").read_text())["entries"]
    }
    published = {g["name"]: g["published"] for g in RULES["gaps"]}
    assert published == {"c2_auc": 0.037, "c2_final_noisy": 0.051, "c2_recovery": 0.054, "c4_auc": 0.003}
    for gap in RULES["gaps"]:
        entry = entries[gap["published_id"]]
        assert gap["published"] == pytest.approx(entry["value"] / entry.get("scale", 1), abs=1e-12)
        # the same decision-register block the paper's mean is compared at
        assert entry["keys"][0].split(":")[1].replace("_mean", "_by_seed") == gap["by_seed"]
        assert entry["keys"][0].startswith(f"decisions/{gap['condition'].lower()}.json:")
    assert RULES["min_seed_pairs"] == 16 and RULES["interval"]["level"] == 95


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("min_seed_pairs"), "missing key min_seed_pairs"),
        (
            lambda r: r["gaps"][0].update(by_seed="H2b.auc_difference_by_seed"),
            "not a per-seed-pair block of C2",
        ),
        (lambda r: r["gaps"][1].update(name="c2_auc"), "given twice"),
        (lambda r: r["interval"].update(level=100), "interval.level"),
    ],
)
def test_bad_prediction_rules_are_one_line_errors(edit, message):
    rules = copy.deepcopy(RULES)
    edit(rules)
    with pytest.raises(UserError, match=message):
        validate_prediction_rules(rules, "rules.yaml")


# ------------------------------------------------------------------------------------------ verdicts
def _pairs(mean: float, n: int, spread: float = 0.01) -> list[float]:
    return [mean + spread * ((i % 5) - 2) for i in range(n)]


def test_verdicts_on_hand_cases():
    values = _pairs(0.04, 16)  # mean 0.04 (+-0.02 around it), the interval covers 0.037, not 0.10
    inside = pr.judge(values, 0.037, RULES, in_time=True)
    assert inside["verdict"] == "inside" and inside["seed_pairs"] == 16
    assert inside["mean"] == pytest.approx(sum(values) / 16)
    low, high = inside["interval"]
    assert low < 0.037 < high and high - low < 0.02
    assert pr.judge(values, 0.10, RULES, in_time=True)["verdict"] == "outside"
    assert pr.judge(values, -0.01, RULES, in_time=True)["verdict"] == "outside"
    # a constant gap: a point interval, whose ends count as inside
    assert pr.judge([0.02] * 16, 0.02, RULES, in_time=True)["interval"] == [0.02, 0.02]
    assert pr.judge([0.02] * 16, 0.02, RULES, in_time=True)["verdict"] == "inside"
    # fewer than 16 pairs is never a pass, even with the published value in the interval
    few = pr.judge(values[:15], 0.037, RULES, in_time=True)
    assert few["verdict"] == "too_few_seed_pairs" and few["interval"] is not None
    assert pr.judge(None, 0.037, RULES, in_time=True)["verdict"] == "not_computed"
    assert pr.judge(values, 0.037, RULES, in_time=False)["verdict"] == "registered_too_late"
    # fixed seed: the same values give the same interval
    assert pr.judge(values, 0.037, RULES, True) == inside


# ------------------------------------------------------------------------------------------ the register
def _register(in_time: bool = True) -> dict:
    """A prediction register as `surrogate prediction` writes it, from hand-made per-pair values."""
    gaps = []
    for gap, values in zip(
        RULES["gaps"], [_pairs(0.04, 16), _pairs(0.2, 16), _pairs(0.05, 3), None], strict=True
    ):
        row = {k: gap[k] for k in ("name", "label", "condition", "published_id", "published")}
        row["by_seed_key"], row["decision"] = (
            gap["by_seed"],
            f"results/s/decisions/{gap['condition'].lower()}.json",
        )
        row.update(pr.judge(values, gap["published"], RULES, in_time))
        gaps.append(row)
    gen, first = 1_780_000_000.0, 1_780_000_031.0 if in_time else 1_779_999_999.0
    return {
        "format": pr.FORMAT,
        "amendment": {"record": BRANCH, "gen_time": "2026-05-28T20:26:40Z", "gen_time_epoch": gen},
        "first_paired_checkpoint": {"path": "c", "time": "t", "time_epoch": first},
        "registered_before_paired_runs": in_time,
        "paired_runs": ["c2-paired-s0"],
        "min_seed_pairs": RULES["min_seed_pairs"],
        "interval": RULES["interval"],
        "gaps": gaps,
        "counts": pr.counts(gaps),
        "files": {"x": "0" * 64},
        "rules": "prereg/prediction_rules.yaml",
        "calibration": CALIBRATION,
        "verification": "v.json",
    }


def _write(tmp_path: Path, register: dict) -> Path:
    path = tmp_path / "prediction_a3.json"
    path.write_text(json.dumps(register))
    return path


def test_reader_accepts_a_register_that_follows_from_its_values(tmp_path):
    register = read_prediction_a3(_write(tmp_path, _register()))
    assert [g.verdict for g in register.gaps] == ["inside", "outside", "too_few_seed_pairs", "not_computed"]
    late = read_prediction_a3(_write(tmp_path, _register(in_time=False)))
    assert {g.verdict for g in late.gaps} == {
        "registered_too_late"
    } and not late.registered_before_paired_runs


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r["gaps"][1].update(verdict="inside"), "gaps.c2_final_noisy.verdict is 'inside'"),
        (lambda r: r["gaps"][0].update(mean=0.05), "mean or interval does not follow"),
        (lambda r: r["gaps"][0]["interval"].__setitem__(0, -0.5), "mean or interval does not follow"),
        (lambda r: r["gaps"][0]["by_seed"].append(0.9), "seed_pairs"),
        (lambda r: r["gaps"][2].update(verdict="inside"), "too_few_seed_pairs"),
        (lambda r: r.update(registered_before_paired_runs=False), "registered_before_paired_runs"),
        (lambda r: r["counts"].update(inside=2), "counts do not follow"),
        (lambda r: r["gaps"][0].update(verdict="passes"), "is not one of"),
    ],
)
def test_reader_refuses_a_tampered_register(tmp_path, edit, message):
    register = _register()
    edit(register)
    with pytest.raises(UserError, match=message) as caught:
        read_prediction_a3(_write(tmp_path, register))
    assert "prediction_a3.json" in str(caught.value) and "\n" not in str(caught.value)


def test_table17_shows_each_gap_and_its_verdict(tmp_path):
    from paired_rollouts.render import tables

    text = tables.render_table(17, {"prediction": [_write(tmp_path, _register())]}, "surrogate")
    rows = [line for line in text.splitlines() if line.endswith("\\\\") and "&" in line][1:]
    cells = [[c.strip() for c in row[:-2].split(" & ")] for row in rows]
    assert [c[-1] for c in cells] == ["inside", "outside", "too few seed pairs", "not computed"]
    assert [c[1] for c in cells] == ["16", "16", "3", "0"]
    assert cells[0][2] == "$+$0.039" and cells[0][4] == "$+$0.037"  # AUC gaps as fractions (mean 0.03875)
    assert cells[1][2] == "$+$19.9" and cells[1][4] == "$+$5.1"  # success gaps in points (0.19875)
    assert "31 s before the first paired checkpoint" in text


# ------------------------------------------------------------------------------------------ the amendment
def _verify(root: Path, out: Path, *extra: str) -> int:
    return verify(root, out, "--amendments", "1", *extra)


@pytest.fixture(scope="module")
def amended(tmp_path_factory) -> Path:
    """A freeze-local freeze, amendment 001 (A2) and the branch A3 under results/s/prereg/a3 (CLI)."""
    if not _openssl_available():
        pytest.skip("openssl CLI not installed")
    root = tmp_path_factory.mktemp("a3")
    copy_documents(root, A3)
    (root / CALIBRATION).parent.mkdir(parents=True)
    (root / CALIBRATION).write_text('{"stage": "curves", "passes": true}\n')
    common = freeze_with_a2(root)
    branch = ["--into", str(root / BRANCH), "--after", "1", "--replace-inside", str(root / "results")]
    documents = ["--documents", *BASE, *A2, *A3, CALIBRATION]
    assert main(["prereg", "amend-local", *common, *branch, "--reason", "A3", *documents]) == 0
    return root


@pytest.fixture
def ws(amended, tmp_path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(amended, root)
    return root


@tsa
@needs_openssl
def test_a3_is_a_branch_chained_to_a2_and_verifies(ws, capsys):
    a2 = json.loads((ws / "results/prereg/freeze/amendments/001/amendment.json").read_text())
    a3 = json.loads((ws / BRANCH / "amendment.json").read_text())
    assert a3["amendment"]["number"] == 2 and a3["amendment"]["previous"]["imprint"] == a2["imprint"]
    assert not (ws / "results/prereg/freeze/amendments/002").exists()  # the shared chain is untouched
    out = ws / "results/s/prereg/prediction_verification.json"
    assert _verify(ws, out, "--branch", str(ws / BRANCH), "--require", *A3, CALIBRATION) == 0, (
        capsys.readouterr()
    )
    report = json.loads(out.read_text())
    assert [r["record"] for r in report["records"]][-1] == f"branch {ws / BRANCH}"
    assert {c["path"] for c in report["covered"]} >= {*A3, CALIBRATION}
    stamp = pr.a3_stamp(out)
    assert stamp["gen_time_epoch"] == max(pr._epoch(t["gen_time"]) for t in report["records"][-1]["tokens"])
    # A2's verification alone does not cover A3's documents
    assert _verify(ws, ws / "v2.json", "--require", *A3) == 1


@tsa
@needs_openssl
def test_a_tampered_calibration_register_breaks_a3_verification(ws, capsys):
    out = ws / "results/s/prereg/prediction_verification.json"
    calibration = ws / CALIBRATION
    data = bytearray(calibration.read_bytes())
    data[-2] = ord("e")  # one byte: "true}" -> "truee"
    calibration.write_bytes(bytes(data))
    capsys.readouterr()
    assert _verify(ws, out, "--branch", str(ws / BRANCH), "--require", *A3, CALIBRATION) == 1
    err = capsys.readouterr().err
    assert f"{CALIBRATION}: SHA-256" in err and "differs from the frozen" in err
    assert not out.exists()


@tsa
@needs_openssl
def test_a_remade_a2_leaves_a3_unchained(ws, capsys):
    """A3 names A2's imprint: an A2 made again breaks A3 until A3 is made again after it."""
    common = ["--out", str(ws / "results/prereg/freeze"), "--root", str(ws)]
    replace = ["--replace-inside", str(ws / "results")]
    assert (
        main(
            [
                "prereg",
                "amend-local",
                *common,
                "--number",
                "1",
                *replace,
                "--reason",
                "A2 again",
                "--documents",
                *BASE,
                *A2,
            ]
        )
        == 0
    )
    out = ws / "v.json"
    capsys.readouterr()
    assert _verify(ws, out, "--branch", str(ws / BRANCH)) == 1
    assert "does not chain to the previous record's imprint" in capsys.readouterr().err


@tsa
@needs_openssl
def test_surrogate_training_needs_the_protocol_and_a3_covering_its_calibration(ws, capsys, monkeypatch):
    """The surrogate's arm job starts only on a passing verification and, from the calibrated surrogate,
    on a verified A3 that covers the calibration register it reads (before: the workflow ordered the jobs
    after the reports but the job never read them)."""
    from paired_rollouts.surrogate.commands import check_protocol

    base, a3 = ws / "results/s/prereg/verification.json", ws / "results/s/prereg/prediction_verification.json"
    assert _verify(ws, base) == 0
    assert _verify(ws, a3, "--branch", str(ws / BRANCH), "--require", *A3, CALIBRATION) == 0, (
        capsys.readouterr()
    )
    monkeypatch.chdir(ws)
    check_protocol(str(base), [str(a3)], CALIBRATION)  # the unpaired arms: no A3; the others: A3
    check_protocol(str(base), [], CALIBRATION)
    refusals = [
        (lambda: check_protocol(str(base), [str(base)], CALIBRATION), "not a branch amendment"),
        (lambda: check_protocol(str(a3), [str(a3)], "results/s/other.json"), "not covered"),
    ]
    forged = json.loads(base.read_text())
    forged["failures"] = ["a token does not verify"]
    (ws / "forged.json").write_text(json.dumps(forged))
    refusals.append((lambda: check_protocol("forged.json", [], CALIBRATION), "passes is true with 1 failure"))
    for call, fragment in refusals:
        with pytest.raises(UserError, match=fragment):
            call()
    (ws / CALIBRATION).write_text('{"stage": "curves", "passes": false}\n')  # changed after A3
    with pytest.raises(UserError, match="differ from the verified"):
        check_protocol(str(base), [str(a3)], CALIBRATION)
