"""The GPU check's CPU rehearsal (``scripts/gpu_check.py --device cpu --rehearsal``) run in its own process,
as on a node: its report, which must be green. Used with HF generate (tests/test_gpu_check.py) and with
vLLM's CPU engine (tests/test_vllm_cpu.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(REPO / "workflow_src"), OMP_NUM_THREADS="1")


def run_rehearsal(work: Path, *options: str, timeout: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts/gpu_check.py"), "--device", "cpu", "--rehearsal"]
        + ["--work", str(work), *options],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        cwd=REPO,
    )
    report = json.loads(done.stdout)
    if done.returncode != 0 or report["ok"] is not True:
        raise AssertionError(json.dumps(report.get("checks"), indent=1) + done.stderr[-3000:])
    return report
