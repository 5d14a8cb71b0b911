"""CLI: ``probe bandit`` (exact aligned-scalar bandit) ``probe checkpoint`` and ``probe assemble`` (the gradient probe)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _bandit(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.bandit import bandit_enumeration, format_bandit

    result = bandit_enumeration()
    if args.json:
        print(json.dumps(result, sort_keys=True, indent=2))
    else:
        print(format_bandit(result))
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.scores import probe_checkpoint_cli  # torch lives there; import lazily

    return probe_checkpoint_cli(args)


def _assemble(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.scores import assemble_cli

    return assemble_cli(args)


def register(subparsers) -> None:
    probe = subparsers.add_parser(
        "probe", help="gradient-covariance probe (H1b) and the exact aligned-scalar bandit",
        description="Gradient probe sub-commands: 'bandit' prints the closed example, 'run' probes checkpoints.")
    sub = probe.add_subparsers(dest="probe_command", required=True, metavar="PROBE_COMMAND")

    p = sub.add_parser("bandit", help="exact numbers of the aligned-scalar bandit (p=0.5, G=8, q=0.1)",
                       description="Enumerate all 2^8 action tuples through the probe's outcome code and "
                                   "print contrast variances, MC/SW covariance traces, expected updates, "
                                   "lhs/rhs and the orthogonal-score case.",
                       epilog="JSON shape: docs/records.md section 6.4.")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(handler=_bandit)

    p = sub.add_parser("checkpoint", help="probe one checkpoint of a run (needs the train extra: torch)",
                       description="Capture clean and diagnostic rollouts at one checkpoint, score them group by "
                                   "group (streamed into the Gram products), and write that checkpoint's summary. "
                                   "One checkpoint per process: one generation engine per process.",
                       epilog="Output shape: docs/records.md section 6 (one entry of 'checkpoints', plus run, step).")
    p.add_argument("--run-dir", required=True, type=Path, help="results/runs/RUN (checkpoints)")
    p.add_argument("--step", required=True, type=int, help="checkpoint step, e.g. 80")
    p.add_argument("--model-dir", required=True, type=Path, help="results/models/MODEL (base weights)")
    p.add_argument("--tasks-dir", required=True, type=Path, help="data/tasks")
    p.add_argument("--settings", default=None, help="probe design: inline JSON or @file.json")
    p.add_argument("--out", required=True, type=Path, help="results/probe/TRAJECTORY/stepN.json")
    p.set_defaults(handler=_checkpoint)

    p = sub.add_parser("assemble", help="the trajectory's probe register from its checkpoint files",
                       description="Combine the per-checkpoint files of one trajectory into the probe register "
                                   "with the H1b verdict.",
                       epilog="Output shape: docs/records.md section 6.")
    p.add_argument("--trajectory", required=True, help="trajectory name")
    p.add_argument("--run", required=True, help="the trajectory's run, e.g. c2-paired-s0")
    p.add_argument("--inputs", required=True, nargs="+", type=Path, help="results/probe/TRAJECTORY/stepN.json ...")
    p.add_argument("--settings", default=None, help="probe design (recorded in the register)")
    p.add_argument("--out", required=True, type=Path, help="results/probe/TRAJECTORY.json")
    p.set_defaults(handler=_assemble)
