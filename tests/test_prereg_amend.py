"""Amendment A2: the tier rules' strict loader, and the amendment frozen and verified like the freeze.

The amendment tests run the real CLI against real local RFC 3161 authorities: `freeze-local` starts one
and stops it, so `amend-local` has to start a second one (the freeze's URLs are dead by then) and the
verification must accept the amendment's own stored roots.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.prereg.local_tsa import _openssl_available
from paired_rollouts.prereg.rules import load_tier_rules, validate_tier_rules
from paired_rollouts.prereg.verify import require_covered
from prereg_workspaces import A2, BASE, REPO, freeze_with_a2, verify

AMENDED = A2
tsa = pytest.mark.tsa
needs_openssl = pytest.mark.skipif(not _openssl_available(), reason="openssl CLI not installed")


# ------------------------------------------------------------------------------------------ tier rules
def _tier_rules() -> dict:
    return yaml.safe_load((REPO / "prereg/tier_rules.yaml").read_text())


def test_repo_tier_rules_load_with_the_registered_numbers():
    rules = load_tier_rules(REPO / "prereg/tier_rules.yaml")
    assert rules["amends"] == "prereg/decision_rules.yaml"
    assert rules["calibration"]["bands"]["Qwen/Qwen3.5-2B"]["clean_success"] == [0.75, 0.90]
    assert rules["calibration"]["luck_share_at_least"] == 0.15
    assert rules["h4"] == {
        "condition": "C4",
        "scalings": ["group", "none"],
        "group_gap_exceeds_none": True,
        "none_gap_above": 0.0,
    }
    predictions = rules["predictions"]
    assert "P11" not in predictions and len(predictions) == 12
    confidences = {pid: p["confidence"] for pid, p in predictions.items()}
    assert confidences == {
        "P1": 0.90,
        "P2": 0.65,
        "P3": 0.55,
        "P4": 0.60,
        "P5": 0.55,
        "P6": 0.55,
        "P7": 0.65,
        "P8": 0.60,
        "P9": 0.80,
        "P10": 0.50,
        "P12": 0.60,
        "P13": 0.70,
    }
    assert (
        predictions["P1"]["expected"],
        predictions["P1"]["within"],
        predictions["P1"]["paired_below"],
    ) == (0.57, 0.05, 0.02)
    assert (predictions["P4"]["final_min"], predictions["P4"]["final_max"]) == (0.02, 0.08)
    assert predictions["P6"]["steps"] == [40, 60, 80]
    assert predictions["P8"]["conditions"] == ["C2", "C4"]
    assert predictions["P10"]["check"] == "not_run"


def _edit(rules: dict, path: str, value) -> dict:
    *parents, last = path.split(".")
    node = rules
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return rules


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("h4.none_gap_above", _DELETE, "missing key h4.none_gap_above"),
        ("calibration.luck_share_at_least", _DELETE, "missing key calibration.luck_share_at_least"),
        ("predictions.P2.gap_at_least", _DELETE, "missing key predictions.P2.gap_at_least"),
        ("predictions.P1.tolerance", 0.1, "unknown key predictions.P1.tolerance"),
        ("extra", 1, "unknown key extra"),
        ("predictions.P3.check", "auc_gap_between", "check 'auc_gap_between' is not a known check"),
        ("predictions.P9.confidence", 1.2, "confidence 1.2 must lie in [0, 1]"),
        ("predictions.P9.confidence", -0.1, "confidence -0.1 must lie in [0, 1]"),
        ("predictions.P3.min", 0.05, "min 0.05 exceeds max 0.03"),
        ("predictions.P5.reference", "C9", "condition 'C9' is not one of"),
        ("predictions.P1.expected", "0.57", "must be a number"),
        ("calibration.bands.Qwen/Qwen3.5-2B.clean_success", [0.9, 0.75], "0 <= low <= high <= 1"),
        ("h4.scalings", ["group"], "h4.scalings must list group and none"),
        ("schema_version", 2, "schema_version 2 is not 1"),
    ],
)
def test_bad_tier_rules_are_one_line_user_errors(tmp_path, path, value, message):
    rules = _tier_rules()
    if path.startswith("calibration.bands."):
        rules["calibration"]["bands"]["Qwen/Qwen3.5-2B"]["clean_success"] = value
    else:
        _edit(rules, path, value)
    bad = tmp_path / "prereg/tier_rules.yaml"
    bad.parent.mkdir()
    bad.write_text(yaml.safe_dump(rules))
    with pytest.raises(UserError) as info:
        load_tier_rules(bad)
    text = str(info.value)
    assert message in text and str(bad) in text and "\n" not in text


def test_tier_rules_validation_returns_a_copy():
    rules = _tier_rules()
    out = validate_tier_rules(rules, "x")
    out["predictions"]["P1"]["expected"] = 0.0
    assert rules["predictions"]["P1"]["expected"] == 0.57


# ------------------------------------------------------------------------------------------ amendment
@pytest.fixture(scope="module")
def amended(tmp_path_factory) -> Path:
    """A freeze-local freeze of the tier-1 documents, then amendment 001 with the A2 documents (CLI)."""
    if not _openssl_available():
        pytest.skip("openssl CLI not installed")
    root = tmp_path_factory.mktemp("amended")
    freeze_with_a2(root)
    return root


@pytest.fixture
def ws(amended, tmp_path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(amended, root)
    return root


@tsa
@needs_openssl
def test_amendment_freezes_and_verifies_with_its_own_local_tsa(ws, capsys):
    freeze = ws / "results/prereg/freeze"
    base = json.loads((freeze / "freeze.json").read_text())
    record = json.loads((freeze / "amendments/001/amendment.json").read_text())
    assert record["test_authority"] is True and record["amendment"]["previous"]["imprint"] == base["imprint"]
    # a second authority: the amendment's tokens are signed by other keys under another root
    base_roots = {t["roots"]["sha256"][0] for t in base["tokens"]}
    assert {t["roots"]["sha256"][0] for t in record["tokens"]}.isdisjoint(base_roots)
    assert [d["path"] for d in record["documents"]] == BASE + AMENDED
    out = ws / "results/prereg/amendment_verification.json"
    assert verify(ws, out, "--amendments", "1", "--require", *AMENDED) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert [r["record"] for r in report["records"]] == ["freeze", "amendments/001"]
    assert all(t["verified"] for r in report["records"] for t in r["tokens"])
    assert {c["path"]: c["record"] for c in report["covered"]} == dict.fromkeys(
        BASE + AMENDED, "amendments/001"
    )
    # the tier-1 verification (no amendment) is the base freeze alone, and does not cover tier_rules.yaml
    tier1 = ws / "results/prereg/verification.json"
    assert verify(ws, tier1, "--amendments", "0") == 0
    assert [r["record"] for r in json.loads(tier1.read_text())["records"]] == ["freeze"]
    old_cwd = Path.cwd()
    import os

    os.chdir(ws)
    try:
        assert require_covered(out, "prereg/tier_rules.yaml").record == "amendments/001"
        assert load_tier_rules("prereg/tier_rules.yaml", verification=out)["h4"]["condition"] == "C4"
        with pytest.raises(UserError, match="not covered by a verified freeze record"):
            require_covered(tier1, "prereg/tier_rules.yaml")
        # the report is read through records.read_covered: an entry of another shape is one line
        bad = json.loads(out.read_text())
        bad["covered"][0]["sha256"] = "edited"
        (ws / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(UserError, match=r"bad\.json: covered\[0\]: .* key 'sha256' is 'edited'"):
            require_covered(ws / "bad.json", "prereg/tier_rules.yaml")
        # tampering after the verification is caught by the decision-side check too
        (ws / "prereg/tier_rules.yaml").write_text((ws / "prereg/tier_rules.yaml").read_text() + "# edit\n")
        with pytest.raises(UserError, match="bytes differ from the verified amendments/001"):
            load_tier_rules("prereg/tier_rules.yaml", verification=out)
    finally:
        os.chdir(old_cwd)


@tsa
@needs_openssl
def test_tampered_tier_rules_fail_the_amendment_verification(ws, capsys):
    rules = ws / "prereg/tier_rules.yaml"
    rules.write_text(rules.read_text().replace("luck_share_at_least: 0.15", "luck_share_at_least: 0.10"))
    out = ws / "results/prereg/amendment_verification.json"
    out.write_text("{}")  # a stale report is removed, never left standing
    capsys.readouterr()
    assert verify(ws, out, "--amendments", "1", "--require", *AMENDED) == 1
    err = capsys.readouterr().err
    assert "tier_rules.yaml: SHA-256" in err and "differs from the frozen" in err
    assert not out.exists()


@tsa
@needs_openssl
def test_missing_or_uncovered_amendment_is_refused(ws, capsys):
    out = ws / "results/prereg/amendment_verification.json"
    assert verify(ws, out, "--amendments", "2") == 1
    assert "1 amendment(s) present, 2 required" in capsys.readouterr().err
    # the base freeze alone does not cover the amended documents
    assert verify(ws, out, "--amendments", "0", "--require", *AMENDED) == 1
    assert "prereg/tier_rules.yaml: not covered by" in capsys.readouterr().err and not out.exists()


@tsa
@needs_openssl
def test_amend_local_numbering_and_replacement(ws, capsys):
    freeze = ws / "results/prereg/freeze"
    args = ["prereg", "amend-local", "--out", str(freeze), "--root", str(ws), "--reason", "again"]
    assert main([*args, "--number", "1"]) == 1
    assert "the next is 002, not 001" in capsys.readouterr().err
    first = (freeze / "amendments/001/amendment.json").read_bytes()
    replace = [*args, "--number", "1", "--replace-inside", str(ws / "results")]
    # without --documents an amendment re-hashes the previous record's documents: here the base freeze's,
    # so the amended documents are not covered and the required verification says so
    assert main(replace) == 0
    out = ws / "results/prereg/amendment_verification.json"
    assert verify(ws, out, "--amendments", "1", "--require", *AMENDED) == 1
    assert "prereg/tier_rules.yaml: not covered by" in capsys.readouterr().err
    assert main([*replace, "--documents", *BASE, *AMENDED]) == 0
    assert (freeze / "amendments/001/amendment.json").read_bytes() != first
    assert "again" in (freeze / "amendments/001/amendment.txt").read_text()
    assert verify(ws, out, "--amendments", "1", "--require", *AMENDED) == 0
