"""A pre-registration workspace for the amendment tests: the freeze of the tier-1 documents and amendment
001 (A2), made through the real CLI with local RFC 3161 authorities (``freeze-local``, ``amend-local``),
and the verification command run against it."""

from __future__ import annotations

import shutil
from pathlib import Path

from paired_rollouts.cli import main

REPO = Path(__file__).resolve().parents[1]
BASE = ["prereg/PREREGISTRATION.md", "prereg/decision_rules.yaml"]
A2 = ["prereg/AMENDMENT-A2.md", "prereg/tier_rules.yaml"]
FREEZE = "results/prereg/freeze"


def copy_documents(root: Path, documents: list[str]) -> None:
    """The repository's documents at the same relative paths under ``root``."""
    for rel in documents:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, root / rel)


def freeze_with_a2(root: Path) -> list[str]:
    """Freeze the tier-1 documents under ``root`` and amend them with A2 as amendment 001; returns the
    common ``--out/--root`` arguments for further amendments."""
    copy_documents(root, BASE + A2)
    common = ["--out", str(root / FREEZE), "--root", str(root)]
    assert main(["prereg", "freeze-local", *common, "--documents", *BASE]) == 0
    a2 = ["--number", "1", "--replace-inside", str(root / "results"), "--reason", "register the later tiers"]
    assert main(["prereg", "amend-local", *common, *a2, "--documents", *BASE, *A2]) == 0
    return common


def verify(root: Path, out: Path, *extra: str) -> int:
    """``prereg verify`` of the workspace's freeze (test authorities allowed), report to ``out``."""
    return main(
        [
            "prereg",
            "verify",
            "--freeze",
            str(root / FREEZE),
            "--root",
            str(root),
            "--allow-test-authority",
            "--out",
            str(out),
            *extra,
        ]
    )
