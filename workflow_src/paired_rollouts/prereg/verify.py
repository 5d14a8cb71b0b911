"""Verify a freeze offline: document hashes, the stamped manifest, and every token, two ways.

Each token is checked by rfc3161-client (the trust decision: chain to the *stored* roots at genTime,
pinned TSA certificate, nonce, imprint) and, independently, by the ``openssl`` CLI at ``-attime
<genTime>``. Both verdicts are recorded; a token passes only if both pass. Failures are collected so
that one run names every broken file, and the caller turns them into a UserError (exit 1).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from paired_rollouts.errors import UserError
from paired_rollouts.io import read_json, sha256_bytes
from paired_rollouts.prereg import record as fz
from paired_rollouts.prereg import tsp

if TYPE_CHECKING:
    from paired_rollouts.records import Covered

REFREEZE = "restore the file from version control; if it is truly lost, make a new freeze or amendment"
# A freeze needs two independent witnesses (freeze refuses fewer); verification counts verified tokens.
MIN_AUTHORITIES = 2


def _read(path: Path, what: str, failures: list[str]) -> bytes | None:
    if not path.is_file():
        failures.append(f"{path}: {what} is missing; {REFREEZE}")
        return None
    return path.read_bytes()


def _certs(path: Path, what: str, expected: list[str], failures: list[str]) -> list | None:
    """Load a stored PEM bundle and check it against the fingerprints recorded at freeze time."""
    if not path.is_file():
        failures.append(f"{path}: {what} is missing; {REFREEZE}")
        return None
    try:
        certs = tsp.load_pem_bundle(path, what)
    except UserError as exc:
        failures.append(str(exc))
        return None
    got = [tsp.fingerprint(c) for c in certs]
    if got != list(expected):
        failures.append(
            f"{path}: {what} does not match the fingerprint(s) recorded in the freeze; {REFREEZE}"
        )
        return None
    return certs


def verify_record(record_dir: Path, root: Path, kind: str, record: dict, record_files: dict) -> dict:
    """Check one record (the base freeze or one amendment). Returns {"tokens": [...], "failures": [...]}."""
    failures: list[str] = []
    manifest_path, manifest = _check_manifest(record_dir, kind, record, failures)
    query_path, query = _check_query(record_dir, record, failures)
    if not record.get("tokens"):
        failures.append(f"{record_dir / fz.RECORD[kind]}: lists no tokens; {REFREEZE}")
    stamped = (manifest_path, manifest, query_path, query)
    tokens_out = [
        _check_token(record_dir, record, token, stamped, failures) for token in record.get("tokens", [])
    ]
    witnesses = {t["tsa_certificate_sha256"] for t in tokens_out if t.get("verified")}
    if len(witnesses) < MIN_AUTHORITIES:
        failures.append(
            f"{record_dir / fz.RECORD[kind]}: {len(witnesses)} token(s) from distinct authorities "
            f"verify; a freeze needs at least {MIN_AUTHORITIES}; {REFREEZE}"
        )
    return {"tokens": tokens_out, "failures": failures}


def _check_manifest(
    record_dir: Path, kind: str, record: dict, failures: list[str]
) -> tuple[Path, bytes | None]:
    """The stamped manifest: its bytes hash to the imprint and it lists the recorded documents (and text)."""
    manifest_path = record_dir / record.get("manifest", {}).get("file", fz.MANIFEST)
    manifest = _read(manifest_path, "the stamped manifest", failures)
    if manifest is None:
        return manifest_path, None
    imprint = record.get("imprint")
    if sha256_bytes(manifest) != imprint:
        failures.append(f"{manifest_path}: its SHA-256 is not the frozen imprint {imprint}; {REFREEZE}")
    entries = fz.parse_manifest(manifest.decode("utf-8", errors="replace"), str(manifest_path))
    expected = [(d["path"], d["sha256"]) for d in record.get("documents", [])]
    amendment = record.get("amendment")
    if amendment:
        text = _read(record_dir / amendment["text_file"], "the amendment text", failures)
        if text is not None:
            expected.append((amendment["text_path"], sha256_bytes(text)))
    if entries != expected:
        failures.append(
            f"{manifest_path}: does not list the documents and hashes recorded in "
            f"{fz.RECORD[kind]}; {REFREEZE}"
        )
    return manifest_path, manifest


def _check_query(record_dir: Path, record: dict, failures: list[str]) -> tuple[Path, bytes | None]:
    """The one query sent to every TSA: its recorded bytes, imprint and nonce."""
    query_path = record_dir / record.get("request", {}).get("file", fz.QUERY)
    query = _read(query_path, "the time-stamp query", failures)
    nonce = int(record["request"]["nonce"])
    if query is None:
        return query_path, None
    if sha256_bytes(query) != record["request"].get("sha256"):
        failures.append(f"{query_path}: differs from the query recorded in the freeze; {REFREEZE}")
    try:
        parsed = tsp.parse_query(query, str(query_path))
        if parsed.message_imprint.message.hex() != record.get("imprint") or int(parsed.nonce or -1) != nonce:
            failures.append(f"{query_path}: its imprint or nonce differs from the freeze record; {REFREEZE}")
    except UserError as exc:
        failures.append(str(exc))
    return query_path, query


def _check_token(record_dir: Path, record: dict, token: dict, stamped: tuple, failures: list[str]) -> dict:
    """One TSA's token, checked by rfc3161-client and by openssl against the stored certificates."""
    manifest_path, manifest, query_path, query = stamped
    tsr_path = record_dir / token["file"]
    where = f"{tsr_path} (TSA {token['name']})"
    row = {
        "name": token["name"],
        "url": token["url"],
        "file": str(tsr_path),
        "gen_time": token.get("gen_time"),
        "serial": token.get("serial"),
        "policy": token.get("policy"),
        "tsa_certificate_sha256": token["tsa_certificate"]["sha256"],
        "tsa_subject": token["tsa_certificate"]["subject"],
    }
    raw = _read(tsr_path, "the time-stamp reply", failures)
    leaf, roots, inter = _token_certs(record_dir, token, failures)
    if raw is None or leaf is None or roots is None or inter is None or manifest is None or query is None:
        row["rfc3161_client"] = {"ok": False, "detail": "not run: a stored file is missing or altered"}
        row["openssl"] = {"ok": False, "detail": "not run: a stored file is missing or altered"}
        return row
    stored = fz.certificate_record(leaf[0], token["tsa_certificate"]["file"])
    differ = sorted(k for k, v in stored.items() if token["tsa_certificate"].get(k) != v)
    if differ:
        failures.append(
            f"{where}: tsa_certificate.{', '.join(differ)} in freeze.json differ(s) from the stored "
            f"certificate; {REFREEZE}"
        )
    if sha256_bytes(raw) != token.get("sha256"):
        failures.append(f"{tsr_path}: its bytes differ from the reply recorded at freeze time; {REFREEZE}")
    nonce = int(record["request"]["nonce"])
    ok_c, detail_c = tsp.verify_with_client(raw, manifest, roots, inter, leaf[0], nonce, where)
    epoch = _check_signer(raw, token, row, where, failures)
    chain = [record_dir / token["intermediates"]["file"]] if token.get("intermediates") else []
    ok_o, detail_o = tsp.verify_with_openssl(
        tsr_path,
        manifest_path,
        query_path,
        record_dir / token["roots"]["file"],
        chain,
        record_dir / token["tsa_certificate"]["file"],
        epoch,
    )
    row["rfc3161_client"] = {"ok": ok_c, "detail": detail_c}
    row["openssl"] = {"ok": ok_o, "detail": detail_o}
    row["verified"] = bool(ok_c and ok_o)
    if not ok_c:
        failures.append(f"{where}: rejected by rfc3161-client ({detail_c})")
    if not ok_o:
        failures.append(f"{where}: rejected by openssl ({detail_o})")
    if not record.get("test_authority") and (
        fz.is_test_certificate(leaf[0]) or any(fz.is_test_certificate(r) for r in roots)
    ):
        failures.append(
            f"{where}: signed by the local test authority but the freeze is not marked "
            "test_authority; re-freeze against public TSAs"
        )
    return row


def _token_certs(
    record_dir: Path, token: dict, failures: list[str]
) -> tuple[list | None, list | None, list | None]:
    """The stored TSA certificate, root bundle and intermediates of a token, each pinned by fingerprint."""
    name = token["name"]
    leaf = _certs(
        record_dir / token["tsa_certificate"]["file"],
        f"TSA certificate of {name}",
        [token["tsa_certificate"]["sha256"]],
        failures,
    )
    roots = _certs(
        record_dir / token["roots"]["file"], f"root bundle of {name}", token["roots"]["sha256"], failures
    )
    inter: list | None = []
    if token.get("intermediates"):
        inter = _certs(
            record_dir / token["intermediates"]["file"],
            f"intermediates of {name}",
            token["intermediates"]["sha256"],
            failures,
        )
    return leaf, roots, inter


def _check_signer(raw: bytes, token: dict, row: dict, where: str, failures: list[str]) -> int:
    """The token's own signer, genTime and serial against the record's copies; returns genTime (epoch) for
    openssl's -attime, taken from the token itself (the freeze record's copy is not trusted here)."""
    tsr_path = row["file"]
    epoch = int(token.get("gen_time_epoch", 0))
    try:
        response = tsp.parse_reply(raw, where)
        info = tsp.token_info(response)
        epoch = int(info.gen_time.timestamp())
        # the subject printed and reported is the verified signer's, not freeze.json's editable copy
        signer = tsp.signer_certificate(response, where)
        row["tsa_subject"] = signer.subject.rfc4514_string()
        row["tsa_certificate_sha256"] = tsp.fingerprint(signer)
        if row["tsa_subject"] != token["tsa_certificate"]["subject"]:
            failures.append(
                f"{where}: freeze.json names TSA '{token['tsa_certificate']['subject']}', the "
                f"token's signer is '{row['tsa_subject']}'; {REFREEZE}"
            )
        row["gen_time"] = tsp.iso_utc(info.gen_time)
        # every field the record copies from the token (genTime, serial, policy, nonce, imprint, TSA
        # name) must be the token's own: none is informational, a reader of freeze.json sees them
        copied = info.as_json()
        differ = sorted(k for k, v in copied.items() if token.get(k) != v)
        if differ:
            failures.append(
                f"{tsr_path}: {', '.join(differ)} differ(s) from the freeze record's copy; {REFREEZE}"
            )
        row["policy"] = copied["policy"]
    except UserError as exc:
        failures.append(str(exc))
    return epoch


def run_verification(
    freeze_dir: str | os.PathLike,
    root: str | os.PathLike = ".",
    allow_test_authority: bool = False,
    echo=None,
    amendments: int | None = None,
    require: tuple[str, ...] | list[str] = (),
    branch: str | os.PathLike | None = None,
) -> dict:
    """Verify the freeze and its amendments; return the report (``passes`` false => see ``failures``).

    ``amendments`` limits the chain to the base freeze and its first N amendments (None: all present),
    so the tier-1 verification (N = 0) does not change when an amendment is added. ``branch`` is a
    folder holding one more amendment chained to the last of those (``prereg amend --into``), verified
    as the chain's last record. ``require`` lists documents that must be covered by the last verified
    record (otherwise a failure).
    """
    freeze_path, root_path = Path(freeze_dir), Path(root)
    base = _base_record(freeze_path, allow_test_authority)
    records = [("freeze", freeze_path, base), *_amendment_records(freeze_path, amendments)]
    if branch is not None:
        records.append(("amendment", Path(branch), _branch_record(Path(branch))))
    failures: list[str] = []
    report_records = _check_chain(records, root_path, echo, failures)
    latest = records[-1][2]
    documents = _check_documents(latest, root_path, failures)
    last_label = report_records[-1]["record"]
    covered = [
        {"path": d["path"], "sha256": d["sha256"], "record": last_label, "imprint": latest.get("imprint")}
        for d in documents
        if d.get("matches")
    ]
    covered_paths = {d["path"] for d in covered}
    for doc in require:
        rel = Path(doc).as_posix()
        if rel not in covered_paths:
            failures.append(
                f"{doc}: not covered by {freeze_path if last_label == 'freeze' else records[-1][1]} "
                "(the last verified record); record it with 'prereg amend' (docs/prereg.md#amendments)"
            )
    return {
        "format": "paired-rollouts-prereg-verification/1",
        "freeze": str(freeze_path),
        "passes": not failures,
        "failures": failures,
        "test_authority": bool(base.get("test_authority")),
        "imprint": latest.get("imprint"),
        "documents": documents,
        "records": report_records,
        "covered": covered,
        "verifiers": {"rfc3161-client": fz.software()["rfc3161-client"], "openssl": tsp.openssl_version()},
    }


def _base_record(freeze_path: Path, allow_test_authority: bool) -> dict:
    """The base freeze record; refused when absent, of another format, or a test freeze not allowed here."""
    record_file = freeze_path / fz.RECORD["freeze"]
    if not record_file.is_file():
        raise UserError(
            f"{record_file}: no freeze record; run 'paired-rollouts prereg freeze' (or freeze-local) "
            "or point --freeze at the folder holding freeze.json"
        )
    base = _record(record_file)
    if base.get("format") != fz.FORMAT or base.get("kind") != "freeze":
        raise UserError(f"{record_file}: not a {fz.FORMAT} freeze record; restore it from version control")
    if base.get("test_authority") and not allow_test_authority:
        raise UserError(
            f"{record_file}: this freeze was made against the local TEST authority (test_authority: true), "
            "which proves nothing about when the protocol was fixed; make the real freeze against public TSAs "
            "(docs/prereg.md) or pass --allow-test-authority for the cpu stand-in run"
        )
    return base


def _amendment_records(freeze_path: Path, amendments: int | None) -> list[tuple[str, Path, dict]]:
    """The amendments to verify, numbered 001.. without gaps (the first ``amendments`` of them if given)."""
    present = fz.list_amendments(freeze_path)
    if amendments is not None:
        if amendments < 0:
            raise UserError(f"--amendments {amendments}: give the number of amendments to verify (0 or more)")
        if len(present) < amendments:
            raise UserError(
                f"{freeze_path / fz.AMENDMENTS}: {len(present)} amendment(s) present, {amendments} required; "
                "make the missing amendment ('paired-rollouts prereg amend', docs/prereg.md#amendments)"
            )
        present = present[:amendments]
    records = []
    for number, folder in enumerate(present, start=1):
        if folder.name != f"{number:03d}":
            raise UserError(f"{folder}: amendments must be numbered 001, 002, ... without gaps; restore them")
        amendment_file = folder / fz.RECORD["amendment"]
        if not amendment_file.is_file():
            raise UserError(f"{amendment_file}: amendment record missing; {REFREEZE}")
        records.append(("amendment", folder, _record(amendment_file)))
    return records


def _branch_record(folder: Path) -> dict:
    """A branch amendment's record (``prereg amend --into``); refused when absent."""
    record_file = folder / fz.RECORD["amendment"]
    if not record_file.is_file():
        raise UserError(
            f"{record_file}: branch amendment record missing; make it with 'paired-rollouts prereg amend "
            "--into' (docs/prereg.md#amendment-a3-the-paired-arms-as-a-registered-prediction)"
        )
    return _record(record_file)


def _record(record_file: Path) -> dict:
    """A freeze or amendment record, with the shape the chain and document checks read outside
    ``verify_record`` (which turns any other malformed value into one line): an object whose
    ``documents`` are ``{path, sha256}`` strings and whose ``amendment`` (if any) is an object with a
    ``previous`` object; anything else is one line naming the file and key."""
    record = read_json(record_file)
    if not isinstance(record, dict):
        raise UserError(f"{record_file}: a freeze record must be a JSON object; {REFREEZE}")
    documents = record.get("documents", [])
    if not isinstance(documents, list):
        raise UserError(f"{record_file}: key 'documents' is {documents!r}, expected a list; {REFREEZE}")
    for i, doc in enumerate(documents):
        for name in ("path", "sha256"):
            value = doc.get(name) if isinstance(doc, dict) else None
            if not isinstance(value, str) or not value:
                raise UserError(
                    f"{record_file}: documents[{i}].{name} is {value!r}, expected a non-empty string; {REFREEZE}"
                )
    amendment = record.get("amendment")
    if amendment is not None and not (
        isinstance(amendment, dict) and isinstance(amendment.get("previous", {}), dict)
    ):
        raise UserError(
            f"{record_file}: key 'amendment' must be an object with a 'previous' object; {REFREEZE}"
        )
    return record


def _check_chain(records: list[tuple[str, Path, dict]], root: Path, echo, failures: list[str]) -> list[dict]:
    """Every record verified, each amendment chained to the previous imprint; the report's `records`."""
    base = records[0][2]
    report_records = []
    previous_imprint = None
    for kind, folder, record in records:
        if record.get("test_authority") != base.get("test_authority"):
            failures.append(f"{folder}: test_authority differs from the base freeze; {REFREEZE}")
        if (
            kind == "amendment"
            and ((record.get("amendment") or {}).get("previous") or {}).get("imprint") != previous_imprint
        ):
            failures.append(
                f"{folder / fz.RECORD[kind]}: does not chain to the previous record's imprint; {REFREEZE}"
            )
        try:
            result = verify_record(folder, root, kind, record, {})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UserError(
                f"{folder / fz.RECORD[kind]}: malformed record ({exc.__class__.__name__}: {exc}); {REFREEZE}"
            ) from exc
        failures.extend(result["failures"])
        label = "freeze" if kind == "freeze" else f"amendments/{folder.name}"
        if kind == "amendment" and folder.parent.name != fz.AMENDMENTS:
            label = f"branch {folder.as_posix()}"  # prereg amend --into: a scale's own amendment
        for row in result["tokens"] if echo is not None else ():
            verdicts = " ".join(
                f"{k}={'OK' if row.get(k, {}).get('ok') else 'FAIL'}" for k in ("rfc3161_client", "openssl")
            )
            echo(
                f"{label}: {row['name']} <{row['url']}> genTime {row['gen_time']} serial {row['serial']} "
                f"TSA '{row['tsa_subject']}' {verdicts}"
            )
        report_records.append(
            {"record": label, "imprint": record.get("imprint"), "kind": kind, "tokens": result["tokens"]}
        )
        previous_imprint = record.get("imprint")
    return report_records


def _check_documents(latest: dict, root: Path, failures: list[str]) -> list[dict]:
    """The last record's documents against their current bytes."""
    documents = []
    for doc in latest.get("documents", []):
        path = root / doc["path"]
        if not path.is_file():
            failures.append(f"{path}: frozen document missing; restore it (git checkout -- {doc['path']})")
            documents.append({**doc, "matches": False})
            continue
        actual = sha256_bytes(path.read_bytes())
        if actual != doc["sha256"]:
            failures.append(
                f"{path}: SHA-256 {actual} differs from the frozen {doc['sha256']}; the protocol changed after "
                "the freeze - restore the frozen text (git checkout) or record the change with 'prereg amend'"
            )
        documents.append(
            {
                "path": doc["path"],
                "sha256": doc["sha256"],
                "actual_sha256": actual,
                "matches": actual == doc["sha256"],
            }
        )
    return documents


def require_covered(verification: str | os.PathLike, document: str | os.PathLike) -> Covered:
    """Refuse (UserError) unless ``document`` is covered, with its current bytes, by a verified record.

    ``verification`` is a report written by ``prereg verify`` (only passing reports are written; a
    report that says otherwise is refused too). Returns the covering entry. The decision code calls
    this before it applies amended rules, e.g. ``require_covered(report, "prereg/tier_rules.yaml")``.
    """
    report_path, doc = Path(verification), Path(document)
    if not report_path.is_file():
        raise UserError(f"{report_path}: verification report not found; run 'paired-rollouts prereg verify'")
    from paired_rollouts.records import read_covered

    report, covered = read_covered(report_path)
    if not report.passes or report.failures:
        raise UserError(f"{report_path}: the verification did not pass; fix what it lists and rerun it")
    rel = doc.as_posix()
    if doc.is_absolute() and doc.resolve().is_relative_to(Path.cwd().resolve()):
        rel = doc.resolve().relative_to(Path.cwd().resolve()).as_posix()
    entry = next((c for c in covered if c.path == rel), None)
    if entry is None:
        raise UserError(
            f"{report_path}: {rel} is not covered by a verified freeze record; record it with "
            "'paired-rollouts prereg amend' and verify again (docs/prereg.md#amendments)"
        )
    if not doc.is_file() or sha256_bytes(doc.read_bytes()) != entry.sha256:
        raise UserError(
            f"{rel}: its bytes differ from the verified {entry.record} record ({report_path}); restore the "
            "amended file (git checkout) or record the change with another amendment"
        )
    return entry
