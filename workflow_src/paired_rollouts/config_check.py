"""The workflow configuration checked against its schema, reported as one line a user can act on.

Snakemake's own `validate` prints a multi-line dump of the schema; this names the first offending key
(as a dotted path), the value, and what the schema allows (its description), so a bad path such as
``results/prereg/x canary`` is refused before any rule can hand it to a shell.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from paired_rollouts.errors import UserError


def _allowed(error: jsonschema.ValidationError, root: dict[str, Any]) -> str:
    """The schema's own description of the key (or of the definition it refers to); for a key the schema
    does not describe itself (an item of a list), the description of the nearest key around it."""
    for schema in (error.schema, *(e.schema for e in error.context or ())):
        if isinstance(schema, dict) and schema.get("description"):
            return schema["description"]
    return _enclosing_description(root, list(error.absolute_schema_path)) or error.message


def _enclosing_description(root: dict[str, Any], path: list[Any]) -> str | None:
    """The last description met walking ``path`` down from ``root``, following local ``$ref`` where the
    path goes on inside the definition (the validator's schema paths step through references)."""
    node: Any = root
    found = None
    for key in path:
        while isinstance(node, dict) and key not in node and str(node.get("$ref", "")).startswith("#/"):
            target: Any = root
            for part in node["$ref"][2:].split("/"):
                target = _child(target, part)
            node = target
        if isinstance(node, dict) and node.get("description"):
            found = node["description"]
        node = _child(node, key)
        if node is _ABSENT:
            return found
    return found


def config_files(files: Iterable[str | Path], workflow_file: str = "config/config.yaml") -> list[str]:
    """The files merged into the config, as refusals name them: the workflow's config/config.yaml, then
    each file merged over it (a profile's `configfile:`, `--configfile`) in order, the last one winning;
    paths under the working directory relative to it, each once."""
    names = [workflow_file]
    here = Path.cwd().resolve()
    for file in files:
        path = Path(file).resolve()
        name = str(path.relative_to(here)) if path.is_relative_to(here) else str(path)
        if name not in names:
            names.append(name)
    return names


def file_that_sets(path: Sequence[Any], value: Any, files: Sequence[str]) -> str | None:
    """Of the config files merged in order (``config_files``), the last that writes ``value`` at the key
    ``path`` (the one Snakemake kept), or None (a ``--config KEY=VALUE`` set it, say)."""
    import yaml

    found = None
    for name in files:
        try:
            node: Any = yaml.safe_load(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        for part in path:
            node = _child(node, part)
            if node is _ABSENT:
                break
        else:
            if node == value:
                found = name
    return found


_ABSENT = object()


def _child(node: Any, key: Any) -> Any:
    """``node[key]`` for a mapping's key or a list's index, else _ABSENT (a walk along a key path)."""
    if isinstance(node, dict):
        return node.get(key, _ABSENT)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return _ABSENT


def check_config(config: dict[str, Any], schema_path: str | Path, config_file: str | Sequence[str]) -> None:
    """Raise UserError naming the config file, the key and the fix for the first schema violation.
    ``config_file`` is one name, or the files merged (``config_files``): then the line names the one that
    set the offending key ("a + b" of all of them when none did, e.g. a ``--config KEY=VALUE``)."""
    schema = json.loads(Path(schema_path).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(
        validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path)))
    )
    if not errors:
        return
    error = errors[0]
    key = ".".join(str(part) for part in error.absolute_path) or "(top level)"
    if error.validator == "pattern" or error.validator == "$ref":
        problem = f"{error.instance!r} is not allowed"
    else:
        problem = error.message
    files = [config_file] if isinstance(config_file, str) else list(config_file)
    path, value = list(error.absolute_path), error.instance
    if error.validator == "additionalProperties" and isinstance(value, dict):
        # the file that added the unknown key (the merged block as a whole is in none of them)
        extra = sorted(str(k) for k in set(value) - set(error.schema.get("properties") or {}))
        if extra:
            path, value = [*path, extra[0]], value[extra[0]]
    named = file_that_sets(path, value, files) if len(files) > 1 else None
    raise UserError(f"{named or ' + '.join(files)}: {key}: {problem}; fix: {_fix(error, schema)}")


def _fix(error: jsonschema.ValidationError, root: dict[str, Any]) -> str:
    """What to change: an unknown key is removed (the keys allowed there are listed); otherwise the schema's
    description of the key, or, where it has none, the type or the schema to look the values up in."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties") or {})
        extra = sorted(str(k) for k in set(error.instance) - set(known))
        allowed = f" (the keys allowed here: {', '.join(known)})" if known else ""
        return f"remove or correct {', '.join(map(repr, extra))}{allowed}"
    allowed = _allowed(error, root)
    if allowed != error.message:
        return allowed
    if error.validator == "type":
        return f"give it a value of type {error.validator_value} (config/schema.json)"
    return "give it a value that config/schema.json allows"


def check_deployment(accelerator: str, methods: Iterable[Any]) -> None:
    """Refuse `--sdm conda` for mi300x: pip has no ROCm build of vLLM, so a conda environment could only run
    HF generation, which is not the paper's setup; the ROCm stack is the container of envs/rocm.Dockerfile."""
    if accelerator == "mi300x" and any(str(getattr(m, "name", m)).lower() == "conda" for m in methods):
        raise UserError(
            "accelerator mi300x has no conda environment (pip has no ROCm vLLM); run Snakemake inside the "
            "container of envs/rocm.Dockerfile without --sdm conda (envs/rocm.md)"
        )
