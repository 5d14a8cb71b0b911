"""RFC 3161 plumbing: build the query, talk to a TSA, read replies, and verify tokens two ways.

Trust decisions are made only by ``rfc3161-client`` (chain to stored roots, pinned TSA certificate,
validity at genTime, critical timeStamping EKU, nonce, imprint) and, independently, by the ``openssl``
command line. ``rfc3161ng``/pyasn1 is used only to *read* a reply's PKIStatus (rfc3161-client cannot
parse a reply without a token) and to re-encode a reply in strict DER before parsing; never to decide
whether a token is genuine (docs/prereg.md says why).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from paired_rollouts.errors import UserError

QUERY_CONTENT_TYPE = "application/timestamp-query"
REPLY_CONTENT_TYPE = "application/timestamp-reply"
SHA256_OID = "2.16.840.1.101.3.4.2.1"
USER_AGENT = "paired-rollouts-prereg/1"
SYSTEM_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

_PKI_STATUS = {
    0: "granted",
    1: "grantedWithMods",
    2: "rejection",
    3: "waiting",
    4: "revocationWarning",
    5: "revocationNotification",
}
_FAIL_INFO = {
    0: "badAlg",
    2: "badRequest",
    5: "badDataFormat",
    14: "timeNotAvailable",
    15: "unacceptedPolicy",
    16: "unacceptedExtension",
    17: "addInfoNotAvailable",
    25: "systemFailure",
}


# ----------------------------------------------------------------------------------------------- query
def build_query(data: bytes) -> tuple[bytes, int]:
    """DER time-stamp query over SHA-256(data) with a random 64-bit nonce and certReq=true."""
    from rfc3161_client import HashAlgorithm, TimestampRequestBuilder

    request = (
        TimestampRequestBuilder()
        .data(data)
        .hash_algorithm(HashAlgorithm.SHA256)
        .nonce(nonce=True)
        .cert_request(cert_request=True)
        .build()
    )
    return request.as_bytes(), int(request.nonce)


def parse_query(der: bytes, source: str):
    """The stored ``.tsq`` as an rfc3161-client request object (nonce, imprint, certReq)."""
    from rfc3161_client._rust import parse_timestamp_request

    try:
        return parse_timestamp_request(der)
    except ValueError as exc:
        raise UserError(
            f"{source}: not a DER time-stamp query ({exc}); restore it from version control"
        ) from exc


def post_query(url: str, query: bytes, name: str, timeout: float = 30.0) -> bytes:
    """POST the query; return the raw HTTP body. Any transport failure is a UserError naming the TSA."""
    request = urllib.request.Request(
        url,
        data=query,
        method="POST",
        headers={"Content-Type": QUERY_CONTENT_TYPE, "Accept": REPLY_CONTENT_TYPE, "User-Agent": USER_AGENT},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
            ctype = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    except urllib.error.HTTPError as exc:
        raise UserError(
            f"TSA {name} ({url}): HTTP {exc.code} {exc.reason}; check the URL or retry later (nothing was written)"
        ) from exc
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UserError(
            f"TSA {name} ({url}): unreachable ({reason}); check the network/URL or retry later (nothing was written)"
        ) from exc
    if ctype and ctype != REPLY_CONTENT_TYPE:
        raise UserError(
            f"TSA {name} ({url}): answered Content-Type {ctype!r}, not {REPLY_CONTENT_TYPE}; "
            "is this URL a time-stamp service? (nothing was written)"
        )
    if not body:
        raise UserError(f"TSA {name} ({url}): empty reply; retry later (nothing was written)")
    return body


# ----------------------------------------------------------------------------------------------- reply
def reply_status(raw: bytes, source: str) -> tuple[int, str]:
    """(PKIStatus, human text) of a raw reply, read with pyasn1 because the reply may hold no token."""
    import rfc3161ng
    from pyasn1.error import PyAsn1Error

    try:
        status = rfc3161ng.decode_timestamp_response(raw)["status"]
    except (PyAsn1Error, ValueError, TypeError) as exc:
        raise UserError(f"{source}: not a DER time-stamp reply ({exc.__class__.__name__})") from exc
    code = int(status["status"])
    parts = [_PKI_STATUS.get(code, f"status {code}")]
    if status["statusString"].isValue:
        parts.extend(str(text) for text in status["statusString"])
    if status["failInfo"].isValue:
        bits = [i for i, bit in enumerate(tuple(status["failInfo"])) if bit]
        parts.extend(_FAIL_INFO.get(i, f"failInfo bit {i}") for i in bits)
    return code, "; ".join(parts)


def normalise_der(raw: bytes) -> bytes:
    """Strict-DER re-encoding of a reply (sorts the unsigned certificates SET; signature unaffected).

    Some TSAs (and openssl with several embedded certificates) emit that SET unsorted, which
    rfc3161-client refuses with ``InvalidSetOrdering``. The raw bytes stay the archived artefact.
    """
    import rfc3161ng

    return rfc3161ng.encode_timestamp_response(rfc3161ng.decode_timestamp_response(raw))


def parse_reply(raw: bytes, source: str):
    """Parse a raw reply into an rfc3161-client response; refuse anything but status 'granted'."""
    from rfc3161_client import decode_timestamp_response

    code, text = reply_status(raw, source)
    if code != 0:
        raise UserError(f"{source}: the TSA did not grant the time stamp ({text}); nothing was written")
    try:
        return decode_timestamp_response(raw)
    except ValueError:
        pass
    try:
        return decode_timestamp_response(normalise_der(raw))
    except Exception as exc:  # noqa: BLE001 - any parse failure means the same thing to the user
        raise UserError(f"{source}: the time-stamp token cannot be parsed ({exc})") from exc


@dataclass(frozen=True)
class TokenInfo:
    serial: int
    policy: str
    gen_time: dt.datetime
    nonce: int | None
    imprint_algorithm: str
    imprint: bytes
    tsa_name: str | None

    def as_json(self) -> dict:
        return {
            "serial": str(self.serial),  # TSA serials can exceed 2**53: keep them exact as strings
            "policy": self.policy,
            "gen_time": iso_utc(self.gen_time),
            "gen_time_epoch": int(self.gen_time.timestamp()),
            "nonce": None if self.nonce is None else str(self.nonce),
            "imprint_algorithm": self.imprint_algorithm,
            "imprint": self.imprint.hex(),
            "tsa_name": self.tsa_name,
        }


def token_info(response) -> TokenInfo:
    info = response.tst_info
    name = None
    if info.name is not None:
        value = getattr(info.name, "value", info.name)
        name = value.rfc4514_string() if hasattr(value, "rfc4514_string") else str(value)
    return TokenInfo(
        serial=int(info.serial_number),
        policy=info.policy.dotted_string,
        gen_time=info.gen_time.astimezone(dt.UTC),
        nonce=None if info.nonce is None else int(info.nonce),
        imprint_algorithm=info.message_imprint.hash_algorithm.dotted_string,
        imprint=bytes(info.message_imprint.message),
        tsa_name=name,
    )


def iso_utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------ certificates
def load_pem_bundle(path: Path, what: str) -> list:
    """All certificates of a PEM file; a missing or empty file is a UserError with the fix."""
    from cryptography import x509

    if not path.is_file():
        raise UserError(f"{path}: {what} not found; restore it from version control (or re-run the freeze)")
    try:
        certs = x509.load_pem_x509_certificates(path.read_bytes())
    except ValueError as exc:
        raise UserError(f"{path}: {what} is not a PEM certificate file ({exc}); restore it") from exc
    return certs


def fingerprint(cert) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


def to_pem(certs: list) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return b"".join(cert.public_bytes(Encoding.PEM) for cert in certs)


def is_self_signed(cert) -> bool:
    if cert.issuer != cert.subject:
        return False
    try:
        cert.verify_directly_issued_by(cert)
    except Exception:  # noqa: BLE001 - any failure means "not a self-issued root"
        return False
    return True


def signer_certificate(response, source: str):
    """The embedded certificate named by the token's SignerInfo (issuer + serial, which are signed)."""
    from cryptography import x509

    certs = [x509.load_der_x509_certificate(der) for der in response.signed_data.certificates]
    infos = list(response.signed_data.signer_infos)
    if len(infos) != 1:
        raise UserError(f"{source}: expected one SignerInfo in the token, found {len(infos)}")
    for cert in certs:
        if cert.issuer == infos[0].issuer and cert.serial_number == infos[0].serial_number:
            return cert
    raise UserError(f"{source}: the token embeds no signer certificate although certReq was set")


def build_chain(leaf, candidates: list, source: str) -> tuple[list, list]:
    """Walk issuer links from ``leaf`` through ``candidates``; return (intermediates, [root])."""
    intermediates: list = []
    current = leaf
    for _ in range(8):
        issuer = None
        for cand in candidates:
            if cand.subject != current.issuer:
                continue
            try:
                current.verify_directly_issued_by(cand)
            except Exception:  # noqa: BLE001 - try the next candidate with that name
                continue
            issuer = cand
            break
        if issuer is None:
            return intermediates, []
        if is_self_signed(issuer):
            return intermediates, [issuer]
        intermediates.append(issuer)
        current = issuer
    raise UserError(f"{source}: certificate chain longer than 8; refusing")


# -------------------------------------------------------------------------------------------- verifying
def verify_with_client(
    raw: bytes, message: bytes, roots: list, intermediates: list, pinned, nonce: int, source: str
) -> tuple[bool, str]:
    """rfc3161-client verdict: chain to ``roots`` at genTime, leaf == ``pinned``, nonce, imprint."""
    from rfc3161_client import VerificationError, VerifierBuilder

    try:
        response = parse_reply(raw, source)
        verifier = VerifierBuilder(
            tsa_certificate=pinned, roots=list(roots), intermediates=list(intermediates), nonce=nonce
        ).build()
        verifier.verify_message(response, message)
    except (UserError, VerificationError, ValueError) as exc:
        return False, str(exc)
    except Exception as exc:  # noqa: BLE001 - a verifier crash is a rejection, never a pass
        return False, f"{exc.__class__.__name__}: {exc}"
    return True, "OK"


def _openssl(args: list[str]) -> tuple[bool, str]:
    try:
        proc = subprocess.run(["openssl", *args], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"could not run openssl ({exc})"
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip() and not ln.startswith(("Using configuration", "Warning: certificate"))
    ]
    return proc.returncode == 0, " | ".join(lines[-3:])


def verify_with_openssl(
    tsr: Path,
    data: Path,
    tsq: Path,
    roots_pem: Path,
    chain_pem: list[Path],
    pinned_pem: Path,
    gen_time_epoch: int,
) -> tuple[bool, str]:
    """openssl verdict, three calls, all at genTime.

    1. ``ts -verify -data``: imprint of the stamped file, signature, chain to the stored roots;
    2. ``ts -verify -queryfile``: the stored query's nonce and imprint;
    3. ``cms -verify -nointern -certfile <pinned>``: the signature verifies *only* with the pinned TSA
       certificate, i.e. the token was not issued by another key under the same root.
    """
    untrusted: list[str] = []
    with tempfile.TemporaryDirectory(prefix="prereg-ossl-") as tmp:
        if chain_pem:
            bundle = Path(tmp, "untrusted.pem")
            bundle.write_bytes(b"".join(p.read_bytes() for p in [pinned_pem, *chain_pem]))
            untrusted = ["-untrusted", str(bundle)]
        else:
            untrusted = ["-untrusted", str(pinned_pem)]
        common = ["-in", str(tsr), "-CAfile", str(roots_pem), *untrusted, "-attime", str(gen_time_epoch)]
        ok, text = _openssl(["ts", "-verify", "-data", str(data), *common])
        if not ok:
            return False, f"ts -verify -data: {text}"
        ok, text = _openssl(["ts", "-verify", "-queryfile", str(tsq), *common])
        if not ok:
            return False, f"ts -verify -queryfile: {text}"
        token = Path(tmp, "token.tst")
        ok, text = _openssl(["ts", "-reply", "-in", str(tsr), "-token_out", "-out", str(token)])
        if not ok:
            return False, f"ts -reply -token_out: {text}"
        ok, text = _openssl(
            [
                "cms",
                "-verify",
                "-inform",
                "DER",
                "-in",
                str(token),
                "-nointern",
                "-certfile",
                str(pinned_pem),
                "-noverify",
                "-binary",
                "-out",
                str(Path(tmp, "tstinfo")),
            ]
        )
        if not ok:
            return False, f"pinned signer check (cms -verify -nointern): {text}"
    return True, "Verification: OK (imprint, nonce, chain at genTime, pinned signer)"


def openssl_version() -> str:
    ok, text = _openssl(["version"])
    return text if ok else "unavailable"
