"""Pre-registration freeze/verify against a real RFC 3161 authority on 127.0.0.1 (started here).

One module-scoped local TSA serves several keys under one test root: two "good" keys (the freeze's
two authorities), a third key (pinning), a key that rejects every query, and a key whose certificate
expired long ago. One good freeze is made once and copied into each test's workspace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.prereg import freeze as fz
from paired_rollouts.prereg import tsp
from paired_rollouts.prereg.local_tsa import KeySpec, LocalTSA, _openssl_available
from paired_rollouts.prereg.rules import load_decision_rules
from paired_rollouts.prereg.verify import run_verification

REPO = Path(__file__).resolve().parents[1]
tsa = pytest.mark.tsa
needs_openssl = pytest.mark.skipif(not _openssl_available(), reason="openssl CLI not installed")

DOCS = {
    "prereg/PREREGISTRATION.md": "# Protocol\n\nH2a passes if the mean AUC difference is at least 0.03.\n",
    "prereg/decision_rules.yaml": (REPO / "prereg/decision_rules.yaml").read_text(),
}


@pytest.fixture(scope="module")
def local_tsa(tmp_path_factory):
    if not _openssl_available():
        pytest.skip("openssl CLI not installed")
    keys = [
        KeySpec("test-a"),
        KeySpec("test-b"),
        KeySpec("test-c"),
        KeySpec("rejecting", rejecting=True),
        KeySpec(
            "expired",
            not_before=dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
            not_after=dt.datetime(2021, 1, 1, tzinfo=dt.UTC),
        ),
    ]
    with LocalTSA(tmp_path_factory.mktemp("tsa"), keys) as server:
        yield server


def _auths(server: LocalTSA, *names: str) -> list[fz.Authority]:
    return [fz.Authority(n, server.url(n), server.root_pem) for n in names]


def _write_docs(root: Path) -> None:
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.fixture(scope="module")
def good_freeze(local_tsa, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("good")
    _write_docs(root)
    fz.freeze(root / "freeze", _auths(local_tsa, "test-a", "test-b"), root=root, test_authority=True)
    return root


@pytest.fixture
def ws(good_freeze, tmp_path) -> Path:
    """A private copy of the good workspace (documents + freeze)."""
    root = tmp_path / "ws"
    shutil.copytree(good_freeze, root)
    return root


def _verify_cli(root: Path, *extra: str, allow_test_authority: bool = True) -> tuple[int, Path]:
    out = root / "results/prereg/verification.json"
    rc = main(
        [
            "prereg",
            "verify",
            "--freeze",
            str(root / "freeze"),
            "--out",
            str(out),
            "--root",
            str(root),
            *(["--allow-test-authority"] if allow_test_authority else []),
            *extra,
        ]
    )
    return rc, out


def _assert_rejected(root: Path, capsys, *needles: str) -> dict:
    """CLI exits 1, names the problem, leaves no (stale) report; returns the API report."""
    out = root / "results/prereg/verification.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text('{"passes": true}\n')  # a stale passing report must disappear
    rc, _ = _verify_cli(root)
    err = capsys.readouterr().err
    assert rc == 1
    assert not out.exists()
    for needle in needles:
        assert needle in err, err
    return run_verification(root / "freeze", root=root, allow_test_authority=True)


def _token(report: dict, name: str) -> dict:
    return next(t for t in report["records"][0]["tokens"] if t["name"] == name)


def _stamp(server: LocalTSA, name: str, query: bytes) -> bytes:
    request = urllib.request.Request(
        server.url(name), data=query, headers={"Content-Type": tsp.QUERY_CONTENT_TYPE}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def _swap_token(root: Path, name: str, raw: bytes) -> None:
    """Replace a token and update the record consistently, so only the cryptography can object."""
    freeze_dir = root / "freeze"
    (freeze_dir / f"{name}.tsr").write_bytes(raw)
    record = json.loads((freeze_dir / "freeze.json").read_text())
    info = tsp.token_info(tsp.parse_reply(raw, "swap")).as_json()
    for token in record["tokens"]:
        if token["name"] == name:
            token.update(
                sha256=_sha(raw),
                gen_time=info["gen_time"],
                gen_time_epoch=info["gen_time_epoch"],
                serial=info["serial"],
            )
    (freeze_dir / "freeze.json").write_text(json.dumps(record))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------------------ tests
@tsa
def test_good_freeze_verifies_with_both_verifiers(ws, capsys):
    rc, out = _verify_cli(ws)
    err = capsys.readouterr().err
    assert rc == 0, err
    report = json.loads(out.read_text())
    assert report["passes"] and report["test_authority"] and not report["failures"]
    tokens = report["records"][0]["tokens"]
    assert [t["name"] for t in tokens] == ["test-a", "test-b"]
    for token in tokens:
        assert token["rfc3161_client"]["ok"] and token["openssl"]["ok"]
        assert f"{token['name']} <" in err and token["gen_time"] in err  # authority and time are printed
    record = json.loads((ws / "freeze/freeze.json").read_text())
    manifest = (ws / "freeze/protocol.sha256").read_bytes()
    assert record["imprint"] == _sha(manifest) == report["imprint"]
    assert manifest.decode().splitlines() == [f"{_sha(DOCS[p].encode())}  {p}" for p in DOCS]
    for name in ("request.tsq", "test-a.tsr", "test-b.tsr", "certs/test-a-tsa.pem", "certs/test-a-roots.pem"):
        assert (ws / "freeze" / name).is_file()


@tsa
def test_test_authority_refused_without_flag(ws, capsys):
    rc, out = _verify_cli(ws, allow_test_authority=False)
    assert rc == 1 and not out.exists()
    assert "test_authority" in capsys.readouterr().err


@tsa
def test_one_changed_document_byte_is_rejected(ws, capsys):
    doc = ws / "prereg/PREREGISTRATION.md"
    data = bytearray(doc.read_bytes())
    data[3] ^= 0x01
    doc.write_bytes(bytes(data))
    _assert_rejected(ws, capsys, "PREREGISTRATION.md", "differs from the frozen", "prereg amend")


@tsa
def test_token_from_other_key_under_same_root_is_rejected(ws, local_tsa, capsys):
    query = (ws / "freeze/request.tsq").read_bytes()
    _swap_token(ws, "test-a", _stamp(local_tsa, "test-c", query))  # same query, same root, other key
    report = _assert_rejected(ws, capsys, "test-a.tsr")
    token = _token(report, "test-a")
    assert not token["rfc3161_client"]["ok"] and not token["openssl"]["ok"]
    assert "pinned" in token["openssl"]["detail"]
    assert _token(report, "test-b")["rfc3161_client"]["ok"]


@tsa
def test_wrong_nonce_is_rejected(ws, local_tsa, capsys):
    other_query, _ = tsp.build_query((ws / "freeze/protocol.sha256").read_bytes())  # same imprint, new nonce
    _swap_token(ws, "test-b", _stamp(local_tsa, "test-b", other_query))
    token = _token(_assert_rejected(ws, capsys, "test-b.tsr"), "test-b")
    assert "Nonce" in token["rfc3161_client"]["detail"]
    assert not token["openssl"]["ok"] and "nonce" in token["openssl"]["detail"].lower()


@tsa
@pytest.mark.parametrize("where", ["gen_time", "signature"])
def test_tampered_token_is_rejected(ws, capsys, where):
    path = ws / "freeze/test-a.tsr"
    raw = bytearray(path.read_bytes())
    if where == "gen_time":
        at = raw.index(b"\x18\x0f20") + 4  # GeneralizedTime 'YYYYMMDDHHMMSSZ': bump the year's last digits
        raw[at] = ord("9") if raw[at] != ord("9") else ord("8")
    else:
        raw[-1] ^= 0x01  # the SignerInfo's signature is the last field of the reply
    path.write_bytes(bytes(raw))
    token = _token(_assert_rejected(ws, capsys, "test-a.tsr"), "test-a")
    assert not token["rfc3161_client"]["ok"] and not token["openssl"]["ok"]


@tsa
def test_missing_certificate_file_is_rejected(ws, capsys):
    (ws / "freeze/certs/test-b-tsa.pem").unlink()
    _assert_rejected(ws, capsys, "certs/test-b-tsa.pem", "missing", "restore")


@tsa
def test_token_issued_after_certificate_expiry_is_rejected(ws, local_tsa, capsys, tmp_path):
    shutil.rmtree(ws / "freeze")
    # openssl ts -reply still signs with the expired certificate; genTime (now) is after notAfter (2021).
    fz.freeze(
        ws / "freeze", _auths(local_tsa, "test-a", "expired"), root=ws, test_authority=True, self_check=False
    )
    token = _token(_assert_rejected(ws, capsys, "expired.tsr"), "expired")
    assert not token["rfc3161_client"]["ok"] and not token["openssl"]["ok"]
    with pytest.raises(UserError, match="do not verify"):  # the normal freeze refuses such a token
        fz.freeze(tmp_path / "f2", _auths(local_tsa, "test-a", "expired"), root=ws, test_authority=True)
    assert not (tmp_path / "f2").exists()


@tsa
def test_expired_certificate_still_verifies_at_gentime(tmp_path, capsys):
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    not_after = now + dt.timedelta(seconds=2)
    root = tmp_path / "ws"
    _write_docs(root)
    keys = [KeySpec("short", not_after=not_after), KeySpec("test-a")]
    with LocalTSA(tmp_path / "tsa", keys) as server:
        fz.freeze(root / "freeze", _auths(server, "short", "test-a"), root=root, test_authority=True)
    time.sleep(max(0.0, (not_after - dt.datetime.now(dt.UTC)).total_seconds()) + 1.1)
    assert dt.datetime.now(dt.UTC) > not_after  # the TSA certificate has expired by now ...
    rc, out = _verify_cli(root)  # ... but the token was made while it was valid
    assert rc == 0, capsys.readouterr().err
    assert all(
        t["openssl"]["ok"] and t["rfc3161_client"]["ok"]
        for t in json.loads(out.read_text())["records"][0]["tokens"]
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@tsa
@pytest.mark.parametrize("failure", ["down", "rejecting"])
def test_tsa_down_or_rejecting_writes_nothing(local_tsa, tmp_path, capsys, failure):
    _write_docs(tmp_path)
    bad = f"http://127.0.0.1:{_free_port()}/tsr" if failure == "down" else local_tsa.url("rejecting")
    out = tmp_path / "results/freeze"
    rc = main(
        [
            "prereg",
            "freeze",
            "--out",
            str(out),
            "--root",
            str(tmp_path),
            "--test-authority",
            "--timeout",
            "5",
            "--tsa",
            f"test-a={local_tsa.url('test-a')}",
            "--tsa",
            f"bad={bad}",
            "--cafile",
            f"test-a={local_tsa.root_pem}",
            "--cafile",
            f"bad={local_tsa.root_pem}",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1
    assert "TSA bad" in err and ("unreachable" in err if failure == "down" else "rejection" in err), err
    assert not out.exists() and list(out.parent.iterdir()) == []  # not even a temp folder


@tsa
def test_freeze_refuses_to_overwrite_and_amend_appends(ws, local_tsa, capsys):
    before = (ws / "freeze/freeze.json").read_bytes()
    rc = main(
        [
            "prereg",
            "freeze",
            "--out",
            str(ws / "freeze"),
            "--root",
            str(ws),
            "--test-authority",
            "--tsa",
            f"test-a={local_tsa.url('test-a')}",
            "--tsa",
            f"test-b={local_tsa.url('test-b')}",
        ]
    )
    assert rc == 1 and "never overwritten" in capsys.readouterr().err
    assert (ws / "freeze/freeze.json").read_bytes() == before
    # change the protocol, then record the change as amendment 001 (reusing the freeze's TSAs and roots)
    (ws / "prereg/PREREGISTRATION.md").write_text(DOCS["prereg/PREREGISTRATION.md"] + "Amended.\n")
    assert _verify_cli(ws)[0] == 1
    rc = main(["prereg", "amend", "--out", str(ws / "freeze"), "--root", str(ws), "--reason", "clarify H2a"])
    assert rc == 0, capsys.readouterr().err
    amendment = ws / "freeze/amendments/001"
    assert "clarify H2a" in (amendment / "amendment.txt").read_text()
    record = json.loads((amendment / "amendment.json").read_text())
    assert record["amendment"]["previous"]["imprint"] == json.loads(before)["imprint"]
    rc, out = _verify_cli(ws)
    assert rc == 0, capsys.readouterr().err
    assert [r["record"] for r in json.loads(out.read_text())["records"]] == ["freeze", "amendments/001"]


@tsa
def test_freeze_local_cli_end_to_end(tmp_path, capsys):
    _write_docs(tmp_path)
    out = tmp_path / "results/prereg/freeze"
    documents = ["--documents", *DOCS]  # as the cpu profile's Snakemake rule calls it
    assert main(["prereg", "freeze-local", "--out", str(out), "--root", str(tmp_path), *documents]) == 0
    record = json.loads((out / "freeze.json").read_text())
    assert record["test_authority"] is True and len(record["tokens"]) == 2
    assert len({t["tsa_certificate"]["sha256"] for t in record["tokens"]}) == 2  # two keys ...
    assert len({t["roots"]["sha256"][0] for t in record["tokens"]}) == 1  # ... under one test root
    report = tmp_path / "results/prereg/verification.json"
    assert (
        main(
            [
                "prereg",
                "verify",
                "--freeze",
                str(out),
                "--out",
                str(report),
                "--root",
                str(tmp_path),
                "--allow-test-authority",
            ]
        )
        == 0
    )
    assert json.loads(report.read_text())["passes"]


# ------------------------------------------------------------------------------------------ decision rules
def test_repo_decision_rules_load():
    rules = load_decision_rules(REPO / "prereg/decision_rules.yaml")
    assert rules["auc_weights"] == [0.1, 0.2, 0.2, 0.2, 0.2, 0.1]
    assert rules["bootstrap"] == {"resamples": 10000, "seed": 20260911, "interval": 95}
    assert rules["threshold"] == 0.617
    assert rules["h2"]["mean_at_least"] == 0.03 and rules["h3"]["steps"] == [40, 60, 80]
    assert rules["h5"] == {"set": "heldout_types", "lower_bound_above": -0.03, "interval": 90}
    assert rules["h1a_c4"]["independent_within"] == 0.07 and rules["h1a_c4"]["paired_at_most"] == 0.02
    assert rules["h1a_c2"]["lambda_at_least"] == 0.15 and rules["h1a_c2"]["lower_bound_above"] == 0.05
    assert rules["h1b"]["outcome"] == "every" and rules["h1b"]["transition"] == "strict_majority"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("  seed: 20260911\n", "  seed: 20260911\n  extra: 1\n", "unknown key bootstrap.extra"),
        ("threshold: 0.617\n", "", "missing key threshold"),
        ("  mean_at_least: 0.05\n", "  mean_at_least: high\n", "h3.mean_at_least"),
        ("[0.1, 0.2, 0.2, 0.2, 0.2, 0.1]", "[0.2, 0.2, 0.2, 0.2, 0.1, 0.1]", "trapezoid"),
    ],
)
def test_bad_decision_rules_are_user_errors(tmp_path, old, new, message):
    text = DOCS["prereg/decision_rules.yaml"]
    assert old in text
    bad = tmp_path / "rules.yaml"
    bad.write_text(text.replace(old, new, 1))
    with pytest.raises(UserError, match=message):
        load_decision_rules(bad)


def test_at_least_two_tsas_required():
    with pytest.raises(UserError, match="at least two"):
        fz.authorities(["only=http://127.0.0.1:1/"], None)


@tsa
def test_unmarked_freeze_from_test_root_is_rejected(ws, capsys):
    record_path = ws / "freeze/freeze.json"
    record = json.loads(record_path.read_text())
    record["test_authority"] = False  # pretend the local test freeze were a real one
    record_path.write_text(json.dumps(record))
    rc, out = _verify_cli(ws, allow_test_authority=False)
    assert rc == 1 and not out.exists()
    assert "local test authority" in capsys.readouterr().err


@tsa
def test_freeze_with_one_token_removed_is_rejected(ws, capsys):
    """freeze requires two authorities; verify used to pass a record left with one token."""
    record_path = ws / "freeze/freeze.json"
    record = json.loads(record_path.read_text())
    record["tokens"] = record["tokens"][:1]
    record_path.write_text(json.dumps(record))
    report = _assert_rejected(ws, capsys, "1 token(s) from distinct authorities verify", "at least 2")
    assert not report["passes"]


@tsa
def test_printed_authority_is_the_verified_signer(ws, capsys):
    """The subject shown is the token signer's, not the editable copy in freeze.json."""
    record_path = ws / "freeze/freeze.json"
    record = json.loads(record_path.read_text())
    real = record["tokens"][0]["tsa_certificate"]["subject"]
    record["tokens"][0]["tsa_certificate"]["subject"] = "CN=Trusted Public TSA,O=Somebody Else"
    record_path.write_text(json.dumps(record))
    report = _assert_rejected(ws, capsys, "the token's signer is")
    assert _token(report, "test-a")["tsa_subject"] == real
    rc, _ = _verify_cli(ws)
    err = capsys.readouterr().err
    assert "Trusted Public TSA" not in err.split("does NOT verify")[0] and f"TSA '{real}'" in err
