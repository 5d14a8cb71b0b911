"""The regime map (docs/records.md 8.5): a cell's record and the map that assembles them.

Both readers recompute what the record states and refuse a mismatch in one line: a cell's AUC and final
values from its curves, the gaps' means, bootstrap intervals and verdict from the per-pair gaps, its luck
share from its reward tables, its predictions from its measured quantities; the map's cells the same way
from their per-pair gaps, its summary (verdict counts, largest gain, Spearman correlations, best predictor)
from its cells, and, when the cell files are beside it, their SHA-256.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records.schema import is_int, is_num

MAP_COMMAND = "paired-rollouts surrogate map"
CELL_COMMAND = "paired-rollouts surrogate map-cell"


@dataclass(frozen=True)
class RegimeMapCell:
    """One cell's record, checked."""

    cell_id: str
    factors: dict[str, Any]
    verdict: str
    auc_gap: dict[str, Any]
    final_gap: dict[str, Any]
    predictions: dict[str, Any]
    body: dict[str, Any]


@dataclass(frozen=True)
class RegimeMap:
    """The map: its grid, its cells (summaries) and its summary, checked."""

    grid: dict[str, Any]
    cells: list[dict[str, Any]]
    summary: dict[str, Any]
    files: dict[str, str]


def _load(path: str | Path, what: str, command: str) -> dict[str, Any]:
    source = Path(path)
    if not source.is_file():
        raise UserError(f"{source}: {what} not found; run '{command}'")
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{source}: not JSON ({exc.msg}); rerun '{command}'") from None
    if not isinstance(data, dict):
        raise UserError(f"{source}: a {what} is a JSON object; rerun '{command}'")
    return data


def _need(data: dict[str, Any], keys: tuple[str, ...], where: str, command: str) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise UserError(f"{where}: missing key(s) {', '.join(missing)}; rerun '{command}'")


def _count(v: Any, least: int) -> bool:
    return is_int(v) and v >= least


def _typed(ok: bool, where: str, what: str, command: str) -> None:
    """One line naming the file and the key whose value is of the wrong type."""
    if not ok:
        raise UserError(f"{where}: {what}; rerun '{command}'")


def _close(a: Any, b: Any) -> bool:
    """Equal numbers (to rounding), equal None, or equal lists/dicts of them."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _gap_block(gaps: list[float], resamples: int) -> dict[str, Any]:
    from paired_rollouts.surrogate.regime_map import bootstrap_mean_interval

    return {
        "per_pair": gaps,
        "mean": float(sum(gaps) / len(gaps)),
        "interval": bootstrap_mean_interval(gaps, resamples),
    }


def _check_cell_summary(cell: dict[str, Any], where: str, resamples: int, command: str) -> None:
    """A cell's gaps, verdict and predictions against its per-pair gaps and measured quantities."""
    from paired_rollouts.surrogate.regime_map import Cell, predictions, verdict

    _need(
        cell,
        (
            "cell_id",
            "factors",
            "auc_gap",
            "final_gap",
            "verdict",
            "predictions",
            "luck_share",
            "gradient_variance",
            "eq5",
        ),
        where,
        command,
    )
    _typed(isinstance(cell["cell_id"], str), where, "cell_id must be a string", command)
    _typed(isinstance(cell["factors"], dict), where, "factors must be an object", command)
    _typed(isinstance(cell["luck_share"], dict), where, "luck_share must be an object", command)
    gradient = cell["gradient_variance"]
    _typed(
        isinstance(gradient, dict) and (gradient.get("ratio") is None or is_num(gradient.get("ratio"))),
        where,
        "gradient_variance must be an object whose ratio is a number or null",
        command,
    )
    eq5 = cell["eq5"]
    _typed(
        eq5 is None or (isinstance(eq5, dict) and is_num(eq5.get("lhs")) and is_num(eq5.get("rhs"))),
        where,
        "eq5 must be null or an object with numbers lhs and rhs",
        command,
    )
    factors = Cell.parse(cell["factors"], f"{where}: factors")
    if factors.id != cell["cell_id"]:
        raise UserError(
            f"{where}: cell_id {cell['cell_id']} is not its factors' id {factors.id}; rerun '{command}'"
        )
    for name in ("auc_gap", "final_gap"):
        block = cell[name]
        gaps = block.get("per_pair") if isinstance(block, dict) else None
        if not isinstance(gaps, list) or not gaps or not all(is_num(g) for g in gaps):
            raise UserError(
                f"{where}: {name}.per_pair must be a non-empty list of numbers; rerun '{command}'"
            )
        expected = _gap_block([float(g) for g in gaps], resamples)
        if not _close(block, expected):
            raise UserError(
                f"{where}: {name} {block.get('mean')} {block.get('interval')} does not follow from its per-pair "
                f"gaps ({expected['mean']} {expected['interval']}); rerun '{command}'"
            )
    if cell["verdict"] != verdict(cell["auc_gap"]["interval"]):
        raise UserError(f"{where}: verdict {cell['verdict']!r} does not follow from the AUC gap's interval")
    lam = cell["luck_share"].get("lam") if isinstance(cell["luck_share"], dict) else None
    expected = predictions(factors, lam, cell["gradient_variance"].get("ratio"), cell["eq5"])
    if not _close(cell["predictions"], expected):
        raise UserError(f"{where}: predictions do not follow from the measured quantities; rerun '{command}'")


def read_regime_map_cell(path: str | Path) -> RegimeMapCell:
    """R/map/cells/<cell>.json, every statistic recomputed from its curves and tables."""
    from paired_rollouts.surrogate.regime_map import CELL_SCHEMA, cell_statistics, luck_share_of

    data = _load(path, "regime-map cell", CELL_COMMAND)
    where = str(path)
    _need(
        data,
        ("schema", "eval_steps", "curves", "resamples", "auc", "final", "seed_pairs", "steps", "luck_share"),
        where,
        CELL_COMMAND,
    )
    if data["schema"] != CELL_SCHEMA:
        raise UserError(
            f"{where}: schema {data['schema']!r}, expected {CELL_SCHEMA!r}; rerun '{CELL_COMMAND}'"
        )
    curves = data["curves"]
    if not isinstance(curves, dict) or sorted(curves) != ["independent", "paired"]:
        raise UserError(f"{where}: curves must hold the paired and independent runs; rerun '{CELL_COMMAND}'")
    steps = data["eval_steps"]
    _typed(
        isinstance(steps, list) and bool(steps) and all(_count(t, 0) for t in steps),
        where,
        "eval_steps must be a non-empty list of step numbers",
        CELL_COMMAND,
    )
    resamples = data["resamples"]
    _typed(_count(resamples, 1), where, "resamples must be a positive integer", CELL_COMMAND)
    _typed(_count(data["seed_pairs"], 1), where, "seed_pairs must be a positive integer", CELL_COMMAND)
    _typed(_count(data["steps"], 0), where, "steps must be a non-negative integer", CELL_COMMAND)
    _typed(is_num(data.get("cpu_seconds")), where, "cpu_seconds must be a number", CELL_COMMAND)
    for arm, runs in curves.items():
        if not isinstance(runs, list) or not all(
            isinstance(c, list) and len(c) == len(steps) and all(is_num(v) for v in c) for c in runs
        ):
            raise UserError(f"{where}: curves.{arm} must be one curve of {len(steps)} numbers per seed pair")
    if len(curves["paired"]) != len(curves["independent"]) or len(curves["paired"]) != data["seed_pairs"]:
        raise UserError(f"{where}: the arms' curves are not seed_pairs pairs; rerun '{CELL_COMMAND}'")
    stats = cell_statistics(curves, steps, resamples)
    for key, value in stats.items():
        if not _close(data.get(key), value):
            raise UserError(f"{where}: {key} does not follow from the curves; rerun '{CELL_COMMAND}'")
    luck = luck_share_of(_tables(data["luck_share"], where), resamples)
    if not _close({k: data["luck_share"].get(k) for k in luck}, luck):
        raise UserError(f"{where}: luck_share does not follow from its tables; rerun '{CELL_COMMAND}'")
    _check_cell_summary(data, where, resamples, CELL_COMMAND)
    return RegimeMapCell(
        data["cell_id"],
        data["factors"],
        data["verdict"],
        data["auc_gap"],
        data["final_gap"],
        data["predictions"],
        data,
    )


def _tables(luck_share: Any, where: str) -> Any:
    """The cell's reward tables (tasks x schedules x samples of numbers), or one line."""
    import numpy as np

    tables = luck_share.get("tables") if isinstance(luck_share, dict) else None
    try:
        array = np.asarray(tables, dtype=float) if isinstance(tables, list) else None
    except (TypeError, ValueError):  # ragged, or not numbers
        array = None
    if array is None or array.ndim != 3 or array.size == 0 or not np.all(np.isfinite(array)):
        raise UserError(
            f"{where}: luck_share.tables must be a tasks x schedules x samples list of numbers; "
            f"rerun '{CELL_COMMAND}'"
        )
    return tables


def read_regime_map(path: str | Path, *, check_files: bool = True) -> RegimeMap:
    """R/map/regime_map.json: every cell's statistics and the summary recomputed; with ``check_files`` the
    cell files it names must be present with the SHA-256 it recorded."""
    data = _load(path, "regime map", MAP_COMMAND)
    return regime_map_of(data, str(path), Path(path).parent / "cells" if check_files else None)


def regime_map_of(data: dict[str, Any], where: str, cells_folder: Path | None) -> RegimeMap:
    """A regime map's JSON object checked as ``read_regime_map`` checks the file ``where`` (the cell files
    in ``cells_folder`` too, unless None): the map command checks what it is about to write."""
    from paired_rollouts.surrogate.regime_map import MAP_SCHEMA, summarize

    _need(data, ("schema", "grid", "cells", "summary", "files"), where, MAP_COMMAND)
    if data["schema"] != MAP_SCHEMA:
        raise UserError(f"{where}: schema {data['schema']!r}, expected {MAP_SCHEMA!r}; rerun '{MAP_COMMAND}'")
    cells = data["cells"]
    if not isinstance(cells, list) or not cells:
        raise UserError(f"{where}: cells must be a non-empty list; rerun '{MAP_COMMAND}'")
    resamples = _map_shape(data, where)
    ids = [c.get("cell_id") for c in cells]
    if len(set(ids)) != len(ids):
        raise UserError(f"{where}: a cell is listed twice; rerun '{MAP_COMMAND}'")
    for i, cell in enumerate(cells):
        _check_cell_summary(cell, f"{where}: cells[{i}]", resamples, MAP_COMMAND)
    expected = summarize(cells)
    if not _close(data["summary"], expected):
        wrong = [k for k in expected if not _close(data["summary"].get(k), expected[k])]
        raise UserError(
            f"{where}: summary {', '.join(wrong) or 'keys'} do not follow from its cells; rerun '{MAP_COMMAND}'"
        )
    if sorted(data["files"]) != sorted(ids):
        raise UserError(f"{where}: files must name one cell file per cell; rerun '{MAP_COMMAND}'")
    if cells_folder is not None:
        _check_files(cells_folder, data["files"])
        _check_cells(cells_folder, cells, where)
    return RegimeMap(data["grid"], cells, data["summary"], data["files"])


def _map_shape(data: dict[str, Any], where: str) -> int:
    """The map's grid.resamples (a positive integer), its cells objects with a cell_id, its summary and
    files objects; one line otherwise."""
    resamples = data["grid"].get("resamples") if isinstance(data["grid"], dict) else None
    if not _count(resamples, 1):
        raise UserError(f"{where}: grid.resamples must be a positive integer; rerun '{MAP_COMMAND}'")
    if not all(isinstance(c, dict) and isinstance(c.get("cell_id"), str) for c in data["cells"]):
        raise UserError(f"{where}: cells must be objects, each with its cell_id; rerun '{MAP_COMMAND}'")
    if not isinstance(data["summary"], dict) or not isinstance(data["files"], dict):
        raise UserError(f"{where}: summary and files must be objects; rerun '{MAP_COMMAND}'")
    return resamples


def _check_files(folder: Path, files: dict[str, str]) -> None:
    """Each cell file the map names, present with the SHA-256 it recorded."""
    from paired_rollouts.io import sha256_file

    for cell_id, digest in files.items():
        cell_path = folder / f"{cell_id}.json"
        if not cell_path.is_file() or sha256_file(cell_path) != digest:
            raise UserError(f"{cell_path}: missing or not the file the map read; rerun '{MAP_COMMAND}'")


def _check_cells(folder: Path, cells: list[dict[str, Any]], where: str) -> None:
    """Each cell the map quotes is its cell file's summary (the file read and recomputed from its curves
    and tables): a map whose copy of a cell was edited, however consistently, is refused."""
    from paired_rollouts.surrogate.regime_map import cell_summary

    for i, cell in enumerate(cells):
        read = read_regime_map_cell(folder / f"{cell['cell_id']}.json")
        if not _close(cell, cell_summary(read.body)):
            raise UserError(
                f"{where}: cells[{i}] ({cell['cell_id']}) is not its cell file's summary; rerun '{MAP_COMMAND}'"
            )
