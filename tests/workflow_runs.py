"""Running the workflow from a test: Snakemake's executable, a scratch copy of the repository, one call."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake") or str(Path(sys.executable).with_name("snakemake"))


#: What a scratch copy leaves out: git, every virtualenv (``.venv``, ``.venv-vllm-cpu`` is 2.4 GB, ``.venv-cuda``
#: ...; a suite that copied one per workflow test filled a 70 GB disk), results and caches.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv*", "results", ".snakemake", "__pycache__", ".pytest_cache", ".ruff_cache"
)


def copy_repo(parent: Path) -> Path:
    """A scratch copy of the workflow (code, config, rules, data) at ``parent/repo``: a test that runs or
    changes it never touches the developer's own checkout or ``results/``."""
    work = parent / "repo"
    shutil.copytree(REPO, work, symlinks=True, ignore=COPY_IGNORE)
    return work


def snakemake(
    *args: str, cwd: Path = REPO, check: bool = True, timeout: int = 300, **env: str
) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` in ``cwd`` (unbuffered Python, ``env`` added to the environment); with ``check``
    a failure is an AssertionError showing the end of its output."""
    result = subprocess.run(
        [SNAKEMAKE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1", **env),
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result
