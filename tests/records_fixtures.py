"""Small synthetic records in the exact shapes their writers produce (the typed readers in
``paired_rollouts.records`` refuse any other shape)."""

from __future__ import annotations

from typing import Any

from paired_rollouts.design import parse_run


def run_manifest(run: str, pools_sha256: dict[str, str], code: str = "abc", *, steps: int = 2, prompts: int = 2,
                 generations: int = 4, p: float = 0.25, q: float = 0.0, device: str = "cpu",
                 versions: dict[str, str | None] | None = None, attempts: list[dict[str, Any]] | None = None,
                 ) -> dict[str, Any]:
    """A run manifest as training/grpo.py writes it (the keys records.read_run_manifest reads)."""
    ident = parse_run(run)
    return {
        "run": run, "condition": ident.condition, "arm": ident.arm, "seed": ident.seed,
        "settings": {"steps": steps, "prompts_per_step": prompts, "num_generations": generations},
        "noise": {"p": p, "q": q},
        "pools_sha256": dict(pools_sha256),
        "versions": versions if versions is not None else {"python": "3.11.7", "torch": "2.6.0"},
        "hardware": {"device": device},
        "code": {"sources_sha256": code},
        "attempts": attempts if attempts is not None else [{"attempt": 1, "status": "complete"}],
        "timings": [],
    }
