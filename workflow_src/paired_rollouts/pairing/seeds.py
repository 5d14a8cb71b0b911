"""Seeds by hashing: a seed depends only on what it is for, never on the order things were computed in.

That is what keeps arms, checkpoints and re-runs comparable: the schedule of a group, of an evaluation
episode or of one rollout is named by its parts (run seed, row, task, slot, ...) and hashed, so adding a
task, reordering a loop or resuming a run changes no other seed.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from paired_rollouts.pairing.errors import PairingError

#: Group and evaluation seeds are reduced modulo 2**31 (31-bit seeds, as the study records them).
MOD31 = 2**31

Family = Literal["train", "eval"]


def derive_seed(*parts: object) -> int:
    """A 64-bit seed named by ``parts``.

    The first 8 bytes (big-endian, unsigned) of SHA-256 over ``"|".join(str(p) for p in parts)``, e.g.
    ``derive_seed("a") == 14598278634844962250``. Every draw and seed of this package is one of these.
    """
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def training_schedule_seed(run_seed: int, condition: str, row_index: int) -> int:
    """The schedule seed of training group ``row_index`` of a run: one per group (prompt row).

    ``derive_seed("schedule", run_seed, condition, row_index) % 2**31``; ``condition`` names the noise
    setting (the study's "C2"), so two settings never share schedules.
    """
    return derive_seed("schedule", run_seed, condition, row_index) % MOD31


def eval_schedule_seed(task_id: str, index: int) -> int:
    """Evaluation schedule ``index`` (1-based) of a task: ``derive_seed("eval", task_id, index) % 2**31``.

    The same for every arm and checkpoint, so evaluations compare policies on the same luck.
    """
    return derive_seed("eval", task_id, index) % MOD31


def diagnostic_seed(run_seed: int, task_id: str, index: int) -> int:
    """The ``index``-th schedule of a task in the luck-share diagnostic of a run seed.

    ``derive_seed("diag", run_seed, task_id, index) % 2**31``.
    """
    return derive_seed("diag", run_seed, task_id, index) % MOD31


def independent_seed(schedule_seed: int, slot: int, draw_index: int, family: Family) -> int:
    """One rollout's own seed in the independent design (full 64 bits).

    ``derive_seed("independent", schedule_seed, slot, draw_index, family)``: ``slot`` is the environment
    instance (or the rollout's position in its batch), ``draw_index`` that instance's episode count, and
    ``family`` "train" or "eval", so evaluation episodes never shift training draws.
    """
    if family not in ("train", "eval"):
        raise PairingError(f"family must be 'train' or 'eval', not {family!r}")
    return derive_seed("independent", schedule_seed, slot, draw_index, family)


def phase_name(phase: object) -> str:
    """``phase`` if it is a str ("train..." or e.g. "eval"), else one line."""
    if not isinstance(phase, str):
        raise PairingError(
            f'phase must be a str ("train..." or e.g. "eval" around evaluations), not {phase!r}'
        )
    return phase


def seed_family(phase: str) -> Family:
    """ "train" for a training phase (a phase name starting with "train", e.g. "train:step20"), else "eval"."""
    return "train" if phase_name(phase).startswith("train") else "eval"


def resolve_seed(
    mode: str, schedule_seed: int, slot: int = 0, draw_index: int = 0, phase: str = "train"
) -> int:
    """The seed one rollout draws from: the group's ``schedule_seed`` when ``mode`` is "paired" or
    "clean", its own :func:`independent_seed` when "independent"; any other mode is refused."""
    if mode == "independent":
        return independent_seed(schedule_seed, slot, draw_index, seed_family(phase))
    if mode not in ("paired", "clean"):  # a misspelt control arm must not run paired
        raise PairingError(f"mode must be one of paired, independent, clean, not {mode!r}")
    return schedule_seed
