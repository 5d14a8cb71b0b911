"""HTML versions of the tables (for Snakemake's report): the same table model, LaTeX cells translated.

Every cell comes from ``render/format.py`` or a template constant, so only a small, known set of LaTeX
constructs appears; anything else left over is stripped rather than shown as markup.
"""

from __future__ import annotations

import html
import re

from paired_rollouts.render.tables import TableModel

_SIMPLE = [
    (r"\textgreater{}", ">"),
    (r"\textless{}", "<"),
    (r"\textbar{}", "|"),
    (r"\textbackslash{}", "\\"),
    (r"\textasciitilde{}", "~"),
    (r"\textasciicircum{}", "^"),
    (r"\allowbreak{}", ""),
    ("$+$", "+"),
    ("$-$", "\u2212"),
    ("$>$", ">"),
    ("$<$", "<"),
    (r"$\Delta$", "\u0394"),
    (r"$\geq$", "\u2265"),
    (r"$\leq$", "\u2264"),
    (r"$\lambda$", "\u03bb"),
    ("---", "\u2014"),
    ("--", "\u2013"),
    (r"\,", "\u2009"),
    (r"\%", "%"),
    (r"\_", "_"),
    (r"\&", "&"),
    (r"\#", "#"),
    (r"\$", "$"),
    (r"\{", "{"),
    (r"\}", "}"),
    ("{,}", ","),
]
_TAG = {"textsuperscript": "sup", "texttt": "code", "textbf": "strong", "textit": "em", "emph": "em"}
_CMD = re.compile(r"\\(textsuperscript|texttt|textbf|textit|emph|textsc)\{([^{}]*)\}")


def cell_html(tex: str) -> str:
    """One LaTeX cell as HTML (escaped text, a few inline tags)."""
    text = str(tex)
    for old, new in _SIMPLE:
        text = text.replace(old, new)
    parts: list[str] = []
    pos = 0
    for m in _CMD.finditer(text):
        parts.append(_plain(text[pos : m.start()]))
        name, inner = m.group(1), _plain(m.group(2))
        parts.append(inner.upper() if name == "textsc" else f"<{_TAG[name]}>{inner}</{_TAG[name]}>")
        pos = m.end()
    parts.append(_plain(text[pos:]))
    return "".join(parts)


def _plain(text: str) -> str:
    text = re.sub(r"\$([^$]*)\$", r"\1", text)  # inline maths left: show its content
    text = re.sub(r"\\[A-Za-z]+\*?(\{[^{}]*\})?", lambda m: (m.group(1) or "")[1:-1], text)
    return html.escape(text.replace("{", "").replace("}", ""), quote=False)


def table_html(model: TableModel, number: int, caption: str) -> str:
    """A standalone HTML page with table ``number`` (what the report shows)."""
    ncols = len(model.headers)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Table {number}: {html.escape(model.title)}</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "th,td{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}"
        "td:first-child,th:first-child{text-align:left}tr.section td{font-style:italic;text-align:left;"
        "background:#f4f4f4}caption{text-align:left;margin-bottom:.6em}.notes{font-size:90%;margin-top:.8em}"
        "</style></head><body>",
        "<table>",
        f"<caption><strong>Table {number}. {html.escape(model.title)}.</strong> {caption}</caption>",
    ]
    if model.groups:
        out.append(
            "<tr>"
            + "".join(f'<th colspan="{span}">{cell_html(label)}</th>' for label, span in model.groups)
            + "</tr>"
        )
    out.append("<tr>" + "".join(f"<th>{cell_html(h)}</th>" for h in model.headers) + "</tr>")
    for row in model.rows:
        if row.kind == "rule":
            continue
        if row.kind == "span":  # first cell, then one cell spanning the rest (\multicolumn{n}{l}{text})
            inner = re.sub(r"^\\multicolumn\{\d+\}\{[lcr]\}\{(.*)\}$", r"\1", str(row.cells[1]), flags=re.S)
            out.append(
                f'<tr><td>{cell_html(row.cells[0])}</td><td colspan="{ncols - 1}" style="text-align:left">'
                f"{cell_html(inner)}</td></tr>"
            )
            continue
        if row.kind == "section":
            out.append(f'<tr class="section"><td colspan="{ncols}">{cell_html(row.cells[0])}</td></tr>')
        else:
            out.append("<tr>" + "".join(f"<td>{cell_html(c)}</td>" for c in row.cells) + "</tr>")
    out.append("</table>")
    notes = [cell_html(n) for n in model.extra_notes]
    notes += [f"<sup>{cell_html(m)}</sup> {cell_html(r)}." for m, r in model.notes.items]
    if notes:
        out.append('<div class="notes">' + "<br>".join(notes) + "</div>")
    out.append("</body></html>\n")
    return "\n".join(out)
