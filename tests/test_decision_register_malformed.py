"""A malformed tier-1 decision register is one line naming the file, never a traceback: every nested key
path of a real C2 and C4 register (as ``decide`` writes them), up to depth 4, deleted or set to null,
"x", [] and {}, is read or refused with a UserError."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from paired_rollouts import records
from paired_rollouts.errors import UserError

DEPTH = 4
BAD = ("x", None, [], {})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from records_fixtures import synthetic_study

    root = tmp_path_factory.mktemp("malformed")
    synthetic_study(root)
    return root


def _paths(value: Any, above: tuple = ()) -> Iterator[tuple]:
    """Every key path into ``value`` up to DEPTH keys (a list's first item stands for its items)."""
    if len(above) >= DEPTH:
        return
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list) and value:
        items = [(0, value[0])]
    else:
        return
    for k, v in items:
        yield (*above, k)
        yield from _paths(v, (*above, k))


def _mutants(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in _paths(data):
        for bad in ("delete", *BAD):
            edited = copy.deepcopy(data)
            parent = edited
            for k in path[:-1]:
                parent = parent[k]
            if bad == "delete":
                if not isinstance(parent, dict):
                    continue
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(bad)
            yield f"{'.'.join(map(str, path))}={bad if bad == 'delete' else json.dumps(bad)}", edited


def _read(path: Path) -> str | None:
    """None when the register reads, else the one line it is refused with (which names the file)."""
    try:
        records.read_decision_register(path)
    except UserError as err:
        text = str(err)
        assert text.startswith(f"{path}: ") and "\n" not in text, text
        return text
    return None


@pytest.mark.parametrize("condition", ["c2", "c4"])
def test_every_malformed_nested_key_is_one_line(study, condition):
    register = study / "results" / "decisions" / f"{condition}.json"
    data = json.loads(register.read_text())
    path = study / "results" / "decisions" / f"malformed-{condition}.json"
    crashed, refused = [], 0
    with contextlib.chdir(study):  # the rules and the luck files are here: the full recomputation runs
        assert _read(register) is None
        for label, edited in _mutants(data):
            path.write_text(json.dumps(edited))
            try:
                refused += _read(path) is not None
            except Exception as err:  # noqa: BLE001 -- what the reader must never let through
                crashed.append(f"{label}: {type(err).__name__}: {err}")
    assert not crashed, "\n".join(crashed[:20])
    assert refused > 100
