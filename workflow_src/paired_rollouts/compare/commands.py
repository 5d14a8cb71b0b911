"""CLI: ``compare`` (published numbers versus one results root)."""

from __future__ import annotations

import argparse
from pathlib import Path

from paired_rollouts import cli_args as A


def _root_of_scale(results: Path, scale: str) -> None:
    """Refuse a results root laid out as another scale's (``results/<scale>``, the paper's ``results``):
    the paper's numbers are expected to agree only with a paper-scale root."""
    from paired_rollouts.errors import UserError
    from paired_rollouts.layout import results_root

    parts = results.resolve().parts
    laid_out_as = parts[-1] if len(parts) > 1 and parts[-2] == "results" else None
    if laid_out_as is not None and laid_out_as != scale:
        raise UserError(
            f"{results}: the results root of scale {laid_out_as} ({results_root(laid_out_as)}), compared as "
            f"--scale-name {scale}; give --scale-name {laid_out_as}"
        )


def _compare(args: argparse.Namespace) -> int:
    from paired_rollouts.compare.compare import Registers, compare
    from paired_rollouts.compare.published import load_published, require_pinned
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import atomic_write_all, dumps_json

    if not args.results.is_dir():
        raise UserError(
            f"{args.results}: results root not found; give the folder that holds decisions/, probe/ ..."
        )
    _root_of_scale(args.results, args.scale_name)
    digest = require_pinned(args.published)
    published = load_published(args.published)
    out = compare(
        published,
        Registers(args.results, args.tasks_dir),
        scale=args.scale_name,
        scale_label=args.scale,
        published_sha256=digest,
    )
    outputs = [(args.out, dumps_json(out).encode())]
    if args.html:
        from paired_rollouts.compare.html import comparison_html

        outputs.append((args.html, comparison_html(out).encode()))
    atomic_write_all(outputs)  # both or neither: a bad --html path leaves no comparison behind
    s = out["summary"]
    print(f"{s['text']}; {s['differs']} differ, {s['not computed']} not computed -> {args.out}")
    return 0


def _ledger(args: argparse.Namespace) -> int:
    from paired_rollouts.compare.ledger import build_ledger
    from paired_rollouts.compare.published import load_published, require_pinned
    from paired_rollouts.io import atomic_write_all, dumps_json

    if args.published:
        require_pinned(args.published)
    budget = load_published(args.published).budget if args.published else None
    out = build_ledger(list(args.benchmarks), args.results, args.accelerator, budget, runs=args.runs)
    outputs = [(args.out, dumps_json(out).encode())]
    if args.html:
        from paired_rollouts.compare.html import ledger_html

        outputs.append((args.html, ledger_html(out).encode()))
    atomic_write_all(outputs)  # both or neither
    t = out["total"]
    print(
        f"{t['jobs']} jobs: {t['wall_s'] / 3600:.2f} h wall, {t['cpu_s'] / 3600:.2f} h CPU, "
        f"peak {t['peak_rss_mb']} MB"
        + (f", {t['gpu_hours']:.2f} GPU-h" if t["gpu_hours"] is not None else "")
        + f" -> {args.out}"
    )
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
    A.add_results_root(p, "the results root (results, results/standin)", required=True)
    p.add_argument("--published", required=True, type=Path, help="data/published/paper.yaml")
    A.add_tasks_dir(p, "task-pool folder for tasks/ keys (data/tasks)", required=False, type=Path)
    p.add_argument("--scale", required=True, help="scale label shown in the reasons (paper, stand-in, ...)")
    p.add_argument("--scale-name", required=True, help="the config's scale name: 'paper' expects agreement")
    p.add_argument("--out", required=True, type=Path, help="RESULTS/comparison.json")
    p.add_argument(
        "--html", type=Path, default=None, help="also write an HTML page (RESULTS/comparison.html)"
    )
    p.set_defaults(handler=_compare)

    p = subparsers.add_parser(
        "ledger",
        help="the cost ledger: wall time, CPU time, peak memory (and GPU-hours) per stage and run",
        description="Sum Snakemake benchmark files (one per job) per stage, per run and overall, beside the "
        "paper's published budget.",
        epilog="Format: docs/compare.md.",
    )
    p.add_argument("--benchmarks", required=True, nargs="+", type=Path, help="benchmark .tsv files")
    A.add_results_root(p, "the results root whose benchmarks/ folder holds the files", required=True)
    p.add_argument(
        "--accelerator", required=True, choices=["cpu", "h100", "mi300x"], help="the profile's stack"
    )
    p.add_argument(
        "--runs", type=A.positive, default=None, help="training runs in the study (GPU-hours per run)"
    )
    p.add_argument("--published", type=Path, default=None, help="data/published/paper.yaml (its budget)")
    p.add_argument("--out", required=True, type=Path, help="RESULTS/ledger.json")
    p.add_argument("--html", type=Path, default=None, help="also write an HTML page (RESULTS/ledger.html)")
    p.set_defaults(handler=_ledger)
