"""Shared pytest fixtures. Simulator fixtures are prefixed ``sim_``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from paired_rollouts.training.kernels import pin_cpu_kernels

os.environ.setdefault("OMP_NUM_THREADS", "1")
# torch's portable CPU kernels, as every torch command asks for them before its first operation
# (training/kernels.py): tests run commands in-process after other torch work
pin_cpu_kernels()

REPO_ROOT = Path(__file__).resolve().parents[1]

# The heaviest test files, heaviest first (serial seconds on the 2-core machine, 2026-12-03: the tiny LLM
# study of test_end_to_end about 500, the GPU check's rehearsal about 210, then 65-140 each). Run first,
# so that under ``-n 2 --dist loadfile`` (scripts/test.sh) the tiny study starts at once on one worker
# while the other works through the rest: a long file that starts late runs on alone at the end. On a
# normal run it gains nothing measurable (21 min 17 s against 20 min 28 s in xdist's own order, both at
# about 180 % CPU); it keeps the tiny study from being the last file to start.
HEAVY_FIRST = (
    "test_end_to_end.py",
    "test_gpu_check.py",
    "test_training_grpo.py",
    "test_slurm.py",
    "test_regime_map.py",
    "test_workflow.py",
    "test_report.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heavy files first (``HEAVY_FIRST``), every other file after them in collection order; the
    order inside a file is kept."""
    rank = {name: position for position, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVY_FIRST)))


@pytest.fixture(scope="session")
def sim_tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the four frozen pools and MANIFEST.json.

    Reuses ``data/tasks`` when its files match the paper's hashes; otherwise generates the pools once per
    session (a few seconds) into a temporary folder.
    """
    from paired_rollouts.backoffice.tasks import verify_pools, write_pools
    from paired_rollouts.errors import UserError

    committed = REPO_ROOT / "data" / "tasks"
    if (committed / "MANIFEST.json").is_file():
        try:
            verify_pools(committed)
            return committed
        except UserError:
            pass
    out = tmp_path_factory.mktemp("sim_tasks")
    write_pools(out)
    return out


@pytest.fixture(scope="session")
def sim_pools(sim_tasks_dir: Path) -> dict[str, list[dict]]:
    """The four pools by file name (train, validation, test, diagnostic), hash-checked."""
    from paired_rollouts.backoffice.tasks import POOL_ORDER, load_pool

    return {name: load_pool(sim_tasks_dir / f"{name}.jsonl") for name in POOL_ORDER}


@pytest.fixture()
def sim_task_0(sim_pools: dict[str, list[dict]]) -> dict:
    """test-00000: world 126704, cancel O0011 / new address for O0038 / ship O0009 (docs/simulator.md#task-record)."""
    return sim_pools["test"][0]
