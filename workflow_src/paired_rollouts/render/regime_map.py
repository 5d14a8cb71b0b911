"""The regime map's heatmaps and its page in the study's document (``R/paper/tables.pdf``, surrogate scales).

The heatmaps show the paired-minus-independent AUC gap of every cell, one panel per noise kind (rows: the
noise rate; columns: step size x G x prompts per step); a cell whose interval excludes zero is marked
(+ helps, - hurts). The page says in words, from the map alone (read through its reader), where pairing
helps, by how much, and which theoretical quantity ranks the cells best, with the table of every
quantity's Spearman correlation beside the heatmaps. The heatmaps are deterministic: no dates in the PDF.
"""

from __future__ import annotations

import io as _io
from pathlib import Path
from typing import Any

from paired_rollouts import io
from paired_rollouts.errors import UserError
from paired_rollouts.records.regime_map import RegimeMap
from paired_rollouts.render import format as fmt
from paired_rollouts.render.format import Tex

NOISE_TITLES = {"transition": "tool faults (rate p)", "outcome": "grader flips (rate q)"}
MARKS = {"helps": "+", "hurts": "\u2212", "no_difference": ""}


def _columns(cells: list[dict[str, Any]]) -> list[tuple[float, int, int]]:
    return sorted(
        {
            (c["factors"]["step_size"], c["factors"]["group_size"], c["factors"]["prompts_per_step"])
            for c in cells
        }
    )


def draw_heatmaps(regime_map: RegimeMap, out: Path) -> tuple[Path, Path]:
    """The heatmaps as ``out`` (PDF) and a PNG beside it, both or neither."""
    out = Path(out)
    png_path = out.with_suffix(".png")
    io.atomic_write_all(heatmap_files(regime_map, out))
    return out, png_path


def heatmap_files(regime_map: RegimeMap, out: Path) -> list[tuple[Path, bytes]]:
    """The heatmaps' PNG and PDF (``out``) as (path, bytes), for one all-or-none write."""
    from paired_rollouts.render.figures import _plt

    out = Path(out)
    if out.suffix != ".pdf":
        raise UserError(f"--figure {out}: the heatmap is written as .pdf (the .png goes beside it)")
    plt = _plt()
    kinds = [k for k in NOISE_TITLES if any(c["factors"]["noise"] == k for c in regime_map.cells)]
    columns = _columns(regime_map.cells)
    gaps = [abs(c["auc_gap"]["mean"]) for c in regime_map.cells]
    limit = max(max(gaps), 1e-6)
    fig = plt.figure(
        figsize=(
            max(4.0, 1.0 + 0.55 * len(columns)),
            1.4 + 1.1 * len(kinds) + 0.35 * len(regime_map.cells) / max(len(columns), 1),
        ),
        layout="constrained",
    )
    axes = fig.subplots(len(kinds), 1, squeeze=False)[:, 0]
    image = None
    for ax, kind in zip(axes, kinds, strict=True):
        rates = sorted({c["factors"]["rate"] for c in regime_map.cells if c["factors"]["noise"] == kind})
        grid = [[float("nan")] * len(columns) for _ in rates]
        for c in regime_map.cells:
            f = c["factors"]
            if f["noise"] != kind:
                continue
            i, j = (
                rates.index(f["rate"]),
                columns.index((f["step_size"], f["group_size"], f["prompts_per_step"])),
            )
            grid[i][j] = gap = c["auc_gap"]["mean"]
            label = f"{gap:+.3f}" + (f"\n{MARKS[c['verdict']]}" if MARKS[c["verdict"]] else "")
            strong = abs(gap) > 0.6 * limit
            ax.text(j, i, label, ha="center", va="center", fontsize=6, color="white" if strong else "black")
        image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_yticks(range(len(rates)), [f"{r:g}" for r in rates])
        ax.set_xticks(range(len(columns)), [f"{s:g}x\nG{g}\nP{p}" for s, g, p in columns], fontsize=6)
        ax.set_title(NOISE_TITLES[kind])
        ax.set_ylabel("p" if kind == "transition" else "q")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="AUC gap, paired - independent", shrink=0.8)
    caption = (
        "Paired minus independent AUC of clean validation success per cell (mean over seed pairs); "
        "+ / - marks cells whose 95 % bootstrap interval excludes zero."
    )
    pdf, png = _io.BytesIO(), _io.BytesIO()
    try:
        fig.savefig(
            pdf, format="pdf", metadata={"CreationDate": None, "Subject": caption, "Title": "regime map"}
        )
        fig.savefig(png, format="png", dpi=150, metadata={"Software": None})
    finally:
        plt.close(fig)
    return [(out.with_suffix(".png"), png.getvalue()), (out, pdf.getvalue())]


def _factors(f: dict[str, Any]) -> str:
    rate = f"p = {f['rate']:g}" if f["noise"] == "transition" else f"q = {f['rate']:g}"
    return (
        f"{rate}, step {f['step_size']:g}x, G = {f['group_size']}, {f['prompts_per_step']} prompts per step"
    )


def _value(factor: str, row: dict[str, Any]) -> str:
    if factor == "rate":
        return f"{'p' if row['noise'] == 'transition' else 'q'} = {row['value']:g}"
    if factor == "step_size":
        return f"{row['value']:g}x"
    if factor == "group_size":
        return f"G = {row['value']}"
    return f"{row['value']} prompts"


def _count(cells: int) -> str:
    return f"{cells} cell" if cells == 1 else f"{cells} cells"


def _rho(value: float | None) -> str:
    return "undefined" if value is None else f"{value:+.2f}"


def page_text(regime_map: RegimeMap) -> list[str]:
    """The page's paragraphs (plain text; escaped for LaTeX by the caller), from the summary alone."""
    s, grid = regime_map.summary, regime_map.grid
    v = s["verdicts"]
    helps = [c for c in regime_map.cells if c["verdict"] == "helps"]
    paragraphs = [
        f"The map has {s['cells']} cells, each with {grid['seed_pairs']} seed pairs of paired and independent runs "
        f"of {grid['steps']} steps from the calibrated surrogate. Pairing helps (the 95 % bootstrap interval of the "
        f"AUC gap lies above zero) in {v['helps']} cells, hurts in {v['hurts']} and makes no detectable "
        f"difference in {v['no_difference']}. Under tool faults it helps in {s['by_noise']['transition']['helps']} "
        f"of {sum(s['by_noise']['transition'].values())} cells, under grader flips in "
        f"{s['by_noise']['outcome']['helps']} of {sum(s['by_noise']['outcome'].values())}.",
    ]
    if helps:
        gains = sorted(c["auc_gap"]["mean"] for c in helps)
        parts = []
        for factor, label in (
            ("rate", "noise rate"),
            ("step_size", "step size"),
            ("group_size", "group size"),
            ("prompts_per_step", "prompts per step"),
        ):
            rows = s["by_factor"][factor]
            if len(rows) < 2:
                continue
            parts.append(
                f"by {label}, "
                + ", ".join(f"{_value(factor, r)}: {r['helps']} of {r['cells']}" for r in rows)
            )
        paragraphs.append(
            "Where it helps (cells with a significant gain) "
            + "; ".join(parts)
            + ". In those cells the gain is "
            f"{gains[0]:+.3f} to {gains[-1]:+.3f} AUC of clean success."
        )
    best = s["largest_gain"]
    if best is not None:
        lo, hi = best["interval"]
        paragraphs.append(
            f"By how much: the largest AUC gap of any cell is {best['auc_gap']:+.3f} [{lo:+.3f}, {hi:+.3f}] "
            f"at {_factors(best['factors'])}."
        )
    predictor = s["best_predictor"]
    if predictor:
        entry = s["spearman_with_auc_gap"][predictor]
        within = entry["within_step_size"]
        paragraphs.append(
            "Which quantity predicts it best (Spearman rank correlation with the AUC gap across cells; every "
            f"quantity in the table below): the {predictor.replace('_', ' ')}, {_rho(entry['all']['spearman'])} "
            f"over {_count(entry['all']['cells'])} (within a step size {_rho(within['spearman'])}, the mean over "
            f"{within['step_sizes']} step size{'s' * (within['step_sizes'] != 1)})."
        )
    else:
        paragraphs.append(
            "Which quantity predicts it best (Spearman rank correlation with the AUC gap across cells): none "
            "can be ranked, as no quantity is defined and varies over at least three cells."
        )
    return paragraphs


def _rho_cell(entry: dict[str, Any], count: str) -> Tex:
    """'+0.45 (12)': a correlation with the cells (or step sizes) it is over; an em dash when undefined."""
    return Tex(f"{fmt.signed(entry['spearman'], 2)} ({fmt.integer(entry[count])})")


def spearman_rows(regime_map: RegimeMap) -> list[dict[str, Any]]:
    """The Spearman table's rows (LaTeX): each theoretical quantity's rank correlation with the AUC gap over
    all cells, per noise kind and within a step size (the mean over step sizes); the best predictor marked."""
    from paired_rollouts.surrogate.regime_map import PREDICTORS

    correlations = regime_map.summary["spearman_with_auc_gap"]
    best = regime_map.summary["best_predictor"]
    return [
        {
            "name": fmt.escape(name.replace("_", " ") + (" (best)" if name == best else "")),
            "meaning": fmt.escape(PREDICTORS[name]),
            "all": _rho_cell(correlations[name]["all"], "cells"),
            "transition": _rho_cell(correlations[name]["transition"], "cells"),
            "outcome": _rho_cell(correlations[name]["outcome"], "cells"),
            "within": _rho_cell(correlations[name]["within_step_size"], "step_sizes"),
        }
        for name in correlations
    ]


HEATMAP_CAPTION = (
    "Paired minus independent AUC of clean validation success per cell (mean over seed pairs), one panel per "
    "noise kind: rows the noise rate, columns step-size multiplier x group size G x prompts per step; "
    "+ / - marks cells whose 95 % bootstrap interval excludes zero."
)


def page_context(regime_map: RegimeMap, source: str, heatmap: str) -> dict[str, Any]:
    """The document's regime-map page (template ``document.tex.j2``): its paragraphs, the heatmaps (drawn
    at ``heatmap``, relative to the document) and the Spearman table, all from the map read by its reader."""
    return {
        "paragraphs": [fmt.escape(p) for p in page_text(regime_map)],
        "heatmap": Tex(heatmap),
        "heatmap_caption": fmt.escape(HEATMAP_CAPTION),
        "spearman": spearman_rows(regime_map),
        "source": source,
    }
