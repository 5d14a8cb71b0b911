"""``paired-rollouts prereg freeze|freeze-local|amend|amend-local|verify``."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from paired_rollouts.errors import UserError

if TYPE_CHECKING:
    from paired_rollouts.layout import Layout

_FREEZE_EPILOG = """\
Example (the paper's two public authorities; needs the network):
  paired-rollouts prereg freeze --out prereg/freeze \\
      --tsa freetsa=https://freetsa.org/tsr --cafile freetsa=freetsa_cacert.pem \\
      --tsa digicert=http://timestamp.digicert.com
Without --tsa the defaults are exactly those two. A TSA without --cafile must chain to a root in the
system store (%s). The output folder must not exist yet (or be empty); a failure writes nothing.
"""


def missing_public_freeze(layout: Layout) -> str:
    """What a GPU profile prints when the public freeze is missing: the command to run on a machine with
    internet (the workflow never runs it)."""
    folder = layout.freeze_dir()
    command = [
        "paired-rollouts",
        "prereg",
        "freeze",
        "--out",
        folder,
        "--documents",
        *layout.prereg["documents"],
    ]
    command += [arg for name, url in layout.prereg["tsas"].items() for arg in ("--tsa", f"{name}={url}")]
    return (
        f"{layout.freeze_record()} is missing. GPU profiles only run a protocol frozen against public time-stamp "
        f"authorities. On a machine with internet run: {shlex.join(command)} ; then commit {folder} "
        "(README: Verifying the pre-registration)."
    )


def missing_public_amendment(layout: Layout, index: int) -> str:
    """Likewise for configured amendment `index` when it is not committed under the public freeze."""
    folder = layout.freeze_dir()
    reason = layout.amendments[index - 1]["reason"]
    command = ["paired-rollouts", "prereg", "amend", "--out", folder, "--reason", reason]
    command += ["--documents", *layout.amendment_documents(index)]
    return (
        f"{layout.amendment_record(index)} is missing. GPU profiles only run tiers and the calibration gate "
        "under an amendment time-stamped by public authorities. After committing the documents, on a machine "
        f"with internet run: {shlex.join(command)} ; then commit {folder}/amendments (docs/prereg.md#amendments)."
    )


def _echo(text: str) -> None:
    print(text, file=sys.stderr)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--document",
        action="append",
        metavar="PATH",
        help="document to freeze, relative to --root (repeatable; default: "
        "prereg/PREREGISTRATION.md and prereg/decision_rules.yaml)",
    )
    parser.add_argument(
        "--documents",
        dest="document",
        action="extend",
        nargs="+",
        metavar="PATH",
        help="several documents at once (same as repeating --document)",
    )
    parser.add_argument(
        "--root",
        default=".",
        metavar="DIR",
        help="repository root; manifest paths are relative to it (default: .)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="HTTP timeout per TSA (s)")


def _add_branch(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--into",
        metavar="DIR",
        default=None,
        help="write the amendment to DIR (a branch: a scale's own amendment, e.g. A3) instead of "
        "FREEZE/amendments/NNN; needs --after",
    )
    parser.add_argument(
        "--after",
        type=int,
        default=None,
        metavar="N",
        help="with --into: chain the branch to amendment N (0: the freeze itself); it becomes number N+1",
    )


def register(subparsers) -> None:
    from paired_rollouts.prereg.tsp import SYSTEM_CA_BUNDLE

    top = subparsers.add_parser(
        "prereg",
        help="freeze the pre-registration with RFC 3161 time stamps, and verify a freeze",
        description="Freeze the protocol documents under trusted time stamps (RFC 3161) and verify them "
        "offline. See docs/prereg.md.",
    )
    sub = top.add_subparsers(dest="prereg_command", required=True, metavar="ACTION")

    p = sub.add_parser(
        "freeze",
        help="hash the documents and time-stamp the hash list at two or more TSAs",
        description="Hash the documents into a sha256sum manifest, send one time-stamp query (SHA-256, "
        "nonce, certReq) to every TSA, and store query, raw replies, certificates and freeze.json.",
        epilog=_FREEZE_EPILOG % SYSTEM_CA_BUNDLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="new freeze folder (refused if it holds files)"
    )
    p.add_argument(
        "--tsa", action="append", metavar="NAME=URL", help="time-stamp authority (repeatable, >= 2)"
    )
    p.add_argument(
        "--cafile",
        action="append",
        metavar="NAME=PEM",
        help="PEM root (plus intermediates) for TSA NAME, copied into the freeze",
    )
    p.add_argument(
        "--test-authority",
        action="store_true",
        help="mark the freeze as made against a test authority (verify then refuses it by default)",
    )
    _add_common(p)
    p.set_defaults(handler=_freeze)

    p = sub.add_parser(
        "freeze-local",
        help="freeze against a throw-away local test TSA (two keys, one test root)",
        description="Start the local RFC 3161 test authority on 127.0.0.1, freeze against its two keys, stop "
        "it. The freeze is marked test_authority: true. Used by the cpu profile.",
    )
    p.add_argument(
        "--out", required=True, metavar="DIR", help="new freeze folder (refused if it holds files)"
    )
    p.add_argument(
        "--replace-inside",
        metavar="ROOT",
        default=None,
        help="delete an existing --out first, but only if it lies strictly inside ROOT (e.g. results)",
    )
    _add_common(p)
    p.set_defaults(handler=_freeze_local)

    p = sub.add_parser(
        "amend",
        help="append a time-stamped amendment to an existing freeze",
        description="Hash the current documents plus the reason, chained to the previous record's imprint, "
        "and time-stamp them as DIR/amendments/NNN/. Reuses the freeze's TSAs and roots unless "
        "--tsa is given.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="the existing freeze folder")
    p.add_argument("--reason", required=True, help="why the protocol changes (time-stamped with it)")
    p.add_argument("--tsa", action="append", metavar="NAME=URL", help="override the TSAs (repeatable, >= 2)")
    p.add_argument("--cafile", action="append", metavar="NAME=PEM", help="PEM root bundle for TSA NAME")
    _add_branch(p)
    _add_common(p)
    p.set_defaults(handler=_amend)

    p = sub.add_parser(
        "amend-local",
        help="amend a local test freeze, against a fresh throw-away local test TSA",
        description="Start the local RFC 3161 test authority on 127.0.0.1 and append amendment NNN to a "
        "freeze made by 'freeze-local' (whose own test TSA is gone: 'amend' would reuse its URLs), "
        "time-stamped by the new authority's two keys; its roots are stored with the amendment. Used by "
        "the cpu profile.",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="the existing (test-authority) freeze folder")
    p.add_argument("--reason", required=True, help="why the protocol changes (time-stamped with it)")
    p.add_argument(
        "--number",
        type=int,
        default=None,
        metavar="N",
        help="the amendment number this must become (refused otherwise; with --replace-inside, amendment N "
        "and any later ones are removed first, since they chain on it)",
    )
    p.add_argument(
        "--replace-inside",
        metavar="ROOT",
        default=None,
        help="with --number: remove amendments N.. first, but only if they lie strictly inside ROOT; "
        "with --into: remove DIR first, likewise",
    )
    _add_branch(p)
    _add_common(p)
    p.set_defaults(handler=_amend_local)

    p = sub.add_parser(
        "verify",
        help="verify a freeze offline (documents, manifest, every token two ways)",
        description="Check the documents against the frozen hashes and every token with rfc3161-client and "
        "with 'openssl ts -verify -attime <genTime>'. Writes the report only if everything passes; "
        "otherwise removes a stale report and exits 1.",
    )
    p.add_argument("--freeze", required=True, metavar="DIR", help="folder holding freeze.json")
    p.add_argument("--out", required=True, metavar="FILE", help="verification report (JSON)")
    p.add_argument("--root", default=".", metavar="DIR", help="repository root of the documents (default: .)")
    p.add_argument(
        "--allow-test-authority",
        action="store_true",
        help="accept a freeze made against the local test authority (cpu profile only)",
    )
    p.add_argument(
        "--amendments",
        type=int,
        default=None,
        metavar="N",
        help="verify the base freeze and its first N amendments only (default: every amendment present); "
        "fewer than N present is an error",
    )
    p.add_argument(
        "--require",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        help="documents (relative to --root) that the last verified record must cover",
    )
    p.add_argument(
        "--branch",
        metavar="DIR",
        default=None,
        help="also verify the branch amendment in DIR ('amend --into'), chained to the last of --amendments",
    )
    p.set_defaults(handler=_verify)


def _freeze(args) -> int:
    from paired_rollouts.prereg import freeze as fz

    kwargs = {"documents": args.document} if args.document else {}
    record = fz.freeze(
        args.out,
        fz.authorities(args.tsa, args.cafile),
        root=args.root,
        test_authority=args.test_authority,
        timeout=args.timeout,
        **kwargs,
    )
    _report_record(args.out, record)
    return 0


def _freeze_local(args) -> int:
    from paired_rollouts.prereg import freeze as fz
    from paired_rollouts.prereg.local_tsa import KeySpec, LocalTSA

    kwargs = {"documents": args.document} if args.document else {}
    if args.replace_inside is not None:
        from paired_rollouts.io import remove_tree_inside

        remove_tree_inside(args.out, args.replace_inside)
    with (
        tempfile.TemporaryDirectory(prefix="prereg-test-tsa-") as tmp,
        LocalTSA(tmp, [KeySpec("test-a"), KeySpec("test-b")]) as tsa,
    ):
        auths = [fz.Authority(name, url, tsa.root_pem) for name, url in tsa.tsa_args().items()]
        record = fz.freeze(
            args.out, auths, root=args.root, test_authority=True, timeout=args.timeout, **kwargs
        )
    _report_record(args.out, record)
    return 0


def _amend(args) -> int:
    from paired_rollouts.prereg import freeze as fz

    auths = fz.authorities(args.tsa, args.cafile) if args.tsa else None
    if args.cafile and not args.tsa:
        raise UserError("--cafile needs --tsa (without --tsa the freeze's own TSAs and roots are reused)")
    record = _amend_with(args, Path(args.out), auths)
    _report_record(_amendment_folder(args, Path(args.out), record), record)
    return 0


def _amend_with(args, freeze_dir: Path, auths) -> dict:
    """``prereg amend``'s arguments handed to ``freeze.amend`` with the given authorities."""
    from paired_rollouts.prereg import freeze as fz

    return fz.amend(
        freeze_dir,
        args.reason,
        auths=auths,
        documents=args.document,
        root=args.root,
        timeout=args.timeout,
        into=args.into,
        after=args.after,
    )


def _amendment_folder(args, freeze_dir: Path, record: dict) -> Path:
    """Where the amendment went: its branch (--into), or the freeze's numbered folder."""
    from paired_rollouts.prereg.record import AMENDMENTS

    return Path(args.into or freeze_dir / AMENDMENTS / f"{record['amendment']['number']:03d}")


def _clear_for_local_amendment(args, freeze_dir: Path) -> None:
    """Check --number/--into/--replace-inside and remove what is re-made (amendments N.., or the branch)."""
    from paired_rollouts.io import remove_tree_inside
    from paired_rollouts.prereg.record import AMENDMENTS, list_amendments

    if args.into is not None and args.number is not None:
        raise UserError("--number and --into exclude each other: a branch's number is --after + 1")
    if args.replace_inside is not None and args.number is None and args.into is None:
        raise UserError("--replace-inside needs --number or --into (which amendment to make again)")
    if args.into is not None and args.replace_inside is not None and Path(args.into).exists():
        remove_tree_inside(args.into, args.replace_inside)
    if args.number is not None:
        if args.number < 1:
            raise UserError(f"--number {args.number}: amendments are numbered from 1")
        if args.replace_inside is not None:
            for folder in list_amendments(freeze_dir):
                if int(folder.name) >= args.number:
                    remove_tree_inside(folder, args.replace_inside)
        present = len(list_amendments(freeze_dir))
        if present + 1 != args.number:
            raise UserError(
                f"{freeze_dir / AMENDMENTS}: holds {present} amendment(s), so the next is {present + 1:03d}, "
                f"not {args.number:03d}; make the earlier ones first (or pass --replace-inside)"
            )


def _amend_local(args) -> int:
    from paired_rollouts.prereg import freeze as fz
    from paired_rollouts.prereg.local_tsa import KeySpec, LocalTSA

    freeze_dir = Path(args.out)
    _clear_for_local_amendment(args, freeze_dir)
    with (
        tempfile.TemporaryDirectory(prefix="prereg-test-tsa-") as tmp,
        LocalTSA(tmp, [KeySpec("test-a"), KeySpec("test-b")]) as tsa,
    ):
        auths = [fz.Authority(name, url, tsa.root_pem) for name, url in tsa.tsa_args().items()]
        record = _amend_with(args, freeze_dir, auths)
    if not record["test_authority"]:
        # fz.amend refuses a test token for a public freeze, so this cannot be reached; kept as a guard.
        raise UserError(f"{freeze_dir}: amend-local only amends a test-authority freeze")
    _report_record(_amendment_folder(args, freeze_dir, record), record)
    return 0


def _report_record(out, record: dict) -> None:
    _echo(
        f"froze {len(record['documents'])} document(s) in {out}: imprint sha256 {record['imprint']}"
        + (" [TEST AUTHORITY]" if record["test_authority"] else "")
    )
    for token in record["tokens"]:
        _echo(f"  {token['name']} <{token['url']}> genTime {token['gen_time']} serial {token['serial']}")


def _verify(args) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.prereg.verify import run_verification

    out = Path(args.out)
    try:
        report = run_verification(
            args.freeze,
            root=args.root,
            allow_test_authority=args.allow_test_authority,
            echo=_echo,
            amendments=args.amendments,
            require=args.require,
            branch=args.branch,
        )
    except UserError:
        out.unlink(missing_ok=True)
        raise
    if not report["passes"]:
        out.unlink(missing_ok=True)
        lines = "\n  - ".join(report["failures"])
        raise UserError(
            f"freeze {args.freeze} does NOT verify ({len(report['failures'])} problem(s)):\n  - {lines}"
        )
    atomic_write_json(out, report)
    _echo(f"freeze {args.freeze} verifies: imprint {report['imprint']}; report {out}")
    for entry in report["covered"]:
        _echo(f"  covered by {entry['record']}: {entry['path']} sha256 {entry['sha256']}")
    return 0
