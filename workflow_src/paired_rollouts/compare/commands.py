"""CLI: ``compare`` (published numbers versus one results root)."""

from __future__ import annotations

import argparse
from pathlib import Path


def _compare(args: argparse.Namespace) -> int:
    from paired_rollouts.compare.compare import Registers, compare
    from paired_rollouts.compare.published import load_published
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import atomic_write_json

    if not args.results.is_dir():
        raise UserError(
            f"{args.results}: results root not found; give the folder that holds decisions/, probe/ ..."
        )
    published = load_published(args.published)
    out = compare(
        published,
        Registers(args.results, args.tasks_dir),
        scale=args.scale,
        scale_label=args.scale_label or args.scale,
    )
    atomic_write_json(args.out, out)
    s = out["summary"]
    print(f"{s['text']}; {s['differs']} differ, {s['not computed']} not computed -> {args.out}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare the paper's published numbers with a results root's registers",
        description="Read every entry of the published-numbers file, look its register key(s) up under the "
        "results root, and write per entry: published, reproduced, difference, whether it agrees "
        "within the published rounding, or why it cannot be computed at this scale.",
        epilog="Formats: docs/compare.md.",
    )
    p.add_argument("--results", required=True, type=Path, help="the results root (results, results/standin)")
    p.add_argument("--published", required=True, type=Path, help="data/published/paper.yaml")
    p.add_argument(
        "--tasks-dir", type=Path, default=None, help="task-pool folder for tasks/ keys (data/tasks)"
    )
    p.add_argument("--scale", required=True, help="scale name (paper, standin, tiny, ...)")
    p.add_argument("--scale-label", default=None, help="scale label shown in reasons (default: the name)")
    p.add_argument("--out", required=True, type=Path, help="RESULTS/comparison.json")
    p.set_defaults(handler=_compare)
