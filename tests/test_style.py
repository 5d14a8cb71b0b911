"""House style, checked by the test command: `ruff check`, `ruff format` and `snakefmt` leave the
repository unchanged (line length 110 for both formatters, pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON_PATHS = ["workflow_src", "tests", "benchmarks", "scripts"]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_check_is_clean() -> None:
    result = _run(_tool("ruff"), "check", *PYTHON_PATHS)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_python_is_ruff_formatted() -> None:
    result = _run(_tool("ruff"), "format", "--check", *PYTHON_PATHS)
    assert result.returncode == 0, (
        "run `ruff format " + " ".join(PYTHON_PATHS) + "`:\n" + result.stdout[-4000:]
    )


def test_rules_are_snakefmt_formatted() -> None:
    result = _run(_tool("snakefmt"), "--check", "Snakefile", "rules")
    assert result.returncode == 0, (
        "run `snakefmt Snakefile rules`:\n" + (result.stdout + result.stderr)[-4000:]
    )
