"""``paired-rollouts render table|figure|document``: the paper's tables, figures and PDF."""

from __future__ import annotations

import argparse
from pathlib import Path


def _table_epilog() -> str:
    from paired_rollouts.render.tables import TABLES

    lines = ["inputs per table (--input KEY=PATH, repeat a key for several files; * = required):"]
    for number, spec in TABLES.items():
        keys = ", ".join(f"{k}{'*' if s.required else ''}" for k, s in spec.keys.items())
        lines.append(f"  {number:2d} {spec.title}: {keys}")
        for key, setting in spec.settings.items():
            lines.append(f"       --settings '{{\"{key}\": ...}}': {setting}")
    lines.append("Details of every key and what each table shows: docs/render.md.")
    return "\n".join(lines)


def _figure_epilog() -> str:
    from paired_rollouts.render.figures import FIGURES

    lines = ["figures and their inputs (--input KEY=PATH, repeatable):"]
    for name, spec in FIGURES.items():
        lines.append(f"  {name}: {', '.join(spec.keys)}")
    return "\n".join(lines)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "render",
        help="LaTeX tables, figures and the compiled PDF",
        description="Render the paper's tables and figures from the registers, and compile them into one PDF.",
    )
    sub = parser.add_subparsers(dest="render_command", required=True, metavar="WHAT")

    table = sub.add_parser(
        "table",
        help="one table as a LaTeX fragment (booktabs)",
        epilog=_table_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write results/tables/tableN.tex from the registers it reads.",
    )
    table.add_argument(
        "--number",
        type=int,
        required=True,
        help="table number (1-12 the paper's, 13-14 surrogate scales, 15-16 the tiers)",
    )
    table.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="an input file under a key the table declares (repeatable)",
    )
    table.add_argument(
        "--scale", required=True, help="scale label shown in the caption (e.g. stand-in, paper)"
    )
    table.add_argument(
        "--settings", default=None, help="JSON object (or @file) of table settings (see below)"
    )
    table.add_argument("--out", required=True, help="output .tex file")
    table.add_argument("--html", default=None, help="also write the table as an HTML page (for the report)")
    table.set_defaults(handler=_table)

    figure = sub.add_parser(
        "figure",
        help="one figure as PDF (and PNG beside it)",
        epilog=_figure_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write results/figures/NAME.pdf and NAME.png from the registers it reads.",
    )
    figure.add_argument("--name", required=True, help="figure name (see below)")
    figure.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="an input file under a key the figure declares (repeatable)",
    )
    figure.add_argument("--scale", required=True, help="scale label shown in the figure and caption")
    figure.add_argument("--out", required=True, help="output .pdf (the .png is written beside it)")
    figure.set_defaults(handler=_figure)

    document = sub.add_parser(
        "document",
        help="every table and figure compiled into one PDF (latexmk/pdflatex)",
        description="Compile the tables and figures into one PDF with a title page stating the commit, profile, "
        "scale and the pre-registration's verification.",
    )
    document.add_argument("--tables", nargs="+", required=True, help="table .tex files")
    document.add_argument("--figures", nargs="*", default=[], help="figure .pdf files")
    document.add_argument("--verification", required=True, help="results/prereg/verification.json")
    document.add_argument(
        "--decisions",
        nargs="*",
        default=[],
        help="results/decisions/*.json: the title page says when the study is incomplete",
    )
    document.add_argument("--profile", required=True, help="the Snakemake profile (cpu, h100, mi300x)")
    document.add_argument("--scale", required=True, help="scale label (stand-in, paper)")
    document.add_argument(
        "--commit",
        default=None,
        help="git commit shown on the title page (default: this checkout's, read now)",
    )
    document.add_argument(
        "--comparison", default=None, help="RESULTS/comparison.json: opens with a summary page"
    )
    document.add_argument("--ledger", default=None, help="RESULTS/ledger.json: the cost-ledger table")
    document.add_argument(
        "--regime-map",
        default=None,
        help="RESULTS/map/regime_map.json (surrogate scales): the map's page, its cell files beside it",
    )
    document.add_argument("--strict", action="store_true", help="fail on overfull boxes (CI)")
    document.add_argument("--out", required=True, help="output PDF, e.g. results/paper/tables.pdf")
    document.set_defaults(handler=_document)


def _table(args) -> int:
    from paired_rollouts import io
    from paired_rollouts.render import sources, tables

    model, inputs = tables.build(
        args.number, sources.parse_input_args(args.input), args.scale, io.load_settings(args.settings)
    )
    text = tables.render_model(args.number, model, inputs, args.scale)
    outputs = [(args.out, text.encode("utf-8"))]
    if args.html:
        import html as html_escape

        from paired_rollouts.render import html

        caption = f"Scale: {args.scale}. Sources: " + "; ".join(
            sources.describe_sources(tables.used_sources(inputs))
        )
        page = html.table_html(model, args.number, html_escape.escape(caption + "."))
        outputs.append((args.html, page.encode("utf-8")))
    io.atomic_write_all(outputs)  # the table and its page, both or neither
    return 0


def _figure(args) -> int:
    from paired_rollouts.render import figures, sources

    figures.render_figure(args.name, sources.parse_input_args(args.input), args.scale, Path(args.out))
    return 0


def _checkout_commit() -> str:
    """The checkout's commit (12 hex digits, "-dirty" with uncommitted tracked edits), read when the document
    is compiled; "unknown" outside a git checkout."""
    import subprocess

    def git(*command: str) -> str:
        return subprocess.run(["git", *command], capture_output=True, text=True, check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def _document(args) -> int:
    from paired_rollouts.render import document

    document.build_document(
        [Path(t) for t in args.tables],
        [Path(f) for f in args.figures],
        Path(args.verification),
        args.profile,
        args.scale,
        args.commit or _checkout_commit(),
        Path(args.out),
        strict=args.strict,
        decisions=[Path(d) for d in args.decisions],
        comparison=Path(args.comparison) if args.comparison else None,
        ledger=Path(args.ledger) if args.ledger else None,
        regime_map=Path(args.regime_map) if args.regime_map else None,
    )
    return 0
