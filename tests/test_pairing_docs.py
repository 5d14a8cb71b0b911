"""docs/pairing.md: its API reference is the docstrings' (regenerated here), and its tutorial runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from paired_rollouts.pairing import _reference

DOC = Path(__file__).resolve().parents[1] / "docs" / "pairing.md"
NOT_RUN = "# (not run by the tests"


def test_reference_is_generated_from_the_docstrings() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert _reference.replace_block(text, _reference.render()) == text, (
        "docs/pairing.md's API reference differs from the docstrings: "
        "python -m paired_rollouts.pairing._reference --write"
    )
    assert _reference.main(["--doc", str(DOC)]) == 0


def test_reference_lists_every_public_name_once(monkeypatch) -> None:
    monkeypatch.setitem(_reference.SECTIONS, "Errors", ())
    with pytest.raises(ValueError, match="PairingError"):
        _reference.render()


def test_tutorial_runs_as_written(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    runnable = [block for block in blocks if not block.startswith(NOT_RUN)]
    assert len(runnable) == len(blocks) - 1 >= 5
    namespace: dict = {"__name__": "tutorial"}
    for block in runnable:
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the tutorial's own code
    printed = capsys.readouterr().out
    assert "luck share" in printed and "AUC gap" in printed
