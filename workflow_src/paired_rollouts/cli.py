"""The ``paired-rollouts`` command line: one thin sub-command per pipeline stage.

Each sub-package that offers commands has a ``commands`` module with ``register(subparsers)``;
handlers import their heavy dependencies (torch, TRL) lazily so that ``--help`` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from paired_rollouts import __version__
from paired_rollouts.errors import UserError

# Order = order in ``--help``.
COMMAND_MODULES = (
    "backoffice",
    "agents",
    "prereg",
    "training",
    "evaluation",
    "calibration",
    "stats",
    "probe",
    "surrogate",
    "render",
    "compare",
    "examples",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paired-rollouts",
        description=(
            "Reproduce 'Luck Is Not Skill: When Do Paired Rollouts Help Group-Relative RL of LLM "
            "Agents?' stage by stage. Snakemake rules call these commands; you can call them too."
        ),
        epilog="Run 'paired-rollouts COMMAND --help' for a command's arguments.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        module_name = f"paired_rollouts.{name}.commands"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        result = args.handler(args)
    except UserError as exc:
        print(f"paired-rollouts {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a read-only or unwritable folder met outside io's writers
        from paired_rollouts.io import os_error

        print(f"paired-rollouts {args.command}: error: {os_error(exc)}", file=sys.stderr)
        return 1
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
