"""How a record's shape is written down once: predicates that name what they expect, and ``parse``, which
reads a JSON object into a frozen dataclass whose fields declare their JSON key and its check.

A register's dataclass is its schema: each field made with :func:`key` names the JSON key it is read
from, the predicate the value must pass and, for a nested block, how that block is read. ``parse``
refuses a missing key or a value of another type with one line naming the file, the key and the
command that rewrites the file, so a renamed key fails at the reader, never in a table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError

Check = Callable[[Any], bool]

# ---------------------------------------------------------------- predicates


def is_condition(v: Any) -> bool:
    return isinstance(v, str) and bool(design.CONDITION_NAME.match(v))


is_condition.__name__ = "condition name (C0, C2r, ...)"


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool)) and math.isfinite(v)


def is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def is_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def is_int_or_none(v: Any) -> bool:
    return v is None or is_int(v)


def is_sha256(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


TYPE_WORDS: dict[Check, str] = {
    is_int: "an integer",
    is_num: "a finite number",
    is_bool: "true or false",
    is_str: "a non-empty string",
    is_dict: "an object",
    is_int_or_none: "an integer or null",
    is_sha256: "a sha256 hex digest",
}


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The keys, sorted, whose values differ between two records (a key one lacks counts as None there):
    how a register is compared with its recomputation."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def word(check: Check) -> str:
    """What ``check`` expects, in the words an error line uses."""
    return TYPE_WORDS.get(check, getattr(check, "__name__", "valid"))


def list_of(check: Check) -> Check:
    def test(v: Any) -> bool:
        return isinstance(v, list) and all(check(x) for x in v)

    test.__name__ = f"list of {check.__name__.removeprefix('is_')}"
    return test


def one_of(*values: str) -> Check:
    def test(v: Any) -> bool:
        return v in values

    test.__name__ = "one of " + "/".join(values)
    return test


def nullable(check: Check) -> Check:
    def test(v: Any) -> bool:
        return v is None or check(v)

    test.__name__ = f"{word(check)} or null"
    return test


def map_of(check: Check) -> Check:
    def test(v: Any) -> bool:
        return isinstance(v, dict) and all(isinstance(k, str) and check(x) for k, x in v.items())

    test.__name__ = f"an object whose values are each {word(check)}"
    return test


def steps_of(check: Check) -> Check:
    def test(v: Any) -> bool:
        return isinstance(v, dict) and all(k.isdigit() and check(x) for k, x in v.items())

    test.__name__ = f"an object from step numbers to values that are each {word(check)}"
    return test


def pair_of(check: Check) -> Check:
    """A two-element list (an interval ``[low, high]``)."""

    def test(v: Any) -> bool:
        return isinstance(v, list) and len(v) == 2 and all(check(x) for x in v)

    test.__name__ = f"a pair [low, high] of {word(check)}"
    return test


# ---------------------------------------------------------------- where a value sits, and its errors


@dataclass(frozen=True)
class At:
    """The file, the kind of record, the command that rewrites it and the key path of a value: every
    error line of a reader is made here. ``dotted`` names a nested key by its full path
    (``H2a.auc_paired``); otherwise the path prefixes the line (``hypotheses.H2a: ... key 'power'``)."""

    path: str
    what: str
    fix: str = "regenerate the file"
    keys: tuple[str, ...] = ()
    dotted: bool = False

    @classmethod
    def of(cls, path: Any, what: str, command: str | None = None, dotted: bool = False) -> At:
        fix = f"regenerate it with '{command}'" if command else "regenerate the file"
        return cls(str(path), what, fix, (), dotted)

    def at(self, key: str) -> At:
        return replace(self, keys=(*self.keys, str(key)))

    def item(self, index: int) -> At:
        return replace(
            self, keys=(*self.keys[:-1], f"{self.keys[-1]}[{index}]") if self.keys else (f"[{index}]",)
        )

    @property
    def prefix(self) -> str:
        return ".".join(self.keys)

    @property
    def where(self) -> str:
        """The file, and in the prefix style the key path of the enclosing block."""
        return f"{self.path}: {self.prefix}" if self.keys and not self.dotted else self.path

    def name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.dotted and self.keys else key

    def error(self, text: str) -> UserError:
        """``text`` about the value here, with the file (and key path) in front and the fix behind."""
        return UserError(f"{self.where}: {text}; {self.fix}")

    def missing(self, key: str) -> UserError:
        return UserError(
            f"{self.where}: missing key '{self.name(key)}' in the {self.what} (docs/records.md section 0); "
            f"{self.fix}"
        )

    def wrong(self, key: str, value: Any, check: Check) -> UserError:
        return UserError(
            f"{self.where}: {self.what} key '{self.name(key)}' is {value!r}, expected {word(check)}; {self.fix}"
        )

    def not_object(self) -> UserError:
        if self.dotted and self.keys:
            return UserError(
                f"{self.path}: key '{self.prefix}' should be a JSON object ({self.what}); {self.fix}"
            )
        return UserError(f"{self.where}: a {self.what} must be a JSON object; {self.fix}")


# ---------------------------------------------------------------- validating plain records


def validate(
    record: Any,
    schema: dict[str, Check],
    where: str,
    what: str,
    optional: dict[str, Check] | None = None,
    fix: str = "regenerate the file",
) -> dict[str, Any]:
    """Check ``record`` against ``schema`` (key -> predicate) and return it as it is: the episode and
    training-group records, read by the million, stay plain objects."""
    at = At(where, what, fix)
    if not isinstance(record, dict):
        raise at.not_object()
    for key, check in schema.items():
        if key not in record:
            raise at.missing(key)
        if not check(record[key]):
            raise at.wrong(key, record[key], check)
    for key, check in (optional or {}).items():
        if key in record and not check(record[key]):
            raise at.wrong(key, record[key], check)
    return record


# ---------------------------------------------------------------- records as dataclasses

Read = Callable[[Any, At], Any]


def key(
    check: Check,
    *,
    name: str | None = None,
    read: Read | None = None,
    default: Any = MISSING,
    factory: Callable[[], Any] | None = None,
    when: str | None = None,
) -> Any:
    """A dataclass field read from the JSON key ``name`` (default: the field's name), checked by
    ``check`` and converted by ``read`` (a nested block). With ``default`` (or a ``factory`` of empty
    containers) the key may be absent; with ``when`` it is required where the record's boolean key
    ``when`` is true (``computed``, ``decided``) and None where it is false (a hypothesis that could not
    be computed has no numbers)."""
    metadata = {"check": check, "name": name, "read": read, "when": when}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(metadata=metadata) if default is MISSING else field(default=default, metadata=metadata)


@dataclass(frozen=True)
class _Key:
    attribute: str
    name: str
    check: Check
    read: Read | None
    default: Callable[[], Any] | None  # None: the key is required
    when: str | None


def _default(f: Any) -> Callable[[], Any] | None:
    if f.default is not MISSING:
        return lambda: f.default
    return None if f.default_factory is MISSING else f.default_factory


@cache
def _keys(cls: type) -> tuple[_Key, ...]:
    return tuple(
        _Key(
            f.name,
            f.metadata["name"] or f.name,
            f.metadata["check"],
            f.metadata["read"],
            _default(f),
            f.metadata["when"],
        )
        for f in fields(cls)
        if "check" in f.metadata
    )


def _absent(k: _Key, data: dict[str, Any], at: At) -> Any:
    """The value of a key the record does not have: None in a block that was not computed (or decided),
    the field's default, else the one error line naming the key."""
    if k.when is not None and data.get(k.when) is False:
        return None
    if k.default is None:
        raise at.missing(k.name)
    return k.default()


def _present(k: _Key, value: Any, at: At) -> Any:
    if not k.check(value):
        raise at.wrong(k.name, value, k.check)
    return k.read(value, at.at(k.name)) if k.read is not None and value is not None else value


def parse(cls: type, data: Any, at: At) -> Any:
    """``data`` read into ``cls``: each :func:`key` field from its JSON key, checked, nested blocks read
    by their own ``read``; a ``path`` field gets the file, a ``raw`` field the object as written. A class
    may complete the values from several keys (``_resolve(values, at)``) and check rules across keys
    (``_check(at)``)."""
    if not isinstance(data, dict):
        raise at.not_object()
    values = {
        k.attribute: _present(k, data[k.name], at) if k.name in data else _absent(k, data, at)
        for k in _keys(cls)
    }
    given = {f.name for f in fields(cls) if "check" not in f.metadata}
    if "path" in given:
        values["path"] = at.path
    if "raw" in given:
        values["raw"] = data
    if hasattr(cls, "_resolve"):
        values = cls._resolve(values, at)
    record = cls(**values)
    if hasattr(record, "_check"):
        record._check(at)
    return record


def one(cls: type) -> Read:
    """Read a nested object as ``cls``."""
    return lambda value, at: parse(cls, value, at)


def each(cls: type) -> Read:
    """Read a list of objects, each as ``cls`` (errors name ``key[i]``)."""
    return lambda value, at: [parse(cls, item, at.item(i)) for i, item in enumerate(value)]


def by_name(cls: type) -> Read:
    """Read an object of objects, each value as ``cls`` (errors name ``key.NAME``)."""
    return lambda value, at: {name: parse(cls, item, at.at(name)) for name, item in value.items()}


def by_name_or_null(cls: type) -> Read:
    """Read an object of objects or nulls, each object as ``cls`` (errors name ``key.NAME``)."""
    return lambda value, at: {
        name: None if item is None else parse(cls, item, at.at(name)) for name, item in value.items()
    }


def by_step(value: dict[str, Any], at: At) -> dict[int, Any]:
    """An object keyed by step numbers, with integer keys."""
    return {int(step): item for step, item in value.items()}


def curves_by_step(value: dict[str, dict[str, Any]], at: At) -> dict[str, dict[int, Any]]:
    """``{regime: {step: value}}`` with integer steps."""
    return {regime: by_step(curve, at) for regime, curve in value.items()}


def read_register(cls: type, path: Any, what: str, command: str | None = None, dotted: bool = False) -> Any:
    """The JSON file at ``path`` read into ``cls`` (the reader of one register). A missing, empty or
    malformed file is one line naming it and the command that rewrites it, like a wrong key."""
    from pathlib import Path

    from paired_rollouts.io import parse_json_file

    at = At.of(path, what, command, dotted)
    source = Path(path)
    if source.is_dir():
        raise UserError(f"{source}: is a folder; give the file itself")
    if not source.is_file():
        raise UserError(f"{source}: {what} not found; check the path, or {at.fix}")
    return parse(cls, parse_json_file(source, f"; {at.fix}"), at)
