"""One PDF with every table and figure, compiled with latexmk/pdflatex in a temporary folder.

The title page states the commit, profile and scale, and the pre-registration's imprint and whether
its verification passed (read from ``results/prereg/verification.json``); the page after it states the
findings in words, read from the decision registers; at surrogate scales the regime map's page follows
(where pairing helps, by how much, which quantity predicts it; read through the map's reader, heatmaps
drawn from it). The PDF is reproducible:
no dates in it (``SOURCE_DATE_EPOCH`` fixed, pdfTeX's info dates and trailer ID suppressed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from paired_rollouts import design, io, records
from paired_rollouts.errors import UserError
from paired_rollouts.records import HYPOTHESES, Cost, DecisionRegister, Verification
from paired_rollouts.render import figures as figs
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render import tex
from paired_rollouts.render.format import Tex

LOG_TAIL_LINES = 40


def _token_rows(verification: Verification) -> list[dict[str, Tex]]:
    """One row per time-stamp token of the verification report (records[].tokens[], prereg/verify.py)."""
    rows = []
    for token in verification.tokens:
        authority = token.name if token.record == "freeze" else f"{token.name} ({token.record})"
        rows.append(
            {
                "authority": fmt.escape(authority),
                "time": fmt.escape(token.gen_time or "time unknown"),
                "status": fmt.escape("verified" if token.verified else "NOT verified"),
            }
        )
    return rows


def verification_context(path: Path) -> dict[str, Any]:
    verification = records.read_verification(path)
    documents = []
    for entry in verification.documents:
        status = "(matches)" if entry.matches else "(CHANGED since the freeze)"
        documents.append(
            {
                "path": fmt.escape(entry.path),
                "sha": fmt.escape(entry.sha256[:16]),
                "status": fmt.escape(status),
            }
        )
    status = "verified" if verification.passes else "NOT verified"
    if verification.test_authority:
        status += " (local test time-stamp authority: stand-in only)"
    note = ""
    if verification.failures:
        note = "Verification failures: " + "; ".join(verification.failures[:5])
    return {
        "prereg_status": fmt.escape(status),
        "imprint": fmt.escape(verification.imprint),
        "documents": documents,
        "tokens": _token_rows(verification),
        "prereg_note": fmt.escape(note),
        "verification": str(path),
    }


FAMILIES = {
    "c2": "C2 learning: AUC, final success (tables 3, 7)",
    "c4": "C4 learning: AUC, final success (tables 4, 8)",
    "c0": "C0 clean-trained reference",
    "h3": "H3 recovery challenge",
    "h5": "H5 held-out fault types",
    "luck": "Luck share (H1a)",
    "seed_sharing": "Schedule-seed sharing (H1a)",
    "spurious": "Spurious-variance groups (H1a, C4)",
    "zero_variance": "Zero-variance groups (table 10)",
    "probe": "Gradient probe (tables 5, 12; figure 5)",
    "bandit": "Aligned-scalar bandit (appendix A.1)",
    "reference": "Scripted reference agent",
    "pools": "Task pools",
    "curve": "Learning curves (blog post)",
    "budget": "Training budget",
}


def comparison_context(path: Path | None) -> dict[str, Any]:
    """The summary page: N of M published numbers reproduced, by family, and whether a mismatch is expected."""
    if path is None:
        return {"comparison": None}
    comparison = records.read_comparison(path)
    by: dict[str, Counter[str]] = {}
    for number in comparison.entries:
        by.setdefault(number.family, Counter())[number.status] += 1
    rows = [
        {
            "label": fmt.escape(FAMILIES.get(family, family)),
            "entries": fmt.integer(counts.total()),
            "reproduced": fmt.integer(counts["reproduced"]),
            "differs": fmt.integer(counts["differs"]),
            "missing": fmt.integer(counts["not computed"]),
        }
        for family, counts in by.items()
    ]
    summary = comparison.summary
    expected = comparison.mismatch_expected
    label = comparison.scale_label
    note = (
        f"This document was made at {label} scale: its runs are not the paper's (another model, fewer runs, "
        "steps and tasks), so a mismatch with the published numbers is expected and says nothing about the "
        "study. The numbers that do not depend on the runs (the scripted reference, the bandit, the task "
        "pools) must agree at every scale."
        if expected
        else "Paper scale: every published number should be reproduced within its printed rounding; a difference "
        "is a finding, listed with its reason in comparison.json."
    )
    return {
        "comparison": {
            "headline": fmt.escape(
                f"{summary.reproduced} of {summary.entries} published numbers reproduced within rounding"
            ),
            "detail": fmt.escape(
                f"{summary.differs} differ; {summary.not_computed} cannot be computed from "
                "this results root (their reasons are in the comparison file)."
            ),
            "note": fmt.escape(note),
            "rows": rows,
            "source": str(path),
        }
    }


def _duration(seconds: float | None) -> Tex:
    if seconds is None:
        return Tex("---")
    seconds = int(round(seconds))
    return fmt.escape(f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}")


def _cost_row(label: str, cost: Cost) -> dict[str, Tex]:
    """One row of the cost ledger, formatted for LaTeX or HTML."""
    return {
        "label": fmt.escape(label),
        "jobs": fmt.integer(cost.jobs),
        "wall": _duration(cost.wall_s),
        "cpu": _duration(cost.cpu_s),
        "rss": fmt.escape(f"{cost.peak_rss_mb:.0f}") if cost.peak_rss_mb is not None else Tex("---"),
        "gpu": fmt.escape(f"{cost.gpu_hours:.2f}") if cost.gpu_hours is not None else Tex("---"),
    }


def ledger_context(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {"ledger": None}
    ledger = records.read_ledger(path)
    stages = [_cost_row(name, cost) for name, cost in ledger.stages.items()]
    runs = [_cost_row(name, cost) for name, cost in ledger.runs.items()]
    total = _cost_row("all jobs", ledger.total)
    budget = ledger.published_budget
    gpu = ledger.gpu_hours_per_run
    this = (
        f"This run ({ledger.accelerator}): {gpu:.2f} GPU-hours per training run, over "
        f"{ledger.runs_in_study} runs."
        if gpu is not None
        else f"This run used no GPU ({ledger.accelerator} profile): the ledger has no GPU-hours."
    )
    paper = (
        f"Published budget: about {budget.episodes_per_run:,} episodes and "
        f"{budget.gpu_hours_per_run} GPU-hours per run on {budget.accelerator}."
        if budget
        else "No published budget given."
    )
    return {
        "ledger": {
            "stages": stages,
            "runs": runs,
            "total": total,
            "paper": fmt.escape(paper),
            "this": fmt.escape(this),
            "source": str(path),
        }
    }


def _latex_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", "0")
    env["FORCE_SOURCE_DATE"] = "1"
    return env


def compile_latex(workdir: Path, main: str = "main.tex", timeout: int = 300) -> tuple[Path, str]:
    """Run latexmk (or pdflatex twice) in ``workdir``; returns (pdf, log text). UserError on failure."""
    stem = Path(main).stem
    if shutil.which("latexmk"):
        commands = [
            [
                "latexmk",
                "-pdf",
                "-interaction=nonstopmode",
                "-halt-on-error",
                "-file-line-error",
                "-norc",
                main,
            ]
        ]
    elif shutil.which("pdflatex"):
        commands = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", main]] * 3
    else:
        raise UserError(
            "pdflatex not found: install texlive-latex-base texlive-latex-recommended "
            "texlive-fonts-recommended lmodern latexmk (README, set-up)"
        )
    log_path = workdir / f"{stem}.log"
    for command in commands:
        try:
            result = subprocess.run(
                command,
                cwd=workdir,
                env=_latex_env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise UserError(f"{workdir / main}: LaTeX did not finish within {timeout} s") from exc
        if result.returncode != 0:
            log = (
                log_path.read_text(encoding="utf-8", errors="replace")
                if log_path.is_file()
                else result.stdout
            )
            tail = "\n".join(log.splitlines()[-LOG_TAIL_LINES:])
            raise UserError(
                f"LaTeX failed on {workdir / main} (kept for inspection; log {log_path}):\n{tail}"
            )
    pdf = workdir / f"{stem}.pdf"
    if not pdf.is_file():
        raise UserError(f"{workdir / main}: LaTeX produced no PDF; see {log_path}")
    return pdf, log_path.read_text(encoding="utf-8", errors="replace")


def overfull_boxes(log: str) -> list[str]:
    return [
        line.strip() for line in log.splitlines() if line.startswith(("Overfull \\hbox", "Overfull \\vbox"))
    ]


def study_status(decisions: list[Path]) -> str:
    """'' when every decision register decided every hypothesis on the whole design, else the notice
    the title page carries (the study is incomplete: no hypothesis is decided on partial evidence)."""
    problems = []
    for register in src.decisions(decisions):
        undecided = [
            name
            for name in HYPOTHESES
            if register.hypothesis(name) is not None and register.hypothesis(name).passes is None
        ]
        if register.complete is not True or undecided:
            of = f" of {len(register.design_seeds)}" if register.design_seeds is not None else ""
            problems.append(
                f"{register.condition}: {len(register.seed_pairs)}{of} seed pairs admitted"
                + (f", {', '.join(undecided)} not decided" if undecided else "")
            )
    if not problems:
        return ""
    return (
        "STUDY INCOMPLETE: " + "; ".join(problems) + ". Incomplete runs are rerun, never analysed; the "
        "registered outcomes below are not decisions."
    )


NOISE_WORDS = {"transition": "tool faults", "outcome": "grader flips", "clean": "no noise"}


def _verdicts(blocks: dict[str, Any]) -> str:
    """'H1a passes; H2a does not pass; H3, H5 are not decided (why)': each hypothesis' registered verdict in
    words, hypotheses with the same verdict and reason named together."""
    groups: dict[tuple[Any, str], list[str]] = {}
    for name, block in blocks.items():
        reason = block.reason.rstrip(".") if block.passes is None and block.reason else ""
        groups.setdefault((block.passes, reason), []).append(name)
    words = []
    for (passes, reason), names in groups.items():
        many = len(names) > 1
        verb = {True: "pass" if many else "passes", False: "do not pass" if many else "does not pass"}.get(
            passes, "are not decided" if many else "is not decided"
        )
        words.append(f"{', '.join(names)} {verb}" + (f" ({reason})" if reason else ""))
    return "; ".join(words)


def _interval(ci: list[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f" (95 % interval {ci[0]:+.3f} to {ci[1]:+.3f})"


def condition_finding(register: DecisionRegister) -> str:
    """One paragraph in words: what pairing did to learning under one condition, from its decision
    register alone (the numbers of tables 3, 4 and 7 to 9, and each hypothesis' registered verdict)."""
    condition = design.PAPER_CONDITIONS.get(register.condition)
    noise = f" ({NOISE_WORDS[condition.kind]})" if condition is not None else ""
    pairs = len(register.seed_pairs)
    words = [f"{register.condition}{noise}, {pairs} seed pair{'s' * (pairs != 1)}:"]
    gap = register.gap
    if gap is not None and gap.computed:
        ahead = gap.auc_difference_positive_seeds
        words.append(
            f"paired minus independent validation AUC {gap.auc_difference_mean:+.3f}"
            f"{_interval(gap.auc_difference_ci95)}, the paired arm ahead in {ahead} of {len(gap.seeds)}; "
            f"final success {100 * gap.final_difference_mean:+.1f} points on the {gap.final_set} test set."
        )
        low, high = (gap.auc_difference_ci95 or [None, None])[:2]
        if low is not None and low > 0:
            words.append("Pairing helped: the interval lies above zero.")
        elif high is not None and high < 0:
            words.append("Pairing hurt: the interval lies below zero.")
        elif low is not None:
            words.append("No difference detected: the interval holds zero.")
    if register.h3 is not None and register.h3.computed:
        h3 = register.h3
        low, high = (h3.ci95 or [None, None])[:2]
        interval = (
            f" (95 % interval {100 * low:+.1f} to {100 * high:+.1f})"
            if low is not None and high is not None
            else ""
        )
        words.append(f"Recovery on the challenge set {100 * h3.difference_mean:+.1f} points{interval}.")
    if register.h1a is not None and register.step0_luck_share is not None:
        words.append(f"Luck share at step 0 {register.step0_luck_share:.2f}.")
    blocks = {name: register.hypothesis(name) for name in HYPOTHESES if register.hypothesis(name) is not None}
    if blocks:
        words.append("Registered rules: " + _verdicts(blocks) + ".")
    return " ".join(words)


def findings_context(decisions: list[Path], scale_label: str) -> dict[str, Any]:
    """The findings page: the study's result in words, condition by condition, before the comparison with
    the published numbers (nothing on it is typed by hand: every number is read from a decision register)."""
    registers = src.decisions(decisions)
    if not registers:
        return {"findings": None}
    return {
        "findings": {
            "lead": fmt.escape(
                f"What this run found ({scale_label}), read from its decision registers"
                f" ({', '.join(Path(r.path).name for r in registers)}). A verdict on fewer seed pairs than the"
                " design asks for is no verdict."
            ),
            "paragraphs": [fmt.escape(condition_finding(r)) for r in registers],
        }
    }


def build_document(
    tables: list[Path],
    figure_files: list[Path],
    verification: Path,
    profile: str,
    scale: str,
    commit: str,
    out: Path,
    strict: bool = False,
    decisions: list[Path] | None = None,
    comparison: Path | None = None,
    ledger: Path | None = None,
    regime_map: Path | None = None,
) -> list[str]:
    """Compile the document to ``out``; returns the overfull-box warnings (an error when ``strict``).
    With ``regime_map`` (surrogate scales) the map's page follows the summary pages."""
    for path in [
        *tables,
        *figure_files,
        verification,
        *(decisions or []),
        *[p for p in (comparison, ledger, regime_map) if p],
    ]:
        if not Path(path).is_file():
            raise UserError(f"{path}: file not found; build it first")
    names = [Path(t).name for t in tables]
    if len(set(names)) != len(names):
        raise UserError("--tables: two tables with the same file name")
    context = verification_context(Path(verification))
    context["study_status"] = fmt.escape(study_status(list(decisions or [])))
    context.update(comparison_context(Path(comparison) if comparison else None))
    context.update(findings_context(list(decisions or []), scale))
    context.update(ledger_context(Path(ledger) if ledger else None))
    # the map is read (every cell and its summary recomputed, its cell files checked) before LaTeX starts
    the_map = records.read_regime_map(regime_map) if regime_map else None
    workdir = Path(tempfile.mkdtemp(prefix="paired-rollouts-render-"))
    (workdir / "tables").mkdir()
    (workdir / "figures").mkdir()
    context["regime_map"] = None
    if the_map is not None:
        from paired_rollouts.render.regime_map import draw_heatmaps, page_context

        draw_heatmaps(the_map, workdir / "figures" / "regime_map.pdf")
        context["regime_map"] = page_context(the_map, str(regime_map), "figures/regime_map.pdf")
    table_refs = []
    for table in sorted(tables, key=_natural):
        shutil.copyfile(table, workdir / "tables" / Path(table).name)
        table_refs.append(Tex("tables/" + fmt.escape(Path(table).stem)))
    figure_ctx = []
    for index, figure in enumerate(figure_files):
        target = f"figure{index + 1}.pdf"
        shutil.copyfile(figure, workdir / "figures" / target)
        name = Path(figure).stem
        caption = figs.read_caption(Path(figure))
        if caption is None:
            spec = figs.FIGURES.get(name)
            caption = f"{spec.description}." if spec else name
        figure_ctx.append(
            {
                "file": Tex(f"figures/{target}"),
                "short": fmt.escape(caption.split(". ")[0].rstrip(".")),
                "caption": Tex(fmt.escape(caption).replace("/", r"/\allowbreak{}")),
                "label": fmt.escape(re.sub(r"[^A-Za-z0-9]+", "-", name)),
            }
        )
    text = tex.render(
        "document.tex.j2",
        commit=fmt.escape(commit),
        profile=fmt.escape(profile),
        scale=fmt.escape(scale),
        tables=table_refs,
        figures=figure_ctx,
        **context,
    )
    (workdir / "main.tex").write_text(text, encoding="utf-8")
    pdf, log = compile_latex(workdir)
    warnings = overfull_boxes(log)
    if warnings and strict:
        raise UserError(
            f"{workdir / 'main.tex'}: {len(warnings)} overfull box(es): " + "; ".join(warnings[:5])
        )
    io.atomic_write_bytes(out, pdf.read_bytes())
    shutil.rmtree(workdir, ignore_errors=True)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return warnings


def _natural(path: Path) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", Path(path).name))
