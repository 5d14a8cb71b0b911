"""What a completeness check found: missing evidence, defects, and the sha256 of every file it read."""

from __future__ import annotations

from collections import Counter
from typing import Any

from paired_rollouts.design import parse_run

MAX_LISTED = 20  # items listed per entry (and x 50: capped defects) so a broken run gives a readable record


class Findings:
    """The running record of one run's check; ``ident`` is the run's identity from its name."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.ident = parse_run(run).to_dict()
        self.missing: list[dict[str, Any]] = []
        self.defects: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}
        self.episodes_found = 0

    def defect(self, **entry: Any) -> None:
        """A defect of the records' content (capped: a wholly wrong file would list every line)."""
        if len(self.defects) < 50 * MAX_LISTED:
            self.defects.append(entry)

    def identity(self, rec: dict[str, Any], key: str, line: int, **expected: Any) -> bool:
        """The record's run, condition, arm, seed (and ``expected``) are this run's; else one defect."""
        want = {
            "run": self.run,
            "condition": self.ident["condition"],
            "arm": self.ident["arm"],
            "seed": self.ident["seed"],
            **expected,
        }
        for name, value in want.items():
            if rec.get(name) != value:
                self.defect(
                    kind="identity",
                    path=key,
                    line=line,
                    problem=f"{name} is {rec.get(name)!r}, expected {value!r}",
                )
                return False
        return True

    def compare(self, key: str, expected: Counter, found: Counter, kind: str) -> None:
        """Items absent from a file (one missing entry) and items extra in it (one defect each)."""
        absent = sorted((expected - found).elements())
        extra = sorted((found - expected).elements())
        if absent:
            self.missing.append(
                {
                    "kind": kind,
                    "path": key,
                    "expected": sum(expected.values()),
                    "found": sum(found.values()),
                    "absent": [list(a) for a in absent[:MAX_LISTED]],
                }
            )
        for item in extra[:MAX_LISTED]:
            self.defects.append(
                {"kind": "duplicate" if item in expected else "unexpected", "path": key, "item": list(item)}
            )

    @property
    def complete(self) -> bool:
        return not self.missing and not self.defects
