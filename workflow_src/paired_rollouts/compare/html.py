"""HTML pages of the comparison and the cost ledger (Snakemake's report shows them as they are)."""

from __future__ import annotations

import html
from typing import Any

STYLE = (
    "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;font-size:90%}"
    "th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
    "td.n{text-align:right}tr.reproduced td.s{color:#176d1b}tr.differs td.s{color:#a31515}"
    "tr.not-computed td.s{color:#777}</style>"
)


def _page(title: str, body: list[str]) -> str:
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            STYLE,
            "</head><body>",
            *body,
            "</body></html>",
            "",
        ]
    )


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def comparison_html(data: dict[str, Any]) -> str:
    s = data["summary"]
    body = [
        f"<h1>Published versus reproduced</h1><p><strong>{html.escape(s['text'])}.</strong> "
        f"{s['differs']} differ; {s['not computed']} cannot be computed from this results root.</p>"
    ]
    if data.get("mismatch_expected"):
        body.append(
            f"<p>At {html.escape(str(data.get('scale_label')))} scale the runs are not the paper's, so a "
            "mismatch is expected; the scripted reference, the bandit and the task pools must agree at "
            "every scale.</p>"
        )
    body.append(
        "<table><tr><th>id</th><th>where</th><th>printed</th><th>published</th><th>reproduced</th>"
        "<th>difference</th><th>status</th><th>reason</th></tr>"
    )
    for r in data["entries"]:
        cls = r["status"].replace(" ", "-")
        body.append(
            f'<tr class="{cls}"><td><code>{html.escape(r["id"])}</code></td><td>{html.escape(r["where"])}'
            f'</td><td>{html.escape(r["printed"])}</td><td class="n">{html.escape(_show(r["published"]))}</td>'
            f'<td class="n">{html.escape(_show(r["reproduced"]))}</td>'
            f'<td class="n">{html.escape(_show(r["difference"]))}</td><td class="s">{r["status"]}</td>'
            f"<td>{html.escape(r['reason'] or '')}</td></tr>"
        )
    body.append("</table>")
    return _page("Published versus reproduced", body)


def _hms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def ledger_html(data: dict[str, Any]) -> str:
    def row(label: str, t: dict[str, Any]) -> str:
        rss = "" if t.get("peak_rss_mb") is None else f"{t['peak_rss_mb']:.0f}"
        gpu = "" if t.get("gpu_hours") is None else f"{t['gpu_hours']:.2f}"
        return (
            f"<tr><td>{html.escape(label)}</td><td class='n'>{t['jobs']}</td><td class='n'>{_hms(t['wall_s'])}"
            f"</td><td class='n'>{_hms(t['cpu_s'])}</td><td class='n'>{rss}</td><td class='n'>{gpu}</td></tr>"
        )

    head = (
        "<tr><th>{}</th><th>jobs</th><th>wall (h:m:s)</th><th>CPU (h:m:s)</th><th>peak MB</th>"
        "<th>GPU-hours</th></tr>"
    )
    budget = data.get("published_budget") or {}
    body = [
        "<h1>Cost ledger</h1>",
        f"<p>From {data['benchmarks']} Snakemake benchmark files ({html.escape(data['accelerator'])} profile). "
        f"Published budget: about {budget.get('episodes_per_run', '?')} episodes and "
        f"{budget.get('gpu_hours_per_run', '?')} GPU-hours per run on {html.escape(str(budget.get('accelerator')))}."
        + (
            f" This run: {data['gpu_hours_per_run']:.2f} GPU-hours per training run."
            if data.get("gpu_hours_per_run") is not None
            else " This run used no GPU."
        )
        + "</p>",
        "<h2>Per stage</h2><table>",
        head.format("stage"),
        *[row(k, v) for k, v in data["stages"].items()],
        row("all jobs", data["total"]),
        "</table>",
        "<h2>Per training run</h2><table>",
        head.format("run"),
        *[row(k, v) for k, v in data["runs"].items()],
        "</table>",
    ]
    return _page("Cost ledger", body)
