"""Errors a user can act on: the CLI prints their message (no traceback) and exits 1."""


class UserError(Exception):
    """A bad input or state that the user must fix; the message names the file and the fix."""
