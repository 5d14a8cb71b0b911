"""The learning commands' view of their settings (train, evaluate, diagnose, probe, warm start).

The settings are written once, in config/config.yaml, and parsed by :mod:`paired_rollouts.settings`
(frozen dataclasses with help, defaults and checks). The learning code reads them as one flat key
space, the names the run manifests record (``eval_tasks``, ``diag_pool``, ``probe_clean_tasks``, ...).
"""

from __future__ import annotations

from typing import Any

from paired_rollouts.settings import SECTIONS, Settings, help_text


def resolve(raw: dict[str, Any] | None, source: str = "--settings") -> dict[str, Any]:
    """Every key, validated: the given sections' values, the defaults of the embedded scale elsewhere."""
    return Settings.parse(raw, source).flat(tuple(SECTIONS))


def recorded(raw: dict[str, Any] | None, source: str = "--settings") -> dict[str, Any]:
    """What a run manifest records: the keys of the sections the command was given (a flat object: all)."""
    settings = Settings.parse(raw, source)
    return settings.flat(settings.given if _nested(raw) else tuple(SECTIONS))


def _nested(raw: dict[str, Any] | None) -> bool:
    return any(key in SECTIONS for key in (raw or {}))


def epilog(sections: tuple[str, ...] = tuple(SECTIONS)) -> str:
    """The ``--help`` epilog (from the dataclasses' metadata)."""
    return help_text(sections)


def generation_batch_size(s: dict[str, Any]) -> int:
    return s["prompts_per_step"] * s["num_generations"]
