"""A settings key declared once, as a dataclass field (:mod:`paired_rollouts.settings`): its default, its
help, its JSON-schema keywords and the name run manifests record it under. From that one declaration come
the parsing and checks of a section, its ``--help`` lines and its part of config/schema.json."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, ClassVar

from paired_rollouts.errors import UserError

# A field's annotation -> (the Python type its value must have, its JSON-schema type).
KINDS: dict[str, tuple[type, str]] = {
    "int": (int, "integer"),
    "float": (float, "number"),
    "bool": (bool, "boolean"),
    "str": (str, "string"),
    "list": (list, "array"),
    "dict": (dict, "object"),
}
# JSON-schema bounds the dataclasses check too (the config's schema applies them to the config file).
BOUNDS = {
    "minimum": (operator.ge, "at least"),
    "exclusiveMinimum": (operator.gt, "more than"),
    "maximum": (operator.le, "at most"),
    "exclusiveMaximum": (operator.lt, "less than"),
}


def setting(default: Any, help: str, manifest: str | None = None, **schema: Any) -> Any:
    """A settings field: its default, its help (``--help``, schema description), the name manifests
    record it under, and its JSON-schema keywords beyond its type (enum, bounds, items, ``$ref``)."""
    metadata = {"help": help, "schema": schema, **({"manifest": manifest} if manifest else {})}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def default_of(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return f.default


class Section:
    """A section of a scale block. Parsing refuses unknown keys and values of the wrong type, naming the
    key; after construction every value is checked against its schema keywords (enum, bounds)."""

    section: ClassVar[str] = ""

    @classmethod
    def parse(cls, raw: dict[str, Any] | None, source: str) -> Any:
        raw = dict(raw or {})
        where = f"{source}: {cls.section}" if cls.section else source
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(raw) - names)
        if unknown:
            raise UserError(
                f"{where}: unknown key(s) {', '.join(unknown)}; the keys are listed by "
                "'paired-rollouts train --help'"
            )
        values = {
            f.name: typed(raw[f.name], f, f"{where}.{f.name}" if cls.section else f"{where}: {f.name}")
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.name in raw
        }
        try:
            return cls(**values)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            check_schema(f.name, getattr(self, f.name), f.metadata["schema"])

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            raise UserError(message)


def typed(value: Any, f: dataclasses.Field, where: str) -> Any:
    """The value as the field's type (an int for a float field becomes a float); else one clear error."""
    kind = KINDS.get(str(f.type), (None, ""))[0]
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where} must be a number, got {value!r}")
        return float(value)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise UserError(f"{where} must be int, got {value!r}")
    if kind in (str, bool, list, dict) and not isinstance(value, kind):
        raise UserError(f"{where} must be {kind.__name__}, got {value!r}")
    if kind is None and value is not None and not isinstance(value, str):
        raise UserError(f"{where} must be a string, got {value!r}")
    return value


def check_schema(name: str, value: Any, schema: dict[str, Any]) -> None:
    """The checks the schema's keywords state (enum, bounds; for lists: the items' type and bounds,
    uniqueness), so a command given settings outside the config is held to the config's rules."""
    if "enum" in schema and value not in schema["enum"]:
        raise UserError(f"{name} must be one of {', '.join(map(str, schema['enum']))}, got {value!r}")
    for key, (holds, words) in BOUNDS.items():
        if key in schema and value is not None and not holds(value, schema[key]):
            raise UserError(f"{name} must be {words} {schema[key]}, got {value!r}")
    if isinstance(value, list):
        items = schema.get("items", {})
        for item in value:
            if items.get("type") == "integer" and (isinstance(item, bool) or not isinstance(item, int)):
                raise UserError(f"{name} must be a list of integers, got {value!r}")
            check_schema(f"{name} item", item, {k: v for k, v in items.items() if k in BOUNDS})
        if schema.get("uniqueItems") and len(set(value)) != len(value):
            raise UserError(f"{name} lists a value twice: {value!r}")


# ---------------------------------------------------------------- help and the config's schema -------


def help_lines(name: str, section: type) -> list[str]:
    """A section's ``--help`` lines: its docstring, then each key with its help and default."""
    lines = [f"  {name}: {section.__doc__.strip()}"]  # type: ignore[union-attr]
    for f in dataclasses.fields(section):
        lines.append(f"    {f.name}: {f.metadata['help']} [{default_of(f)!r}]")
    return lines


def property_schema(f: dataclasses.Field) -> dict[str, Any]:
    """One key's JSON schema: description = help, default = default, type from the annotation."""
    schema = f.metadata["schema"]
    out: dict[str, Any] = {"description": f.metadata["help"]}
    if default_of(f) is not None:
        out["default"] = default_of(f)
    if not {"enum", "$ref"} & set(schema):
        out["type"] = KINDS[str(f.type)][1]
    return {**out, **schema}


def section_schema(section: type) -> dict[str, Any]:
    """A section's JSON schema: an object of exactly its keys, described by its docstring."""
    return {
        "description": " ".join(section.__doc__.split()),  # type: ignore[union-attr]
        "type": "object",
        "additionalProperties": False,
        "properties": {f.name: property_schema(f) for f in dataclasses.fields(section)},
    }
