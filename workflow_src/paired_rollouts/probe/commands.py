"""CLI: ``probe bandit`` (exact aligned-scalar bandit) and ``probe run`` (the gradient probe)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _bandit(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.bandit import bandit_enumeration, format_bandit

    result = bandit_enumeration()
    if args.out:
        from paired_rollouts.io import atomic_write_json

        atomic_write_json(args.out, result)
        print(format_bandit(result))
    elif args.json:
        print(json.dumps(result, sort_keys=True, indent=2))
    else:
        print(format_bandit(result))
    return 0


def _run(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.scores import run_probe_cli  # torch lives there; import lazily

    return run_probe_cli(args)


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
    p.add_argument("--out", type=Path, default=None, help="also write the JSON to this file (results/probe/bandit.json)")
    p.set_defaults(handler=_bandit)

    p = sub.add_parser("run", help="probe a trajectory's checkpoints (needs the train extra: torch)",
                       description="Capture diagnostic and clean rollouts at each checkpoint, score them, "
                                   "and write the probe register.",
                       epilog="Output shape: docs/records.md section 6.")
    p.add_argument("--trajectory", default=None, help="trajectory name (default: the run directory's name)")
    p.add_argument("--run-dir", required=True, type=Path, help="results/runs/RUN (checkpoints)")
    p.add_argument("--steps", required=True, nargs="+", type=int, help="checkpoint steps, e.g. 0 80 100")
    p.add_argument("--model-dir", required=True, type=Path, help="results/models/MODEL (base weights)")
    p.add_argument("--tasks-dir", required=True, type=Path, help="data/tasks")
    p.add_argument("--settings", default=None, help="probe design: inline JSON or @file.json")
    p.add_argument("--out", required=True, type=Path, help="results/probe/TRAJECTORY.json")
    p.set_defaults(handler=_run)
