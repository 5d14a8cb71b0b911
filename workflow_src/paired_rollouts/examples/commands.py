"""``paired-rollouts examples``: the second environment, written against ``paired_rollouts.pairing`` alone,
and its paired-versus-independent study (docs/pairing.md#a-second-environment-flaky-search)."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

log = logging.getLogger("paired_rollouts.examples")


def _flaky_search(args: argparse.Namespace) -> int:
    from paired_rollouts.examples.flaky_search.register import settings_of, write_study
    from paired_rollouts.examples.flaky_search.study import run_study

    settings = settings_of(args.preset)
    started = time.perf_counter()
    evidence = run_study(settings, progress=log.info)
    register = write_study(evidence, args.preset, args.out)
    summary = register["summary"]
    gap = summary["auc_gap"]
    print(
        f"flaky search ({args.preset}): {len(summary['seeds'])} seed pairs in "
        f"{time.perf_counter() - started:.1f} s; luck share at step 0 {summary['luck_share_step0']['mean']:.3f}; "
        f"AUC gap {gap['gap']:+.4f} [{gap['ci95'][0]:+.4f}, {gap['ci95'][1]:+.4f}]: {summary['verdict']}"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    from paired_rollouts.examples.flaky_search.register import read_register

    register = read_register(args.register)
    print(
        f"{args.register}: the summary recomputes from its evidence; verdict: {register['summary']['verdict']}"
    )
    return 0


def register(subparsers) -> None:
    top = subparsers.add_parser(
        "examples",
        help="the flaky-search environment (pairing API only) and its paired-versus-independent study",
        description="A second environment of another kind than the back office, written against "
        "paired_rollouts.pairing alone, with a tabular policy trained by the group-relative update.",
    )
    sub = top.add_subparsers(dest="examples_command", required=True, metavar="ACTION")
    p = sub.add_parser(
        "flaky-search",
        help="run the study: paired vs independent over many seeds; writes evidence, register, table",
        epilog="Output shape: docs/pairing.md#the-register.",
    )
    p.add_argument(
        "--preset", default="study", help="study (32 seed pairs, about a minute) or tiny (seconds)"
    )
    p.add_argument(
        "--out", required=True, type=Path, help="folder for evidence.jsonl, register.json, table.txt"
    )
    p.set_defaults(handler=_flaky_search)
    p = sub.add_parser(
        "check", help="recompute a register's summary from its evidence (exit 1 on a mismatch)"
    )
    p.add_argument(
        "--register", required=True, type=Path, help="R/examples/flaky_search/PRESET/register.json"
    )
    p.set_defaults(handler=_check)
