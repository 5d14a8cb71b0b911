"""The cost ledger: what the run cost, from Snakemake's own benchmark files, beside the paper's budget.

Each rule writes a benchmark TSV (`benchmark:`, at ``Layout.benchmark(job)``); its job name gives the
stage and, for per-run jobs, the run (``Layout.benchmark_job``). Wall time and CPU time add up; peak memory is the largest resident set of any job. On a GPU
profile the GPU stages (train, evaluate, diagnose, probe, replay: one GPU per job in every GPU profile) add
their wall time as GPU-hours. Timings differ between reruns, so this is the one register that is not
reproducible byte for byte.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.layout import Layout

GPU_STAGES = ("train", "evaluate", "diagnose", "probe", "replay")
COLUMNS = ("s", "max_rss", "cpu_time")
# What Snakemake's benchmark writer puts where it could not measure a value: "NA" (no data collected) and
# "-" (a None value); an empty field is kept as not measured too. A field missing from a row is not.
NOT_MEASURED = ("NA", "-", "")
GPU_DIGITS = 4  # GPU-hours are written to 4 decimals


def counts_gpu_hours(accelerator: str) -> bool:
    """Whether a profile's ledger counts GPU-hours (every profile but cpu); elsewhere they are null."""
    return accelerator != "cpu"


def gpu_hours_per_run(total_gpu_hours: float | None, runs: int | None) -> float | None:
    """The GPU-hours per training run the document quotes: all GPU-hours over the runs in the study,
    rounded like every GPU-hour figure; None without GPU-hours or runs."""
    if total_gpu_hours is None or not runs:
        return None
    return round(total_gpu_hours / runs, GPU_DIGITS)


def read_benchmark(path: Path) -> dict[str, float]:
    """The last row of one Snakemake benchmark TSV (a `--benchmark-repeats` file keeps every repeat)."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            numbered = [(reader.line_num, row) for row in reader]
    except FileNotFoundError:
        raise UserError(f"{path}: benchmark file not found; run the job that writes it") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a Snakemake benchmark file (not UTF-8 text); rerun the job") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder; give the benchmark .tsv file itself") from None
    rows = [row for _, row in numbered]
    if not rows or any(c not in rows[-1] for c in COLUMNS):
        raise UserError(f"{path}: not a Snakemake benchmark file (columns {', '.join(COLUMNS)} expected)")
    _check_widths(path, numbered)
    out = {}
    for column in COLUMNS:
        raw = rows[-1][column].strip()
        if raw in NOT_MEASURED:
            out[column] = math.nan  # counted as not measured, never as a time
            continue
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise UserError(
                f"{path}: {column} is {raw!r}, not a time or size (a number >= 0, or NA when not measured); "
                "rerun the job that writes it"
            )
        out[column] = value
    return out


def _check_widths(path: Path, numbered: list[tuple[int, dict[str | None, Any]]]) -> None:
    """Every row has the header's fields: a row with fewer (a write cut mid-row, whose missing columns
    DictReader fills with None) or more is refused, naming the file and line, never read as not measured."""
    for number, row in numbered:
        if None in row or None in row.values():
            raise UserError(
                f"{path}:{number}: row has {_fields(row)} fields, the header {len(row) - (None in row)}; "
                "the file was cut or edited: rerun the job that writes it"
            )


def _fields(row: dict[str | None, Any]) -> int:
    """How many fields a DictReader row had: the header's not filled (None) left out, extras counted."""
    extra = row.get(None) or []
    return sum(1 for k, v in row.items() if k is not None and v is not None) + len(extra)


def _total(rows: list[dict[str, float]], gpu: bool) -> dict[str, Any]:
    def add(key: str) -> float:
        return sum(r[key] for r in rows if not math.isnan(r[key]))

    rss = [r["max_rss"] for r in rows if not math.isnan(r["max_rss"])]
    return {
        "jobs": len(rows),
        "wall_s": round(add("s"), 3),
        "cpu_s": round(add("cpu_time"), 3),
        "peak_rss_mb": round(max(rss), 1) if rss else None,
        "gpu_hours": round(
            sum(r["s"] for r in rows if r["gpu"] and not math.isnan(r["s"])) / 3600, GPU_DIGITS
        )
        if gpu
        else None,
    }


def build_ledger(
    files: list[Path], results: Path, accelerator: str, budget: dict[str, Any] | None, runs: int | None = None
) -> dict[str, Any]:
    """Sum the benchmark files (under the results root ``results``) per stage, per run and overall."""
    gpu = counts_gpu_hours(accelerator)
    layout = Layout(str(results))
    rows = []
    for path in sorted(files):
        values = read_benchmark(path)
        stage, run = layout.benchmark_job(path)
        rows.append({**values, "stage": stage, "run": run, "gpu": gpu and stage in GPU_STAGES})
    stages = {}
    for stage in sorted({r["stage"] for r in rows}):
        stages[stage] = _total([r for r in rows if r["stage"] == stage], gpu)
    per_run = {}
    for run in sorted({r["run"] for r in rows if r["run"]}):
        per_run[run] = _total([r for r in rows if r["run"] == run], gpu)
    total = _total(rows, gpu)
    n_runs = runs or len(per_run) or None
    return {
        "accelerator": accelerator,
        "benchmarks": len(rows),
        "stages": stages,
        "runs": per_run,
        "total": total,
        "runs_in_study": n_runs,
        "gpu_hours_per_run": gpu_hours_per_run(total["gpu_hours"], n_runs),
        "published_budget": budget,
    }
