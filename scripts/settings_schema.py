"""Regenerate the settings part of config/schema.json from the dataclasses of paired_rollouts.settings.

    python scripts/settings_schema.py           # rewrite config/schema.json in place
    python scripts/settings_schema.py --check   # exit 1 if the committed file differs (tests/test_settings.py)

Each settings key is declared once, as a field of a section dataclass (help, default, type, bounds);
the schema's `$defs.<section>` entries and the scale block's `task_filter` are generated from them, the
rest of the schema (the config's other keys, the scale block's required keys) is written by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from paired_rollouts.io import atomic_write_text
from paired_rollouts.settings import generated_schema

SCHEMA = Path(__file__).resolve().parents[1] / "config" / "schema.json"


def schema_text(path: Path = SCHEMA) -> str:
    """The schema file as it should read: the committed one with its settings part regenerated."""
    return json.dumps(generated_schema(json.loads(path.read_text(encoding="utf-8"))), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--schema", type=Path, default=SCHEMA, help="the schema file (config/schema.json)")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when it differs")
    args = parser.parse_args(argv)
    text = schema_text(args.schema)
    if text == args.schema.read_text(encoding="utf-8"):
        print(f"{args.schema}: up to date")
        return 0
    if args.check:
        print(
            f"{args.schema}: differs from the dataclasses; run python scripts/settings_schema.py",
            file=sys.stderr,
        )
        return 1
    atomic_write_text(args.schema, text)
    print(f"{args.schema}: settings part regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
