"""The API reference of docs/pairing.md, generated from the public names' signatures and docstrings.

``python -m paired_rollouts.pairing._reference --write`` rewrites the block between the markers in
docs/pairing.md; without ``--write`` it exits 1 when the committed block differs (tests/test_pairing_docs.py
checks the same). Every name in ``pairing.__all__`` must be listed in exactly one section below.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from paired_rollouts import pairing

START = "<!-- api-reference: generated from the docstrings by python -m paired_rollouts.pairing._reference --write -->"
END = "<!-- api-reference end -->"
SECTIONS: dict[str, tuple[str, ...]] = {
    "Dice": ("Dice", "Schedule", "FaultMixture", "FaultTable", "Fate", "FATE_DRAWS"),
    "Group schedules and seeds": (
        "GroupSchedules",
        "MODES",
        "RolloutCounter",
        "derive_seed",
        "training_schedule_seed",
        "eval_schedule_seed",
        "diagnostic_seed",
        "independent_seed",
        "resolve_seed",
    ),
    "Adapters": ("PairedEnvironmentFactory", "GroupEnvs"),
    "Diagnostics": (
        "luck_share",
        "LuckShare",
        "luck_share_interval",
        "variance_components",
        "group_diagnostics",
        "GroupDiagnostics",
        "group_flags",
        "GroupFlags",
        "spurious_rate_closed_form",
        "zero_variance_fraction",
        "arm_gap",
        "ArmGap",
        "auc_weights",
        "paired_bootstrap",
        "percentile_interval",
        "BOOTSTRAP_SEED",
    ),
    "Errors": ("PairingError",),
}
_ROLE = re.compile(r":(?:class|func|meth|attr):`~?(?:paired_rollouts\.pairing\.)?([^`]+)`")
_QUOTED_ANNOTATION = re.compile(r"(: |-> )'([^']*)'")
_FORWARD_REF = re.compile(r"ForwardRef\('([^']*)'\)")
_SELF = re.compile(r"^\((self|cls)(, )?")


def _doc(obj: Any) -> str:
    text = inspect.getdoc(obj) or ""
    return _ROLE.sub(r"`\1`", text).replace("``", "`")


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return _FORWARD_REF.sub(r"\1", _QUOTED_ANNOTATION.sub(r"\1\2", text))


def _constant_doc(name: str) -> str:
    """The ``#:`` comment above ``name``'s assignment in its module (constants carry no docstring)."""
    for path in sorted(Path(pairing.__file__).parent.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.match(rf"{name}\b.*=", line):
                comments = []
                while i > 0 and lines[i - 1].startswith("#:"):
                    i -= 1
                    comments.insert(0, lines[i][2:].strip())
                if comments:
                    return " ".join(comments)
    raise ValueError(f"constant {name} has no #: comment")


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties defined on the class itself, in source order."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_") or name in getattr(cls, "_fields", ()):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            out.append((name, value))
    return out


def _entry(name: str) -> list[str]:
    obj = getattr(pairing, name)
    if not callable(obj):  # a constant: its value, or its type where the value depends on the machine
        shown = "str" if name == "FATE_DRAWS" else repr(obj)
        return [f"#### `{name}`", "", f"`{shown}`: {_constant_doc(name)}", ""]
    signature = _signature(obj).removesuffix(" -> None") if inspect.isclass(obj) else _signature(obj)
    lines = [f"#### `{name}{signature}`", "", _doc(obj), ""]
    if inspect.isclass(obj) and not issubclass(obj, Exception):
        for member, value in _members(obj):
            head = (
                f"`.{member}` (property)"
                if isinstance(value, property)
                else f"`.{member}{_SELF.sub('(', _signature(value))}`"
            )
            first, *rest = _doc(value).split("\n")
            lines.append(f"- {head}: {first}")
            lines += [f"  {line}" if line else "" for line in rest]
        if lines[-1] != "":
            lines.append("")
    return lines


def render() -> str:
    """The generated block, markers included."""
    listed = [name for names in SECTIONS.values() for name in names]
    missing, twice = set(pairing.__all__) - set(listed), {n for n in listed if listed.count(n) > 1}
    unknown = set(listed) - set(pairing.__all__)
    if missing or twice or unknown:
        raise ValueError(
            f"reference sections: missing {sorted(missing)}, twice {sorted(twice)}, unknown {sorted(unknown)}"
        )
    lines = [START, ""]
    for section, names in SECTIONS.items():
        lines += [f"### {section}", ""]
        for name in names:
            lines += _entry(name)
    lines.append(END)
    return "\n".join(line.rstrip() for line in lines) + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with its generated block replaced by ``block``."""
    start, end = text.index(START), text.index(END) + len(END) + 1
    return text[:start] + block + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", type=Path, default=Path("docs/pairing.md"))
    parser.add_argument("--write", action="store_true", help="rewrite the block (else: check it)")
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    updated = replace_block(text, render())
    if args.write:
        args.doc.write_text(updated, encoding="utf-8")
        return 0
    if updated != text:
        print(f"{args.doc}: the API reference differs from the docstrings; run with --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
