"""Freeze the protocol: hash the documents, time-stamp the hash list at several TSAs, store everything.

What gets stamped is a *manifest*, ``protocol.sha256``, in ``sha256sum`` format ("<hex>  <path>" per
line, paths relative to the repository root), so the one imprint (SHA-256 of the manifest bytes)
covers every document, and anyone can check it with ``sha256sum -c`` plus ``openssl ts -verify -data``.

A freeze directory (the same layout serves every amendment under ``amendments/NNN/``)::

    protocol.sha256              the stamped manifest
    request.tsq                  the one query sent to every TSA (SHA-256, nonce, certReq=true)
    <tsa>.tsr                    each TSA's raw HTTP reply, byte for byte
    certs/<tsa>-tsa.pem          the TSA certificate taken from the token (pinned by fingerprint)
    certs/<tsa>-roots.pem        the root it chains to (from --cafile or the system store, never the token)
    certs/<tsa>-intermediates.pem  intermediates, when the chain has any
    freeze.json | amendment.json the record (hashes, imprint, times, per-token fields)
    amendment.txt                (amendments only) the reason, chained to the previous imprint

Everything is built in a temporary sibling folder and renamed into place only when every TSA has
granted a token and the tokens verify, so a failed freeze leaves nothing behind.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from paired_rollouts.errors import UserError
from paired_rollouts.io import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    read_json,
    sha256_bytes,
)
from paired_rollouts.prereg import tsp
from paired_rollouts.prereg.record import (
    AMENDMENT_TEXT,
    AMENDMENTS,
    FORMAT,
    MANIFEST,
    QUERY,
    RECORD,
    certificate_record,
    is_test_certificate,
    list_amendments,
    manifest_text,
    software,
)

#: The documents frozen by default, relative to the repository root.
DEFAULT_DOCUMENTS = ("prereg/PREREGISTRATION.md", "prereg/decision_rules.yaml")
#: The paper's two public authorities.
DEFAULT_TSAS = {"freetsa": "https://freetsa.org/tsr", "digicert": "http://timestamp.digicert.com"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


@dataclass(frozen=True)
class Authority:
    name: str
    url: str
    cafile: Path | None = None


def parse_pairs(values: Iterable[str] | None, option: str) -> dict[str, str]:
    """``NAME=VALUE`` arguments into an ordered dict; bad or repeated names are UserErrors."""
    out: dict[str, str] = {}
    for value in values or ():
        name, sep, rest = value.partition("=")
        name = name.strip().lower()
        if not sep or not rest or not _NAME.match(name):
            raise UserError(
                f"{option} {value!r}: expected NAME=VALUE with NAME like 'freetsa' (a-z, 0-9, -, _)"
            )
        if name in out:
            raise UserError(f"{option}: {name!r} given twice; give each TSA once")
        out[name] = rest.strip()
    return out


def _check_tsa_url(name: str, url: str) -> None:
    """RFC 3161 over HTTP(S) only, with a host: a file:, ftp: or schemeless URL is no time-stamp service."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(
            f"--tsa {name}={url}: a TSA is an http:// or https:// URL with a host "
            "(e.g. freetsa=https://freetsa.org/tsr)"
        )


def authorities(tsa_args: list[str] | None, cafile_args: list[str] | None) -> list[Authority]:
    tsas = parse_pairs(tsa_args, "--tsa") or dict(DEFAULT_TSAS)
    cafiles = parse_pairs(cafile_args, "--cafile")
    unknown = sorted(set(cafiles) - set(tsas))
    if unknown:
        raise UserError(f"--cafile {unknown[0]}=...: no --tsa with that name; name a TSA given with --tsa")
    if len(tsas) < 2:
        raise UserError("--tsa: at least two time-stamp authorities are required (independent witnesses)")
    for name, url in tsas.items():
        _check_tsa_url(name, url)
    return [
        Authority(name, url, Path(cafiles[name]) if name in cafiles else None) for name, url in tsas.items()
    ]


def _relative(path: Path, root: Path, what: str) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError as exc:
        raise UserError(f"{path}: {what} must lie inside the repository root {root}; pass --root") from exc


def _document_entries(documents: Iterable[str], root: Path) -> list[dict]:
    out = []
    seen = set()
    for doc in documents:
        path = Path(doc) if Path(doc).is_absolute() else root / doc
        if not path.is_file():
            raise UserError(f"{path}: document to freeze not found; write it first or fix --document")
        rel = _relative(path, root, "a frozen document")
        if rel in seen:
            raise UserError(f"--document {doc}: given twice")
        seen.add(rel)
        data = path.read_bytes()
        out.append({"path": rel, "sha256": sha256_bytes(data), "bytes": len(data)})
    if not out:
        raise UserError("no documents to freeze; pass --document")
    return out


def _system_roots() -> list:
    if not tsp.SYSTEM_CA_BUNDLE.is_file():
        return []
    from cryptography import x509

    try:
        return [
            c
            for c in x509.load_pem_x509_certificates(tsp.SYSTEM_CA_BUNDLE.read_bytes())
            if tsp.is_self_signed(c)
        ]
    except ValueError:
        return []


def _trust_material(authority: Authority, response, source: str) -> tuple[object, list, list, str]:
    """(TSA leaf, intermediates, roots, root source) for one token. Roots never come from the token."""
    from cryptography import x509

    leaf = tsp.signer_certificate(response, source)
    embedded = [x509.load_der_x509_certificate(d) for d in response.signed_data.certificates]
    embedded = [c for c in embedded if c != leaf and not tsp.is_self_signed(c)]
    given: list = []
    if authority.cafile is not None:
        given = tsp.load_pem_bundle(authority.cafile, f"CA bundle for TSA {authority.name}")
    given_roots = [c for c in given if tsp.is_self_signed(c)]
    given_other = [c for c in given if not tsp.is_self_signed(c)]
    pool = embedded + given_other
    intermediates, roots = tsp.build_chain(leaf, pool + given_roots, source)
    root_source = f"cafile {authority.cafile}"
    if not roots and authority.cafile is None:
        intermediates, roots = tsp.build_chain(leaf, pool + _system_roots(), source)
        root_source = f"system store {tsp.SYSTEM_CA_BUNDLE}"
    if not roots:
        raise UserError(
            f"TSA {authority.name}: no trusted root found for its certificate (issuer "
            f"{leaf.issuer.rfc4514_string()}); pass --cafile {authority.name}=ROOT.pem with the TSA's published "
            "root (and intermediates) - nothing was written"
        )
    return leaf, intermediates, roots, root_source


def _write_record(
    work: Path,
    kind: str,
    manifest: bytes,
    documents: list[dict],
    auths: list[Authority],
    test_authority: bool,
    extra: dict,
    timeout: float,
) -> dict:
    """Query every TSA and fill ``work`` with the record; return the record dict (already written)."""
    imprint = sha256_bytes(manifest)
    query, nonce = tsp.build_query(manifest)
    atomic_write_bytes(work / MANIFEST, manifest)
    atomic_write_bytes(work / QUERY, query)
    tokens = []
    for auth in auths:
        raw = tsp.post_query(auth.url, query, auth.name, timeout=timeout)
        source = f"TSA {auth.name} ({auth.url})"
        response = tsp.parse_reply(raw, source)
        info = tsp.token_info(response)
        if info.imprint != bytes.fromhex(imprint) or info.imprint_algorithm != tsp.SHA256_OID:
            raise UserError(f"{source}: the token covers another hash than the query; nothing was written")
        if info.nonce != nonce:
            raise UserError(f"{source}: the token's nonce differs from the query's; nothing was written")
        leaf, intermediates, roots, root_source = _trust_material(auth, response, source)
        if not test_authority and (is_test_certificate(leaf) or any(is_test_certificate(r) for r in roots)):
            raise UserError(
                f"{source}: this is the local *test* authority; pass --test-authority (or use "
                "'prereg freeze-local') so the freeze is marked as one"
            )
        atomic_write_bytes(work / f"{auth.name}.tsr", raw)
        certs = work / "certs"
        atomic_write_bytes(certs / f"{auth.name}-tsa.pem", tsp.to_pem([leaf]))
        atomic_write_bytes(certs / f"{auth.name}-roots.pem", tsp.to_pem(roots))
        entry = {
            "name": auth.name,
            "url": auth.url,
            "file": f"{auth.name}.tsr",
            "sha256": sha256_bytes(raw),
            "status": "granted",
            **info.as_json(),
            "tsa_certificate": certificate_record(leaf, f"certs/{auth.name}-tsa.pem"),
            "roots": {
                "file": f"certs/{auth.name}-roots.pem",
                "sha256": [tsp.fingerprint(c) for c in roots],
                "subjects": [c.subject.rfc4514_string() for c in roots],
                "source": root_source,
            },
            "intermediates": None,
        }
        if intermediates:
            atomic_write_bytes(certs / f"{auth.name}-intermediates.pem", tsp.to_pem(intermediates))
            entry["intermediates"] = {
                "file": f"certs/{auth.name}-intermediates.pem",
                "sha256": [tsp.fingerprint(c) for c in intermediates],
                "subjects": [c.subject.rfc4514_string() for c in intermediates],
            }
        tokens.append(entry)
    record = {
        "format": FORMAT,
        "kind": kind,
        "created_utc": tsp.iso_utc(dt.datetime.now(dt.UTC)),
        "documents": documents,
        "manifest": {"file": MANIFEST, "sha256": imprint},
        "imprint": imprint,
        "imprint_algorithm": "sha256",
        "request": {"file": QUERY, "sha256": sha256_bytes(query), "nonce": str(nonce), "cert_req": True},
        "tokens": tokens,
        "test_authority": bool(test_authority),
        "software": software(),
        **extra,
    }
    atomic_write_json(work / RECORD[kind], record)
    return record


def _publish(work: Path, final: Path) -> None:
    if final.exists():
        if final.is_dir() and not any(final.iterdir()):
            final.rmdir()
        else:
            raise UserError(f"{final}: already exists; a freeze is never overwritten (use 'prereg amend')")
    os.rename(work, final)


@contextmanager
def _staged(final: Path) -> Iterator[Path]:
    """A fresh folder beside ``final``, published as ``final`` when the block succeeds and removed when it
    fails: a freeze or an amendment appears whole or not at all."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield work
        _publish(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _self_check(work: Path, root: Path, kind: str, record: dict) -> None:
    from paired_rollouts.prereg.verify import verify_record

    result = verify_record(work, root, kind, record, record_files={})
    if result["failures"]:
        raise UserError(
            "the new tokens do not verify, so nothing was written: " + "; ".join(result["failures"])
        )


def freeze(
    out: str | os.PathLike,
    auths: list[Authority],
    documents: Iterable[str] = DEFAULT_DOCUMENTS,
    root: str | os.PathLike = ".",
    test_authority: bool = False,
    timeout: float = 30.0,
    self_check: bool = True,
) -> dict:
    """Make a new freeze in ``out``; refuse if one exists. Returns the freeze record."""
    out_dir, root_dir = Path(out), Path(root)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise UserError(
            f"{out_dir}: a freeze (or other files) already exists; it is never overwritten - "
            "use 'prereg amend' to add a timestamped amendment, or choose another --out"
        )
    docs = _document_entries(documents, root_dir)
    manifest = manifest_text([(d["path"], d["sha256"]) for d in docs]).encode()
    with _staged(out_dir) as work:
        record = _write_record(work, "freeze", manifest, docs, auths, test_authority, {}, timeout)
        if self_check:
            _self_check(work, root_dir, "freeze", record)
    return record


def amend(
    out: str | os.PathLike,
    reason: str,
    auths: list[Authority] | None = None,
    documents: Iterable[str] | None = None,
    root: str | os.PathLike = ".",
    timeout: float = 30.0,
    into: str | os.PathLike | None = None,
    after: int | None = None,
) -> dict:
    """Append amendment NNN to the freeze in ``out``: current documents + reason, freshly time-stamped.

    The amendment text names the previous record's imprint, so the records form a chain. Without
    ``auths`` the base freeze's TSAs and its stored roots are reused. With ``into`` (and ``after``) the
    amendment is a *branch*: amendment ``after + 1`` chained to amendment ``after`` (0: the freeze) but
    written to ``into`` instead of ``out/amendments/NNN``, so that several scales sharing one freeze each
    hold their own (amendment A3 freezes a scale's own calibration register, docs/prereg.md).
    """
    freeze_dir, root_dir = Path(out), Path(root)
    base_file = freeze_dir / RECORD["freeze"]
    if not base_file.is_file():
        raise UserError(f"{base_file}: no freeze to amend; run 'prereg freeze' first")
    base = read_json(base_file)
    if not reason or not reason.strip():
        raise UserError("--reason: give the reason for the amendment (it is time-stamped with it)")
    existing = list_amendments(freeze_dir)
    if (into is None) != (after is None):
        raise UserError("--into and --after go together: a branch amendment names its folder and its parent")
    if after is not None:
        if after < 0 or len(existing) < after:
            raise UserError(
                f"{freeze_dir / AMENDMENTS}: holds {len(existing)} amendment(s), a branch after {after} needs "
                f"them; make amendments 001..{after:03d} first"
            )
        existing = existing[:after]
    number = len(existing) + 1
    if existing and existing[-1].name != f"{number - 1:03d}":
        raise UserError(f"{freeze_dir / AMENDMENTS}: amendment folders are not numbered 001..; restore them")
    previous_dir = existing[-1] if existing else freeze_dir
    previous = read_json(previous_dir / (RECORD["amendment"] if existing else RECORD["freeze"]))
    if auths is None:
        auths = [Authority(t["name"], t["url"], freeze_dir / t["roots"]["file"]) for t in base["tokens"]]
    docs = _document_entries(documents or [d["path"] for d in previous["documents"]], root_dir)
    final = freeze_dir / AMENDMENTS / f"{number:03d}" if into is None else Path(into)
    text_rel = _relative(final, root_dir, "the freeze folder") + f"/{AMENDMENT_TEXT}"
    prev_rel = _relative(previous_dir, root_dir, "the freeze folder")
    text = (
        f"Amendment {number:03d} to the pre-registration frozen in {_relative(freeze_dir, root_dir, 'the freeze')}\n"
        f"Previous record: {prev_rel}/{MANIFEST} (imprint sha256 {previous['imprint']})\n"
        f"Written (local clock, UTC): {tsp.iso_utc(dt.datetime.now(dt.UTC))}\n"
        "Reason:\n" + reason.strip() + "\n"
    )
    entries = [(d["path"], d["sha256"]) for d in docs] + [(text_rel, sha256_bytes(text.encode()))]
    manifest = manifest_text(entries).encode()
    extra = {
        "amendment": {
            "number": number,
            "reason": reason.strip(),
            "text_file": AMENDMENT_TEXT,
            "text_path": text_rel,
            "previous": {"record": prev_rel, "imprint": previous["imprint"]},
        }
    }
    with _staged(final) as work:
        atomic_write_text(work / AMENDMENT_TEXT, text)
        record = _write_record(
            work, "amendment", manifest, docs, auths, bool(base.get("test_authority")), extra, timeout
        )
        _self_check(work, root_dir, "amendment", record)
    return record
