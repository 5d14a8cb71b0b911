"""The frozen inputs: the task pools' manifest and the pre-registration's verification report with the
documents it covers (docs/simulator.md, docs/prereg.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import (
    At,
    each,
    is_bool,
    is_dict,
    is_int,
    is_sha256,
    is_str,
    key,
    list_of,
    one,
    one_of,
    parse,
    read_register,
)

# ---------------------------------------------------------------- pool manifest


@dataclass(frozen=True, kw_only=True)
class PoolEntry:
    sha256: str = key(is_sha256)
    count: int | None = key(is_int, default=None)


def _pools(value: dict[str, Any], at: At) -> dict[str, PoolEntry]:
    for name, entry in value.items():
        if not isinstance(entry, dict):
            raise UserError(
                f"{at.path}: pools.{name}: expected {{count, sha256}}; regenerate with 'paired-rollouts tasks'"
            )
    return {name: parse(PoolEntry, entry, at.at(name)) for name, entry in value.items()}


@dataclass(frozen=True, kw_only=True)
class PoolManifest:
    """data/tasks/MANIFEST.json: ``pools: {name: {count, sha256}}`` (paired-rollouts tasks)."""

    path: str
    raw: dict[str, Any]
    pools: dict[str, PoolEntry] = key(is_dict, read=_pools)

    @property
    def sha256(self) -> dict[str, str]:
        """{pool: sha256}."""
        return {name: entry.sha256 for name, entry in self.pools.items()}


def read_pool_manifest(path: str | Path) -> PoolManifest:
    """data/tasks/MANIFEST.json, typed."""
    return read_register(PoolManifest, path, "pool manifest")


# ---------------------------------------------------------------- verification report

VERIFICATION_FORMAT = "paired-rollouts-prereg-verification/1"


@dataclass(frozen=True, kw_only=True)
class Document:
    """A frozen document and whether its bytes still match the freeze."""

    path: str = key(is_str)
    sha256: str = key(is_str)
    matches: bool = key(is_bool)


@dataclass(frozen=True, kw_only=True)
class Check:
    ok: bool = key(is_bool)


def _gen_time(v: Any) -> bool:
    return v is None or is_str(v)


_gen_time.__name__ = "a string or null"


@dataclass(frozen=True, kw_only=True)
class Token:
    """One time-stamp token of a verification report (prereg/verify.py), verified by both checkers."""

    name: str = key(is_str)
    gen_time: str | None = key(_gen_time, default=None)
    rfc3161_client: Check = key(is_dict, read=one(Check))
    openssl: Check = key(is_dict, read=one(Check))
    record: str = ""  # the freeze or amendment record it stamps (from the enclosing record)

    @property
    def verified(self) -> bool:
        return self.rfc3161_client.ok and self.openssl.ok


@dataclass(frozen=True, kw_only=True)
class StampedRecord:
    record: str = key(is_str)
    tokens: list[Token] = key(list_of(is_dict), read=each(Token))


@dataclass(frozen=True, kw_only=True)
class Verification:
    """results/prereg/verification.json as ``paired-rollouts prereg verify`` writes it."""

    path: str
    passes: bool = key(is_bool)
    imprint: str = key(is_str)
    documents: list[Document] = key(list_of(is_dict), read=each(Document))
    records: list[StampedRecord] = key(list_of(is_dict), read=each(StampedRecord))
    failures: list[str] = key(list_of(is_str))
    test_authority: bool = key(is_bool, default=False)

    def _check(self, at: At) -> None:
        """``passes`` is its findings' (never trusted as written): no failure, and when it passes every
        document matches its frozen bytes and every token verified by both checkers."""
        bad = [d.path for d in self.documents if not d.matches] + [
            t.name for r in self.records for t in r.tokens if not t.verified
        ]
        if self.passes != (not self.failures) or (self.passes and bad):
            raise at.error(
                f"passes is {str(self.passes).lower()} with {len(self.failures)} failure(s)"
                + (f" and unverified {', '.join(bad)}" if bad else "")
            )
        unstamped = [r.record for r in self.records if not r.tokens]
        if self.passes and (not self.records or unstamped):
            raise at.error(
                "passes is true, but "
                + (f"{', '.join(unstamped)} holds no token" if unstamped else "it verified no record")
                + " (a verified freeze has at least one stamped record)"
            )

    @property
    def tokens(self) -> list[Token]:
        """Every token, each with the record it stamps."""
        return [_stamped(token, record.record) for record in self.records for token in record.tokens]


def _stamped(token: Token, record: str) -> Token:
    from dataclasses import replace

    return replace(token, record=record)


def read_verification(path: str | Path) -> Verification:
    return read_register(Verification, path, "pre-registration verification", "paired-rollouts prereg verify")


@dataclass(frozen=True, kw_only=True)
class Covered:
    """A document a verified record covers, with its verified bytes' sha256."""

    path: str = key(is_str)
    sha256: str = key(is_sha256)
    record: str = key(is_str)


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """A verification report and the documents it covers (``covered``), for the stages that apply
    amended rules."""

    format: str = key(one_of(VERIFICATION_FORMAT))
    covered: list[Covered] = key(list_of(is_dict), read=each(Covered))


def read_covered(path: str | Path) -> tuple[Verification, list[Covered]]:
    """A verification report (``read_verification``) and the documents it covers with their verified
    bytes (``covered``: path, sha256, record)."""
    verification = read_verification(path)
    coverage = read_register(Coverage, path, "pre-registration verification", "paired-rollouts prereg verify")
    return verification, coverage.covered
