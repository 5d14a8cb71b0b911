"""The repository stands alone: no reference points outside it, and every doc reference resolves.

A clone holds only what git tracks, so every file, docstring and comment may cite only files that are
tracked, and every ``docs/X.md#anchor`` must name an existing heading (GitHub's slug rules).
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()
SKIP_DIRS = ("data/", ".git/", ".venv/", "results/", ".snakemake/")

# Files and texts outside the repository that earlier versions cited.
OUTSIDE = [
    (re.compile(r"\.\./shared\b|(?<![\w.-])shared/[\w.-]|(?<![\w.])/work/"), "a path outside the repository"),
    (
        re.compile(r"\b(backoffice_spec|analysis_spec|stack_notes|slurm_local\.md|tsa_local\.md)"),
        "a reference document that is not in the repository",
    ),
    (
        re.compile(r"\b(analysis |backoffice |the )?spec(ification)?[ -](sections? |§ ?)?\d", re.IGNORECASE),
        "a numbered section of a spec that is not in the repository",
    ),
    (
        re.compile(r"\bspec (appendix|B\.\d)", re.IGNORECASE),
        "an appendix of a spec that is not in the repository",
    ),
]
# Text that is part of an output file: changing it would change the bytes of a result.
ALLOWED = {
    ("workflow_src/paired_rollouts/agents/reference.py", "scripted reference agent (spec 6)"),
}
MD_REF = re.compile(r"(?<![\w./#-])((?:\.\./|[\w.-]+/)*[\w.-]+\.md)(#[\w-]+)?")
# "docs/records.md section 8.4", "docs/records.md` 8.4", "docs/records.md sections 3.1": a numbered heading
SECTION_REF = re.compile(r"\b(docs/[\w.-]+\.md)`?,? (?:sections? )?(\d+(?:\.\d+)*)\b(?![\w/-])")
LOCAL_ANCHOR = re.compile(r"\]\((#[\w-]+)\)")


@cache
def tracked_files() -> tuple[str, ...]:
    """``git ls-files`` of the checkout; a plain walk where git or the repository is unavailable."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = [str((Path(d) / f).relative_to(ROOT).as_posix()) for d, _, fs in os.walk(ROOT) for f in fs]
    assert files, "no files found"
    return tuple(sorted(f for f in files if not f.startswith(SKIP_DIRS) and (ROOT / f).is_file()))


def text_files() -> dict[str, str]:
    texts = {}
    for name in tracked_files():
        path = ROOT / name
        if name == SELF:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # binary: time-stamp tokens, certificates, images
            continue
        if "\0" not in text:
            texts[name] = text
    return texts


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: rendered text, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links render as their text
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def headings(path: Path) -> tuple[list[str], set[str]]:
    """The headings of a Markdown file (outside code fences) and their anchors, duplicates numbered."""
    titles, anchors, seen = [], set(), {}
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        match = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            title = match.group(1)
            base = slug(title)
            n = seen.get(base, 0)
            seen[base] = n + 1
            titles.append(title)
            anchors.add(base if n == 0 else f"{base}-{n}")
    return titles, anchors


def resolve(ref: str, source: str) -> Path | None:
    """A Markdown path as the repository root or the citing file's folder would resolve it."""
    for base in (ROOT, (ROOT / source).parent):
        candidate = (base / ref).resolve()
        if candidate.is_file() and candidate.is_relative_to(ROOT):
            return candidate
    if "/" not in ref:  # a bare file name: some tracked file of that name
        hits = [ROOT / f for f in tracked_files() if Path(f).name == ref]
        return hits[0] if len(hits) == 1 else None
    return None


def test_no_reference_leaves_the_repository() -> None:
    problems = []
    for name, text in text_files().items():
        for number, line in enumerate(text.splitlines(), 1):
            for pattern, why in OUTSIDE:
                match = pattern.search(line)
                if match and not any(name == f and allowed in line for f, allowed in ALLOWED):
                    problems.append(f"{name}:{number}: {match.group(0)!r} is {why}")
    assert not problems, "\n".join(problems)


def test_every_markdown_reference_and_anchor_resolves() -> None:
    problems, checked = [], 0
    for name, text in text_files().items():
        for number, line in enumerate(text.splitlines(), 1):
            for match in MD_REF.finditer(line):
                ref, anchor = match.group(1), match.group(2)
                if ref.startswith(("http", "www.")) or "{" in ref:
                    continue
                target = resolve(ref, name)
                checked += 1
                if target is None:
                    problems.append(f"{name}:{number}: {ref} is not a file of the repository")
                elif anchor and anchor[1:] not in headings(target)[1]:
                    problems.append(f"{name}:{number}: {ref}{anchor}: no such heading in {ref}")
            if name.endswith(".md"):
                for match in LOCAL_ANCHOR.finditer(line):
                    checked += 1
                    if match.group(1)[1:] not in headings(ROOT / name)[1]:
                        problems.append(f"{name}:{number}: {match.group(1)}: no such heading in this file")
            for match in SECTION_REF.finditer(line):
                checked += 1
                target, section = ROOT / match.group(1), match.group(2)
                numbered = re.compile(rf"{re.escape(section)}(\.|\s|$)")
                if not target.is_file() or not any(numbered.match(t) for t in headings(target)[0]):
                    problems.append(f"{name}:{number}: {match.group(0)}: no heading numbered {section}")
    assert not problems, "\n".join(problems)
    assert checked > 50, f"only {checked} references found; the scan is broken"


def test_slugs_follow_github() -> None:
    assert slug("Noise schedules") == "noise-schedules"
    assert slug("H2a and H2b") == "h2a-and-h2b"
    assert slug("6.4 `paired-rollouts probe bandit --json`") == "64-paired-rollouts-probe-bandit---json"
    assert slug("Outcome noise and Equation 5") == "outcome-noise-and-equation-5"
    assert slug("1. Luck share: `results/diagnostics/{run}/luck-step{N}.json`") == (
        "1-luck-share-resultsdiagnosticsrunluck-stepnjson"
    )
