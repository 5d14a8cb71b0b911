"""CLI: ``paired-rollouts reference`` writes the scripted-reference register."""

from __future__ import annotations

import argparse

_EPILOG = """\
Runs the scripted reference agent (naive and recovering policies; it knows each task's plan) on the
validation and test pools, every task x evaluation schedules 1-4, under the conditions clean, c1_p0.10,
c2_p0.25, c2r_p0.25_no_outage and heldout_types_p0.25 (all paired). The register holds, per pool,
condition and policy: episodes, success, exposed_frac, outage_hit_frac, budget_exceeded_frac and
mean_calls, under "results". Pools are hash-checked against MANIFEST.json first.

example:
  paired-rollouts reference --tasks-dir data/tasks --out results/reference/scripted_reference.json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reference",
        help="run the scripted reference agent and write its register (JSON)",
        description="Scripted-reference register: what an agent that knows the plan achieves under each "
        "noise condition.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tasks-dir", default="data/tasks", help="pool folder with MANIFEST.json")
    parser.add_argument("--out", default="results/reference/scripted_reference.json", help="register path")
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help="use only the first N tasks of each pool (quick checks; not the paper's register)",
    )
    parser.set_defaults(handler=run_reference)


def run_reference(args: argparse.Namespace) -> int:
    from paired_rollouts.agents.reference import build_register
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import atomic_write_json

    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit {args.limit}: must be at least 1")
    register_obj = build_register(args.tasks_dir, limit=args.limit, progress=True)
    atomic_write_json(args.out, register_obj)
    clean = register_obj["results"]
    for pool, conds in clean.items():
        for cond, policies in conds.items():
            line = "  ".join(
                f"{p} {m['success']:.4f} ({m['mean_calls']:.3f} calls)" for p, m in policies.items()
            )
            print(f"{pool:10s} {cond:22s} {line}")
    print(f"wrote {args.out}")
    return 0
