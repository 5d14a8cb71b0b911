"""One PDF with every table and figure, compiled with latexmk/pdflatex in a temporary folder.

The title page states the commit, profile and scale, and the pre-registration's imprint and whether
its verification passed (read from ``results/prereg/verification.json``). The PDF is reproducible:
no dates in it (``SOURCE_DATE_EPOCH`` fixed, pdfTeX's info dates and trailer ID suppressed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from paired_rollouts import io
from paired_rollouts.errors import UserError
from paired_rollouts.render import figures as figs
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render import tex
from paired_rollouts.render.format import Tex

LOG_TAIL_LINES = 40


def _token_rows(doc: src.Doc) -> list[dict[str, Tex]]:
    """Time-stamp tokens, read leniently: prereg's ``records[].tokens[]`` or a top-level ``tokens``."""
    tokens: list[tuple[str, dict]] = []
    for record in doc.opt("records", default=[]) or []:
        if isinstance(record, dict):
            label = str(record.get("record", ""))
            tokens.extend((label, t) for t in record.get("tokens", []) or [] if isinstance(t, dict))
    tokens.extend(("", t) for t in doc.opt("tokens", default=[]) or [] if isinstance(t, dict))
    rows = []
    for label, token in tokens:
        authority = token.get("authority") or token.get("name") or token.get("tsa") or token.get("url") or "?"
        if label and label != "freeze":
            authority = f"{authority} ({label})"
        time = token.get("gen_time") or token.get("time") or token.get("time_stamp") or "time unknown"
        verdicts = [token[k].get("ok") for k in ("rfc3161_client", "openssl") if isinstance(token.get(k), dict)]
        if verdicts:
            ok: bool | None = all(bool(v) for v in verdicts)
        else:
            ok = token.get("verified", token.get("ok"))
        status = "verified" if ok is True else ("NOT verified" if ok is False else "status not recorded")
        rows.append({"authority": fmt.escape(str(authority)), "time": fmt.escape(str(time)),
                     "status": fmt.escape(status)})
    return rows


def verification_context(path: Path) -> dict[str, Any]:
    doc = src.load_verification(path)
    passes = doc.opt("passes")
    if passes is None:
        passes = doc.opt("verified")
    if passes is None:
        raise UserError(f"{path}: missing key 'passes' (or 'verified') in the pre-registration verification")
    documents = []
    for entry in doc.opt("documents", default=[]) or []:
        if not isinstance(entry, dict):
            continue
        sha = str(entry.get("sha256", ""))
        matches = entry.get("matches")
        status = "" if matches is None else ("(matches)" if matches else "(CHANGED since the freeze)")
        documents.append({"path": fmt.escape(str(entry.get("path", "?"))), "sha": fmt.escape(sha[:16]),
                          "status": fmt.escape(status)})
    imprint = doc.opt("imprint") or doc.opt("sha256") or "not recorded"
    status = "verified" if passes else "NOT verified"
    if doc.opt("test_authority"):
        status += " (local test time-stamp authority: stand-in only)"
    failures = doc.opt("failures") or []
    note = ""
    if failures:
        note = "Verification failures: " + "; ".join(str(f) for f in failures[:5])
    return {
        "prereg_status": fmt.escape(status),
        "imprint": fmt.escape(str(imprint)),
        "documents": documents,
        "tokens": _token_rows(doc),
        "prereg_note": fmt.escape(note),
        "verification": str(path),
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
        commands = [["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error",
                     "-norc", main]]
    elif shutil.which("pdflatex"):
        commands = [["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-file-line-error", main]] * 3
    else:
        raise UserError("pdflatex not found: install texlive-latex-base texlive-latex-recommended "
                        "texlive-fonts-recommended lmodern latexmk (README, set-up)")
    log_path = workdir / f"{stem}.log"
    for command in commands:
        try:
            result = subprocess.run(command, cwd=workdir, env=_latex_env(), capture_output=True, text=True,
                                    timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise UserError(f"{workdir / main}: LaTeX did not finish within {timeout} s") from exc
        if result.returncode != 0:
            log = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else result.stdout
            tail = "\n".join(log.splitlines()[-LOG_TAIL_LINES:])
            raise UserError(f"LaTeX failed on {workdir / main} (kept for inspection; log {log_path}):\n{tail}")
    pdf = workdir / f"{stem}.pdf"
    if not pdf.is_file():
        raise UserError(f"{workdir / main}: LaTeX produced no PDF; see {log_path}")
    return pdf, log_path.read_text(encoding="utf-8", errors="replace")


def overfull_boxes(log: str) -> list[str]:
    return [line.strip() for line in log.splitlines() if line.startswith(("Overfull \\hbox", "Overfull \\vbox"))]


def study_status(decisions: list[Path]) -> str:
    """'' when every decision register decided every hypothesis on the whole design, else the notice
    the title page carries (the study is incomplete: no hypothesis is decided on partial evidence)."""
    problems = []
    for path in decisions:
        doc = src.load_decision(Path(path))
        undecided = [name for name in ("H1a", "H2a", "H2b", "H3", "H5")
                     if isinstance(doc.opt(name), dict) and doc.opt(name, "passes") is None]
        if doc.opt("complete") is not True or undecided:
            pairs = len(doc.opt("seed_pairs") or [])
            design = doc.opt("design_seeds")
            of = f" of {len(design)}" if isinstance(design, list) else ""
            problems.append(f"{doc.req('condition')}: {pairs}{of} seed pairs admitted"
                            + (f", {', '.join(undecided)} not decided" if undecided else ""))
    if not problems:
        return ""
    return ("STUDY INCOMPLETE: " + "; ".join(problems) + ". Incomplete runs are rerun, never analysed; the "
            "registered outcomes below are not decisions.")


def build_document(tables: list[Path], figure_files: list[Path], verification: Path, profile: str, scale: str,
                   commit: str, out: Path, strict: bool = False, decisions: list[Path] | None = None) -> list[str]:
    """Compile the document to ``out``; returns the overfull-box warnings (an error when ``strict``)."""
    for path in [*tables, *figure_files, verification, *(decisions or [])]:
        if not Path(path).is_file():
            raise UserError(f"{path}: file not found; build it first")
    names = [Path(t).name for t in tables]
    if len(set(names)) != len(names):
        raise UserError("--tables: two tables with the same file name")
    context = verification_context(Path(verification))
    context["study_status"] = fmt.escape(study_status(list(decisions or [])))
    workdir = Path(tempfile.mkdtemp(prefix="paired-rollouts-render-"))
    (workdir / "tables").mkdir()
    (workdir / "figures").mkdir()
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
        figure_ctx.append({
            "file": Tex(f"figures/{target}"),
            "short": fmt.escape(caption.split(". ")[0].rstrip(".")),
            "caption": Tex(fmt.escape(caption).replace("/", r"/\allowbreak{}")),
            "label": fmt.escape(re.sub(r"[^A-Za-z0-9]+", "-", name)),
        })
    text = tex.render("document.tex.j2", commit=fmt.escape(commit), profile=fmt.escape(profile),
                      scale=fmt.escape(scale), tables=table_refs, figures=figure_ctx, **context)
    (workdir / "main.tex").write_text(text, encoding="utf-8")
    pdf, log = compile_latex(workdir)
    warnings = overfull_boxes(log)
    if warnings and strict:
        raise UserError(f"{workdir / 'main.tex'}: {len(warnings)} overfull box(es): " + "; ".join(warnings[:5]))
    io.atomic_write_bytes(out, pdf.read_bytes())
    shutil.rmtree(workdir, ignore_errors=True)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return warnings


def _natural(path: Path) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", Path(path).name))
