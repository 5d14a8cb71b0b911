"""The one error the public pairing API raises for bad input."""

from __future__ import annotations

import operator
from typing import Any

from paired_rollouts.errors import UserError


class PairingError(UserError, ValueError):
    """A bad argument (a rate outside [0, 1], a ragged outcome table, ...): a ``ValueError`` whose
    message says what was wrong; the study's command line prints it as one line."""


def whole_number(value: Any) -> int:
    """``value`` as an int where it is one (numpy ints too, as ``operator.index`` takes them), else -1: a
    bool, a float such as 42.9 (refused, never truncated), a str or None. Callers refuse what is below
    their least allowed value, so -1 reads as "not a whole number in range"."""
    if isinstance(value, bool):
        return -1
    try:
        return operator.index(value)
    except TypeError:
        return -1


def seed_value(seed: Any, what: str) -> int:
    """``seed`` as an int in [0, 2**64), what ``Dice`` hashes; a float such as 42.9 is refused, not
    truncated, in one line naming ``what`` the seed is."""
    value = whole_number(seed)
    if not 0 <= value < 2**64:
        raise PairingError(f"{what} must be an integer in [0, 2**64), not {seed!r}")
    return value
