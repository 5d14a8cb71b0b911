"""The published numbers (data/published/paper.yaml): a strict schema and its loader.

Strict because a typo in a key or an op would otherwise show up as "cannot be computed" and hide a
number the paper reports; every field is checked and an unknown field is an error naming the entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from paired_rollouts.errors import UserError
from paired_rollouts.io import yaml_problem
from paired_rollouts.records.schema import (
    At,
    by_name,
    is_condition,
    is_dict,
    is_int,
    is_num,
    is_str,
    key,
    list_of,
    map_of,
    parse,
)

# op -> (how many keys, whether each key is a [numerator, denominator] pair, kind of published value)
OPS: dict[str, tuple[str, bool, str]] = {
    "value": ("one", False, "scalar"),
    "difference": ("two", False, "scalar"),  # keys[0] - keys[1]
    "ratio": ("two", False, "scalar"),  # keys[0] / keys[1]
    "one_minus": ("one", False, "scalar"),  # 1 - keys[0]
    "one_minus_ratio": ("two", False, "scalar"),  # 1 - keys[0] / keys[1]
    "difference_times": ("two", False, "scalar"),  # (keys[0] - keys[1]) * q(1-q), q = 0.1 (the bandit's gap)
    "mean": ("many", False, "scalar"),
    "min_above": ("many", False, "scalar"),  # published: every value lies above it
    "max_abs_at_most": (
        "many",
        False,
        "scalar",
    ),  # published: an order of magnitude; every |value| <= 100x it
    "count_below_one": ("many", False, "scalar"),
    "range": ("many", False, "range"),  # published [lo, hi] = min and max over the keys
    "range_one_minus": ("many", False, "range"),
    "range_ratio": ("many", True, "range"),
}
UNITS = {"fraction", "percent", "percent points", "count", "ratio", "calls", "sha256", "verdict", "magnitude"}
FIELDS = {"id", "where", "printed", "value", "rounding", "unit", "scale", "op", "keys", "note"}
REQUIRED = {"id", "where", "printed", "value", "rounding", "unit", "op", "keys"}
TOP = {"schema", "study", "about", "budget", "entries"}
KEY_RE = re.compile(r"^(?P<file>[A-Za-z0-9_./-]+\.json):(?P<path>[A-Za-z0-9_.-]+)$")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


@dataclass(frozen=True)
class Entry:
    """One published number and how to reproduce it."""

    id: str
    where: str
    printed: str
    value: Any
    rounding: float | None
    unit: str
    op: str
    keys: tuple[Any, ...]
    scale: float = 1.0
    note: str | None = None

    @property
    def kind(self) -> str:
        return OPS[self.op][2]


@dataclass(frozen=True)
class Published:
    study: str
    budget: dict[str, Any]
    entries: tuple[Entry, ...]
    source: str


def split_key(key: str) -> tuple[str, list[str]]:
    """'decisions/c2.json:H2a.auc_paired.0' -> ('decisions/c2.json', ['H2a', 'auc_paired', '0'])."""
    m = KEY_RE.match(key)
    if not m:
        raise ValueError(f"register key {key!r} is not FILE.json:DOTTED.PATH")
    return m["file"], m["path"].split(".")


def _check_fields(raw: dict[str, Any], name: str) -> None:
    """The entry's fields: exactly the known ones, an id, non-empty prose, a known op and unit."""
    unknown = set(raw) - FIELDS
    missing = REQUIRED - set(raw)
    if unknown or missing:
        raise UserError(
            f"{name}: unknown fields {sorted(unknown)} / missing fields {sorted(missing)}; "
            f"fields are {sorted(FIELDS)}"
        )
    if not isinstance(raw["id"], str) or not ID_RE.match(raw["id"]):
        raise UserError(f"{name}: id must be lower-case letters, digits, '.', '_' or '-'")
    for field in ("where", "printed"):
        if not isinstance(raw[field], str) or not raw[field].strip():
            raise UserError(f"{name}: {field!r} must be a non-empty string")
    if raw["op"] not in OPS:
        raise UserError(f"{name}: op {raw['op']!r} is not one of {sorted(OPS)}")
    if raw["unit"] not in UNITS:
        raise UserError(f"{name}: unit {raw['unit']!r} is not one of {sorted(UNITS)}")


def _check_keys(keys: Any, op: str, name: str) -> None:
    """As many register keys as the op takes (pairs for a ratio of ranges), each FILE.json:DOTTED.PATH."""
    arity, pairs, _ = OPS[op]
    if not isinstance(keys, list) or not keys:
        raise UserError(f"{name}: keys must be a non-empty list")
    want = {"one": 1, "two": 2}.get(arity)
    if want is not None and len(keys) != want:
        raise UserError(f"{name}: op {op} takes {want} key(s), got {len(keys)}")
    flat = [k for pair in keys for k in pair] if pairs else keys
    if pairs and not all(isinstance(p, list) and len(p) == 2 for p in keys):
        raise UserError(f"{name}: op {op} takes [numerator, denominator] pairs of keys")
    for k in flat:
        try:
            split_key(k) if isinstance(k, str) else split_key(repr(k))
        except ValueError as exc:
            raise UserError(f"{name}: {exc}") from None


def _check_number(value: Any, rounding: Any, kind: str, name: str) -> None:
    """A published number (or [low, high]) and the unit of its last printed digit."""
    if not isinstance(rounding, (int, float)) or isinstance(rounding, bool) or rounding <= 0:
        raise UserError(f"{name}: rounding must be a positive number (the unit of the last printed digit)")
    numbers = value if kind == "range" else [value]
    if kind == "range" and not (isinstance(value, list) and len(value) == 2 and value[0] <= value[1]):
        raise UserError(f"{name}: a range value is [low, high]")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
        raise UserError(f"{name}: value must be numeric")


def _check_value(raw: dict[str, Any], name: str) -> None:
    """The published value in its unit: a sha256, a verdict, an order of magnitude or a rounded number."""
    value, rounding, unit, op = raw["value"], raw["rounding"], raw["unit"], raw["op"]
    if unit == "sha256":
        if not (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value)) or rounding is not None:
            raise UserError(f"{name}: a sha256 value is 64 hex digits with rounding null")
    elif unit == "verdict":
        if not isinstance(value, bool) or rounding is not None:
            raise UserError(f"{name}: a verdict is true/false with rounding null")
    elif op == "max_abs_at_most":
        if not isinstance(value, (int, float)) or rounding is not None:
            raise UserError(f"{name}: an order of magnitude is a number with rounding null")
    else:
        _check_number(value, rounding, OPS[op][2], name)


def _entry(raw: Any, where: str) -> Entry:
    if not isinstance(raw, dict):
        raise UserError(f"{where}: an entry must be a mapping")
    name = f"{where} (id {raw.get('id')!r})"
    _check_fields(raw, name)
    _check_keys(raw["keys"], raw["op"], name)
    _check_value(raw, name)
    scale = raw.get("scale", 1)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or scale == 0:
        raise UserError(f"{name}: scale must be a non-zero number")
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise UserError(f"{name}: note must be a string")
    return Entry(
        id=raw["id"],
        where=raw["where"],
        printed=raw["printed"],
        value=raw["value"],
        rounding=raw["rounding"],
        unit=raw["unit"],
        op=raw["op"],
        keys=tuple(tuple(k) if isinstance(k, list) else k for k in raw["keys"]),
        scale=float(scale),
        note=note,
    )


# The published files as transcribed from the paper and its blog post, pinned: a number rewritten to agree
# with a run is refused at the door (docs/compare.md). A deliberate correction changes the pin here, in
# the same reviewed commit.
PINNED_SHA256 = {
    "paper.yaml": "13fea45de7743c7b10c9ed855da1ddf0c75cf4f077877a5ac2257dec2d0a67e7",
    "curves.yaml": "2c82bc38fb43d6cbae2571a10e8599d65d4c234ce06f373a9231ca9b2a8dd5a2",
}


def require_pinned(path: str | Path) -> str:
    """The sha256 of a published file (data/published/NAME), refused unless it is NAME's pinned one."""
    from paired_rollouts.io import sha256_file

    path = Path(path)
    if path.name not in PINNED_SHA256:
        raise UserError(f"{path}: not a published file ({', '.join(PINNED_SHA256)} under data/published/)")
    if not path.is_file():
        raise UserError(f"{path}: published file not found (data/published/{path.name})")
    digest, pinned = sha256_file(path), PINNED_SHA256[path.name]
    if digest != pinned:
        raise UserError(
            f"{path}: sha256 {digest} is not the pinned transcription of the paper ({pinned}, "
            "compare/published.py PINNED_SHA256); restore the file (git checkout)"
        )
    return digest


def load_published(path: str | Path) -> Published:
    """Read and validate the published file; any defect is one UserError naming the file and the entry."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: published-numbers file not found (data/published/paper.yaml)") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({yaml_problem(exc)}); fix the file") from None
    if not isinstance(raw, dict) or set(raw) != TOP:
        got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise UserError(f"{path}: top-level keys must be exactly {sorted(TOP)}, got {got}")
    if raw["schema"] != 1:
        raise UserError(f"{path}: schema {raw['schema']!r} is not supported (1)")
    budget = raw["budget"]
    if not isinstance(budget, dict) or not {
        "episodes_per_run",
        "gpu_hours_per_run",
        "accelerator",
        "where",
    } <= set(budget):
        raise UserError(f"{path}: budget needs episodes_per_run, gpu_hours_per_run, accelerator, where")
    if not isinstance(raw["entries"], list) or not raw["entries"]:
        raise UserError(f"{path}: entries must be a non-empty list")
    entries = [_entry(e, f"{path}: entry {i}") for i, e in enumerate(raw["entries"])]
    seen: set[str] = set()
    for e in entries:
        if e.id in seen:
            raise UserError(f"{path}: id {e.id!r} appears twice")
        seen.add(e.id)
    return Published(study=str(raw["study"]), budget=dict(budget), entries=tuple(entries), source=str(path))


# ---------------------------------------------------------------- the published learning curves

CURVE_ARMS = ("paired", "independent", "clean")


@dataclass(frozen=True, kw_only=True)
class CurvePanel:
    """One published curve panel: a condition's validation set, true success in % per step and arm."""

    title: str = key(is_str)
    condition: str = key(is_condition)
    regime: str = key(is_str)
    paired: list[float] = key(list_of(is_num))
    independent: list[float] = key(list_of(is_num))
    clean: list[float] = key(list_of(is_num))

    def arm(self, name: str) -> list[float]:
        return getattr(self, name)


@dataclass(frozen=True, kw_only=True)
class PublishedCurves:
    """data/published/curves.yaml: the paper's learning curves (the blog post's tables)."""

    path: str
    steps: list[int] = key(list_of(is_int))
    panels: dict[str, CurvePanel] = key(map_of(is_dict), read=by_name(CurvePanel))

    def _check(self, at: At) -> None:
        for name, panel in self.panels.items():
            for arm in CURVE_ARMS:
                if len(panel.arm(arm)) != len(self.steps):
                    raise at.error(
                        f"panel {name}: {arm} has {len(panel.arm(arm))} points, steps {len(self.steps)}"
                    )


def load_published_curves(path: str | Path) -> PublishedCurves:
    """Read and check the published curves file (pinned: ``require_pinned``); a defect is one UserError
    naming the file and the key."""
    require_pinned(path)
    at = At(str(path), "published-curves file", "see data/published/curves.yaml")
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise at.error(f"not a published-curves file ({yaml_problem(exc)})") from None
    except OSError as exc:
        raise at.error(f"not a published-curves file ({exc})") from None
    return parse(PublishedCurves, raw, at)
