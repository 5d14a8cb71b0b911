"""A jinja2 environment that is safe for LaTeX.

LaTeX is full of ``{``, ``}``, ``%`` and ``#``, which clash with jinja2's default delimiters, so the
templates use ``\\VAR{...}`` for values, ``\\BLOCK{...}`` for statements, ``\\#{...}`` for comments,
and line statements starting with ``%%`` (line comments ``%#``). Autoescaping is off (it would emit
HTML entities); instead every value must pass through the ``tex`` filter, and a ``finalize`` hook
refuses anything that did not: a raw string or number that reaches the output is an error, never a
silently broken (or injected) LaTeX file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from paired_rollouts.render import format as fmt

TEMPLATE_DIR = Path(__file__).with_name("templates")


def _finalize(value: Any) -> Any:
    if isinstance(value, fmt.Tex):
        return value
    raise TypeError(
        f"template printed an unescaped {type(value).__name__} ({value!r:.60}); "
        "apply the |tex filter (or format the number with render.format)"
    )


def _strict(function):
    """Wrap a filter so that an undefined template variable raises jinja2's own UndefinedError."""

    def wrapped(value: Any) -> Any:
        if isinstance(value, jinja2.Undefined):
            str(value)  # StrictUndefined raises here, naming the variable
        return function(value)

    return wrapped


def _cells(cells: Any) -> fmt.Tex:
    return fmt.Tex(" & ".join(fmt.escape(c) for c in cells))


def environment(template_dir: Path = TEMPLATE_DIR) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        block_start_string=r"\BLOCK{",
        block_end_string="}",
        variable_start_string=r"\VAR{",
        variable_end_string="}",
        comment_start_string=r"\#{",
        comment_end_string="}",
        line_statement_prefix="%%",
        line_comment_prefix="%#",
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
    )
    env.filters["tex"] = _strict(fmt.escape)
    env.filters["path"] = _strict(fmt.path)
    env.filters["cells"] = _strict(_cells)
    return env


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``; returns the LaTeX text."""
    return environment().get_template(template).render(**context)
