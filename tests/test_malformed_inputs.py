"""Malformed inputs are one line naming the file, never a traceback: a small fuzz over the keys of a pool
MANIFEST.json, a freeze record, a zero-shot calibration register and a regime-map cell (each key deleted,
or set to null, "x", [] and {}). Every variant is either accepted or refused with a UserError of one line
that names the file; any other exception fails the test."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from workflow_runs import REPO

DELETE = object()
VALUES = (DELETE, None, "x", [], {})


def _variants(data: dict[str, Any], *paths: tuple) -> list[tuple[str, Any]]:
    """``data`` with each key under each of ``paths`` (a tuple of keys/indices; () is the top) deleted or
    replaced by each of VALUES: (label, edited copy)."""
    out = []
    for path in paths:
        block = data
        for step in path:
            block = block[step]
        for name in list(block):
            for value in VALUES:
                edited = copy.deepcopy(data)
                target = edited
                for step in path:
                    target = target[step]
                if value is DELETE:
                    del target[name]
                else:
                    target[name] = value
                label = ".".join(map(str, (*path, name))) + (
                    "=<deleted>" if value is DELETE else f"={value!r}"
                )
                out.append((label, edited))
    return out


def _one_line(exc: UserError, path: Path, label: str) -> None:
    text = str(exc)
    assert "\n" not in text and str(path) in text, (label, text)


def _cli_refusal(capsys, path: Path, label: str, rc: int) -> None:
    """The command exited 0, or 1 with an error naming the file (main lets any other exception through)."""
    err = capsys.readouterr().err
    assert rc in (0, 1), (label, rc, err)
    assert "Traceback" not in err, (label, err)
    if rc == 1:
        assert str(path) in err, (label, err)


# ---------------------------------------------------------------- pool manifest


def test_a_malformed_pool_manifest_is_one_line(tmp_path: Path, capsys) -> None:
    """Base: pools.test.path null/[]/{} was a TypeError in Path(...), pools "x" an AttributeError, in
    every command that loads a pool; `compare` read the same manifest through its typed reader."""
    from paired_rollouts.backoffice.pools import load_pool

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for source in (REPO / "data/tasks").iterdir():
        shutil.copy(source, tasks / source.name)
    manifest_path = tasks / "MANIFEST.json"
    manifest = json.loads(manifest_path.read_text())
    for label, edited in [("as written", manifest), *_variants(manifest, (), ("pools",), ("pools", "test"))]:
        manifest_path.write_text(json.dumps(edited))
        try:
            load_pool(tasks / "test.jsonl")
        except UserError as exc:
            _one_line(exc, tasks, label)
    for value in (None, "x"):  # the command the audit ran
        edited = copy.deepcopy(manifest)
        edited["pools"]["test"]["path"] = value
        manifest_path.write_text(json.dumps(edited))
        argv = ["reference", "--tasks-dir", str(tasks), "--out", str(tmp_path / "r.json"), "--limit", "1"]
        rc = main(argv)
        _cli_refusal(capsys, tasks, f"path={value!r}", rc)
        assert rc == 1 and not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- freeze record


@pytest.fixture(scope="module")
def freeze_root(tmp_path_factory) -> Path:
    """A freeze of the tier-1 documents made through the real CLI against the local test authorities."""
    from paired_rollouts.prereg.local_tsa import _openssl_available
    from prereg_workspaces import BASE, FREEZE, copy_documents

    if not _openssl_available():
        pytest.skip("openssl CLI not installed")
    root = tmp_path_factory.mktemp("freeze")
    copy_documents(root, BASE)
    assert (
        main(
            ["prereg", "freeze-local", "--out", str(root / FREEZE), "--root", str(root), "--documents", *BASE]
        )
        == 0
    )
    return root


def test_a_malformed_freeze_record_is_one_line(freeze_root: Path, capsys) -> None:
    """Base: freeze.json of [], null or "x" was an AttributeError (base.get), documents[0].path of
    null/[]/{} a TypeError in `prereg verify`; now one line naming freeze.json, no report written."""
    from prereg_workspaces import FREEZE, verify

    record_path = freeze_root / FREEZE / "freeze.json"
    record = json.loads(record_path.read_text())
    out = freeze_root / "ver.json"
    variants = [(f"record={v!r}", v) for v in ([], None, "x")]
    variants += _variants(record, ("documents", 0))
    variants += [(label, edited) for label, edited in _variants(record, ()) if label.split("=")[0] in TOP]
    try:
        for label, edited in variants:
            record_path.write_text(json.dumps(edited))
            rc = verify(freeze_root, out, "--amendments", "0")
            _cli_refusal(capsys, freeze_root / FREEZE, label, rc)
            if rc == 1:
                assert not out.exists(), label
    finally:
        record_path.write_text(json.dumps(record))
    assert verify(freeze_root, out, "--amendments", "0") == 0


#: the freeze record's keys read outside the per-record verification (the rest are fuzzed there)
TOP = (
    "documents",
    "amendment",
    "format",
    "kind",
    "imprint",
    "tokens",
    "manifest",
    "request",
    "test_authority",
)


# ---------------------------------------------------------------- zero-shot calibration register


def test_a_malformed_zero_shot_register_is_one_line(tmp_path: Path, capsys) -> None:
    """Base: bands[0].interval "x" was a ValueError and bands[0].target {} a KeyError in `calibrate check`;
    the reader now types the bands' nested fields before the gate recomputes them."""
    from paired_rollouts.calibration.zero_shot import build_register
    from paired_rollouts.prereg.rules import load_tier_rules

    calibration = load_tier_rules(REPO / "prereg/tier_rules.yaml")["calibration"]
    luck = {
        "lam": 0.33,
        "ci95": [0.2, 0.5],
        "tasks": 16,
        "tasks_defined": 16,
        "K": 8,
        "M": 8,
        "defects": [],
        "episodes": 1024,
    }
    rules = {"path": "prereg/tier_rules.yaml", "sha256": "x", "verification": "v.json"}
    register = build_register(
        calibration,
        "Qwen/Qwen3.5-2B",
        {"successes": 52, "episodes": 64, "tasks": 64},
        luck,
        rules=rules,
        evidence={},
    )
    path = tmp_path / "zero_shot.json"
    for label, edited in [("as written", register), *_variants(register, (), ("bands", 0), ("bands", 1))]:
        path.write_text(json.dumps(edited))
        rc = main(["calibrate", "check", str(path)])
        _cli_refusal(capsys, path, label, rc)


# ---------------------------------------------------------------- regime-map cell


def test_a_malformed_regime_map_cell_is_one_line(tmp_path: Path) -> None:
    """Base: a cell whose resamples was null/"x"/[]/{}, whose luck_share.tables was deleted, "x" or {},
    or whose steps was deleted was a traceback in `surrogate map`; the cell's fields are typed first."""
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.surrogate import regime_map as rm
    from paired_rollouts.surrogate.run import load_calibration
    from test_regime_map import CALIBRATION, _cell_settings, _grid

    grid = _grid().regime_map
    cells = rm.map_cells(grid)
    folder = tmp_path / "cells"
    records = {}
    for cell in cells:
        records[cell.id] = rm.measure_cell(
            cell,
            theta0=load_calibration(CALIBRATION),
            tasks_dir=str(REPO / "data/tasks"),
            settings=_cell_settings(),
        )
        atomic_write_json(folder / f"{cell.id}.json", records[cell.id])
    paths = sorted(folder.glob("*.json"))
    target = paths[0]
    cell = json.loads(target.read_text())
    for label, edited in [
        ("as written", cell),
        *_variants(cell, (), ("luck_share",), ("gradient_variance",)),
    ]:
        target.write_text(json.dumps(edited))
        try:
            rm.assemble(paths, grid, "tiny surrogate")
        except UserError as exc:
            assert "\n" not in str(exc) and (str(target) in str(exc) or "regime map:" in str(exc)), (
                label,
                exc,
            )
