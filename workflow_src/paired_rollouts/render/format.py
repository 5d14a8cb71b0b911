"""The one place where numbers become LaTeX text.

Every table cell that shows a number is made here, so a reader (and the parse-back tests) can rely on
one convention: proportions to 3 decimals, percent points to 1 decimal, signed differences with an
explicit sign, intervals as ``[lo, hi]``, censored values as ``>N``, and a missing value as an em dash
that carries a footnote saying why it is missing.

Functions return :class:`Tex` (a ``str`` that is already LaTeX); plain ``str`` values are user text
and must pass through :func:`escape` (the templates' ``tex`` filter) before they reach a file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "Tex",
    "Notes",
    "escape",
    "path",
    "prop",
    "pp",
    "signed",
    "signed_pp",
    "interval",
    "integer",
    "scaled",
    "censored_steps",
    "mark",
    "missing",
    "join",
]

MINUS = "$-$"
PLUS = "$+$"
EM_DASH = "---"


class Tex(str):
    """A string that is already valid LaTeX (never escaped again)."""

    __slots__ = ()


_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_ESCAPE_RE = re.compile("|".join(re.escape(ch) for ch in _ESCAPES))


def escape(value: Any) -> Tex:
    """Escape user text for LaTeX; :class:`Tex` passes through unchanged.

    Numbers are refused on purpose: they must be formatted by a function of this module, so that
    every table uses the same convention.
    """
    if isinstance(value, Tex):
        return value
    if isinstance(value, str):
        return Tex(_ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], value))
    raise TypeError(f"refusing to put a raw {type(value).__name__} ({value!r}) into LaTeX; format it first")


def path(value: str) -> Tex:
    """A file path in running text: escaped, with break points after '/' so long paths can wrap."""
    return Tex(escape(value).replace("/", r"/\allowbreak{}"))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _fixed(value: float, dp: int) -> str:
    text = f"{abs(value):.{dp}f}"
    # A value that rounds to zero is shown without a sign.
    if value < 0 and float(text) != 0.0:
        return MINUS + text
    return text


class Notes:
    """Footnotes of one table: each distinct reason for a missing value gets one letter."""

    def __init__(self) -> None:
        self._reasons: list[str] = []

    def marker(self, reason: str) -> str:
        if reason not in self._reasons:
            self._reasons.append(reason)
        index = self._reasons.index(reason)
        letters = "abcdefghijklmnopqrstuvwxyz"
        return letters[index % 26] * (index // 26 + 1)

    @property
    def items(self) -> list[tuple[Tex, Tex]]:
        """(marker, escaped reason) pairs in order of first use."""
        return [(Tex(self.marker(r)), escape(r)) for r in self._reasons]

    def __bool__(self) -> bool:
        return bool(self._reasons)


def missing(notes: Notes | None, reason: str) -> Tex:
    """An em dash; with ``notes`` it carries a superscript letter whose footnote gives ``reason``."""
    if notes is None:
        return Tex(EM_DASH)
    return Tex(f"{EM_DASH}\\textsuperscript{{{notes.marker(reason)}}}")


def _check(value: Any, notes: Notes | None, reason: str | None) -> Tex | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return missing(notes, reason or "not available")
    if not _is_number(value):
        raise TypeError(f"expected a number, got {value!r}")
    return None


def prop(value: float | None, dp: int = 3, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A proportion (success rate, AUC, ratio) with ``dp`` fixed decimals."""
    gap = _check(value, notes, reason)
    return gap if gap is not None else Tex(_fixed(float(value), dp))


def pp(value: float | None, dp: int = 1, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A proportion shown in percent points (0.0539 -> 5.4)."""
    gap = _check(value, notes, reason)
    return gap if gap is not None else Tex(_fixed(100.0 * float(value), dp))


def signed(value: float | None, dp: int = 3, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A difference with an explicit sign (+0.054, -0.002); zero at this precision has none."""
    gap = _check(value, notes, reason)
    if gap is not None:
        return gap
    text = _fixed(float(value), dp)
    if float(value) > 0 and float(f"{value:.{dp}f}") != 0.0:
        return Tex(PLUS + text)
    return Tex(text)


def signed_pp(value: float | None, dp: int = 1, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A difference of proportions in signed percent points."""
    gap = _check(value, notes, reason)
    return gap if gap is not None else signed(100.0 * float(value), dp)


def interval(
    bounds: Iterable[float | None] | None,
    dp: int = 3,
    notes: Notes | None = None,
    reason: str | None = None,
    sign: bool = True,
) -> Tex:
    """A confidence interval ``[lo, hi]``; missing when absent or when a bound is null."""
    pair = list(bounds) if bounds is not None else []
    if len(pair) != 2 or any(b is None for b in pair):
        return missing(notes, reason or "interval not available")
    show = signed if sign else prop
    return Tex(f"[{show(pair[0], dp)}, {show(pair[1], dp)}]")


def integer(value: int | None, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A count, with a thin group separator from 10,000 up (2400, 19{,}200)."""
    if value is None:
        return missing(notes, reason or "not available")
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"expected an integer, got {value!r}")
    text = f"{abs(value):,}"
    text = text.replace(",", "{,}") if abs(value) >= 10000 else text.replace(",", "")
    return Tex((MINUS if value < 0 else "") + text)


def scaled(
    value: float | None, unit: float, dp: int = 3, notes: Notes | None = None, reason: str | None = None
) -> Tex:
    """``value / unit`` with fixed decimals (e.g. variance traces in units of 1e5)."""
    gap = _check(value, notes, reason)
    return gap if gap is not None else Tex(_fixed(float(value) / unit, dp))


def censored_steps(
    step: float | None, censored: bool, horizon: int | None, dp: int = 1, notes: Notes | None = None
) -> Tex:
    """Steps to threshold: a number, or ``>horizon`` when the threshold was never reached."""
    if censored:
        if horizon is None:
            return missing(notes, "censored: threshold not reached")
        return Tex(f"$>${horizon}")
    gap = _check(step, notes, "steps to threshold not available")
    return gap if gap is not None else Tex(_fixed(float(step), dp))


def mark(passes: bool | None, notes: Notes | None = None, reason: str | None = None) -> Tex:
    """A registered outcome: pass / miss; an undecided one (partial evidence, not computed) says so, with a
    note giving the reason."""
    if passes is None:
        if notes is None:
            return Tex("not decided")
        return Tex(f"not decided\\textsuperscript{{{notes.marker(reason or 'not decided')}}}")
    return Tex(r"\textbf{pass}" if passes else "miss")


def join(parts: Iterable[Any], sep: str = ", ") -> Tex:
    """Join cells: Tex parts stay, plain strings are escaped."""
    return Tex(escape(sep).join(escape(p) for p in parts))


# ---------------------------------------------------------------- parse back (tests, checks)


_NUMBER_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")


def parse_number(cell: str) -> float | None:
    """Invert the formatters for one cell: the first number in it, or None for a missing value."""
    text = cell.replace(MINUS, "-").replace(PLUS, "+").replace("{,}", "").replace("$>$", ">")
    text = re.sub(r"\\textsuperscript\{[a-z]+\}", "", text)
    if text.strip().startswith(EM_DASH):
        return None
    match = _NUMBER_RE.search(text)
    return float(match.group(0)) if match else None


def parse_interval(cell: str) -> tuple[float, float] | None:
    text = cell.replace(MINUS, "-").replace(PLUS, "+")
    match = re.search(r"\[\s*([-+]?\d+(?:\.\d+)?),\s*([-+]?\d+(?:\.\d+)?)\]", text)
    return (float(match.group(1)), float(match.group(2))) if match else None
