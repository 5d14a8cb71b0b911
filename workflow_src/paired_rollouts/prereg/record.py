"""The freeze record's format, shared by ``freeze`` (which writes records) and ``verify`` (which checks
them): file names inside a freeze folder, the stamped manifest's ``sha256sum`` format, the numbered
amendment folders, and the two facts both stamp or check (the software versions, test certificates).
"""

from __future__ import annotations

import re
from pathlib import Path

from paired_rollouts.errors import UserError
from paired_rollouts.prereg import tsp

FORMAT = "paired-rollouts-prereg-freeze/1"
MANIFEST = "protocol.sha256"
QUERY = "request.tsq"
RECORD = {"freeze": "freeze.json", "amendment": "amendment.json"}
AMENDMENT_TEXT = "amendment.txt"
AMENDMENTS = "amendments"


def manifest_text(entries: list[tuple[str, str]]) -> str:
    """``sha256sum`` format, in the given order."""
    return "".join(f"{digest}  {path}\n" for path, digest in entries)


def parse_manifest(text: str, source: str) -> list[tuple[str, str]]:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.fullmatch(r"([0-9a-f]{64})  (\S.*)", line)
        if not match:
            raise UserError(f"{source}:{number}: not a '<sha256>  <path>' line; restore the file")
        entries.append((match.group(2), match.group(1)))
    return entries


def list_amendments(freeze_dir: Path) -> list[Path]:
    base = freeze_dir / AMENDMENTS
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and re.fullmatch(r"\d{3}", p.name))


def is_test_certificate(cert) -> bool:
    from paired_rollouts.prereg.local_tsa import TEST_ORGANISATION

    return (
        TEST_ORGANISATION in cert.subject.rfc4514_string()
        or TEST_ORGANISATION in cert.issuer.rfc4514_string()
    )


def software() -> dict:
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {
        "paired-rollouts": version("paired-rollouts"),
        "rfc3161-client": version("rfc3161-client"),
        "openssl": tsp.openssl_version(),
    }


def certificate_record(cert, file: str) -> dict:
    """What freeze.json records of a stored certificate (verify recomputes it from the stored file)."""
    return {
        "file": file,
        "sha256": tsp.fingerprint(cert),
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "serial": str(cert.serial_number),
        "not_before": tsp.iso_utc(cert.not_valid_before_utc),
        "not_after": tsp.iso_utc(cert.not_valid_after_utc),
    }
