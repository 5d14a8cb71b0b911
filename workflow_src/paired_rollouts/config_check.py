"""The workflow configuration checked against its schema, reported as one line a user can act on.

Snakemake's own `validate` prints a multi-line dump of the schema; this names the first offending key
(as a dotted path), the value, and what the schema allows (its description), so a bad path such as
``results/prereg/x canary`` is refused before any rule can hand it to a shell.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
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
                target = target.get(part) if isinstance(target, dict) else None
            node = target
        if isinstance(node, dict) and node.get("description"):
            found = node["description"]
        inside = key in node if isinstance(node, dict) else isinstance(key, int) and 0 <= key < len(node)
        if not isinstance(node, (dict, list)) or not inside:
            return found
        node = node[key]
    return found


def config_source(files: Iterable[str | Path], workflow_file: str = "config/config.yaml") -> str:
    """How a refusal names the configuration: the workflow's config/config.yaml, then each file merged over it
    (a profile's `configfile:`, `--configfile`), in order, the last one winning; paths under the working
    directory relative to it. Only config/config.yaml: just its name."""
    names = [workflow_file]
    here = Path.cwd().resolve()
    for file in files:
        path = Path(file).resolve()
        name = str(path.relative_to(here)) if path.is_relative_to(here) else str(path)
        if name not in names:
            names.append(name)
    return " + ".join(names)


def check_config(config: dict[str, Any], schema_path: str | Path, config_file: str) -> None:
    """Raise UserError naming ``config_file``, the key and the fix for the first schema violation."""
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
    raise UserError(f"{config_file}: {key}: {problem}; fix: {_allowed(error, schema)}")


def check_deployment(accelerator: str, methods: Iterable[Any]) -> None:
    """Refuse `--sdm conda` for mi300x: pip has no ROCm build of vLLM, so a conda environment could only run
    HF generation, which is not the paper's setup; the ROCm stack is the container of envs/rocm.Dockerfile."""
    if accelerator == "mi300x" and any(str(getattr(m, "name", m)).lower() == "conda" for m in methods):
        raise UserError(
            "accelerator mi300x has no conda environment (pip has no ROCm vLLM); run Snakemake inside the "
            "container of envs/rocm.Dockerfile without --sdm conda (envs/rocm.md)"
        )
