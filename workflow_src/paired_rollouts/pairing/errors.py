"""The one error the public pairing API raises for bad input."""

from __future__ import annotations

from paired_rollouts.errors import UserError


class PairingError(UserError, ValueError):
    """A bad argument (a rate outside [0, 1], a ragged outcome table, ...): a ``ValueError`` whose
    message says what was wrong; the study's command line prints it as one line."""
