"""Snakemake's own report (`snakemake --report`), built from a small results tree and opened in a real
browser (headless Chromium): every report()-flagged output is there, and the page renders."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from records_fixtures import predictions_register, synthetic_study
from workflow_runs import REPO, copy_repo, snakemake

FIX = REPO / "tests" / "fixtures" / "render" / "results"
TINY = ("--profile", "cpu", "--configfile", ".test/config/config.yaml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


# Figures only surrogate scales draw (rules/render.smk FIGURES): their inputs are surrogate registers.
SURROGATE_FIGURES = ("surrogate_curves", "power_curves")


def paired(*args: str, cwd: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "paired_rollouts", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(cwd / "workflow_src")),
    )
    assert result.returncode == 0, result.stderr[-2000:]


def ledger_inputs(work: Path) -> list[str]:
    """The benchmark files the ledger job reads, from the dry run's printout of that job."""
    text = snakemake(*TINY, "-n", "--forceall", "results/tiny/ledger.json", cwd=work).stdout
    block = text.split("rule ledger:", 1)[1]
    line = next(x for x in block.splitlines() if x.strip().startswith("input:"))
    return [p for p in line.split("input:", 1)[1].strip().split(", ") if "/benchmarks/" in p]


def touch_study(work: Path) -> None:
    """Pretend the tiny study ran: every planned output and benchmark file exists, in DAG order."""
    summary = snakemake(*TINY, "-n", "--forceall", "--summary", "all", cwd=work).stdout
    for line in summary.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) >= 5 and fields[0] != "output_file":
            (work / fields[0]).parent.mkdir(parents=True, exist_ok=True)
            (work / fields[0]).touch()
    for path in ledger_inputs(work):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(
            "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
            "12.5\t0:00:12\t310.2\t900.0\t300.0\t305.0\t1.0\t2.0\t95.0\t11.9\n"
        )
    snakemake(*TINY, "--touch", "--forceall", "all", cwd=work)


def fill_report_outputs(work: Path) -> None:
    """Give the report-flagged outputs real content, made by the real commands from the fixture registers."""
    res = work / "results" / "tiny"
    decisions = [FIX / "decisions" / "c2.json", FIX / "decisions" / "c4.json"]
    probes = sorted((FIX / "probe").glob("*.json"))
    inputs = {
        "decisions": decisions,
        "probe": probes,
        "manifests": sorted((FIX / "runs").glob("*/manifest.json")),
        "group_stats": sorted((FIX / "runs").glob("*/group_stats.json")),
        "luck": sorted((FIX / "diagnostics").glob("*/luck-step*.json")),
        "episodes": sorted((FIX / "evals").glob("*/*.jsonl")),
        "rules": [work / "prereg" / "decision_rules.yaml"],
        "published": [work / "data/published/paper.yaml"],
    }
    # the registers the stats stage writes, built by its own code on a small synthetic study
    built = work / "fixture-study"
    inputs.update(synthetic_study(built))
    decisions = inputs["decisions"]
    inputs["predictions"] = [
        predictions_register(
            decisions,
            probes,
            built / "results/decisions/predictions.json",
            work / "prereg" / "tier_rules.yaml",
        )
    ]
    from paired_rollouts.render import figures, tables

    # The LLM scales render tables 1-12 and the paper's figures; the surrogate's own (13, 14, 17, 19,
    # surrogate_curves, power_curves) are tested with the surrogate.
    for number in [n for n in tables.TABLES if n <= 12]:
        keys = tables.table_inputs(number)
        given = {k: inputs[k] for k in keys if inputs.get(k)}
        if number == 3:
            given["decisions"] = decisions[:1]
        if number == 4:
            given["decisions"] = decisions[1:]
        args = [a for k, paths in given.items() for p in paths for a in ("--input", f"{k}={p}")]
        paired(
            "render",
            "table",
            "--number",
            str(number),
            *args,
            "--scale",
            "tiny test",
            "--out",
            str(res / f"tables/table{number}.tex"),
            "--html",
            str(res / f"tables/table{number}.html"),
            cwd=work,
        )
    for name, spec in figures.FIGURES.items():
        if name in SURROGATE_FIGURES:
            continue
        args = [a for k in spec.keys for p in inputs[k] for a in ("--input", f"{k}={p}")]
        paired(
            "render",
            "figure",
            "--name",
            name,
            *args,
            "--scale",
            "tiny test",
            "--out",
            str(res / f"figures/{name}.pdf"),
            cwd=work,
        )
    for d in decisions:
        shutil.copyfile(d, res / "decisions" / d.name)
    shutil.copyfile(probes[0], res / "probe" / "a.json")
    paired(
        "compare",
        "--results",
        str(FIX),
        "--published",
        "data/published/paper.yaml",
        "--tasks-dir",
        "data/tasks",
        "--scale-name",
        "tiny",
        "--scale",
        "tiny test",
        "--out",
        str(res / "comparison.json"),
        "--html",
        str(res / "comparison.html"),
        cwd=work,
    )
    bench = [str(work / p) for p in ledger_inputs(work)]
    paired(
        "ledger",
        "--benchmarks",
        *bench,
        "--results",
        str(res),
        "--accelerator",
        "cpu",
        "--runs",
        "5",
        "--published",
        "data/published/paper.yaml",
        "--out",
        str(res / "ledger.json"),
        "--html",
        str(res / "ledger.html"),
        cwd=work,
    )
    tex = [str(res / f"tables/table{n}.tex") for n in tables.TABLES if n <= 12]
    figs = [str(res / f"figures/{name}.pdf") for name in figures.FIGURES if name not in SURROGATE_FIGURES]
    paired(
        "render",
        "document",
        "--tables",
        *tex,
        "--figures",
        *figs,
        "--verification",
        str(FIX / "prereg" / "verification.json"),
        "--comparison",
        str(res / "comparison.json"),
        "--ledger",
        str(res / "ledger.json"),
        "--profile",
        "cpu",
        "--scale",
        "tiny test",
        "--commit",
        "test",
        "--out",
        str(res / "paper/tables.pdf"),
        cwd=work,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    if not shutil.which("pdflatex"):
        pytest.skip("pdflatex not installed (scripts/setup.sh installs it)")
    work = copy_repo(tmp_path_factory.mktemp("report"))
    touch_study(work)
    fill_report_outputs(work)
    snakemake(*TINY, "--report", "results/tiny/report.zip", cwd=work)
    out = work / "report"
    with zipfile.ZipFile(work / "results" / "tiny" / "report.zip") as archive:
        archive.extractall(out)
    return out


def test_report_holds_every_table_figure_decision_comparison_and_ledger(report):
    names = {p.name for p in report.rglob("*") if p.is_file()}
    for number in range(1, 13):
        assert f"table{number}.html" in names, number
    for figure in (
        "curves_c2",
        "curves_c4",
        "luck_share",
        "spurious_variance",
        "probe_ratios",
        "final_success",
        "probe_decomposition",
    ):
        assert f"{figure}.png" in names, figure
    assert {"c2.json", "c4.json", "a.json", "comparison.html", "ledger.html", "tables.pdf"} <= names
    page = next(report.rglob("report.html")).read_text(encoding="utf-8", errors="replace")
    for category in (
        "Tables",
        "Figures",
        "Decisions",
        "Published versus reproduced",
        "Cost ledger",
        "Gradient probe",
        "Training runs",
    ):
        assert category in page, category
    # each training run's caption names its TensorBoard folder and the command that shows every run
    import re

    captions = re.sub(r"<[^>]+>", "", page)  # docutils wraps each word of a literal in its own span
    assert "results/tiny/runs/c2-paired-s0/tensorboard/" in captions
    assert "tensorboard --logdir results/tiny/runs" in captions
    ledger = next(p for p in report.rglob("ledger.html")).read_text()
    assert "Published budget: about 27000 episodes and 16.3 GPU-hours per run on H100" in ledger


def test_report_opens_in_headless_chromium(report, tmp_path):
    if not CHROMIUM:
        if os.environ.get("PAIRED_ROLLOUTS_REQUIRE_BROWSER"):
            pytest.fail("chromium is required (PAIRED_ROLLOUTS_REQUIRE_BROWSER is set) but not installed")
        pytest.skip("chromium not installed (scripts/setup.sh installs it)")
    html = next(report.rglob("report.html")).resolve()
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=15000",
        "--window-size=1400,1000",
    ]
    shot = tmp_path / "report.png"
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", html.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    from PIL import Image

    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 1000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # a rendered page, not a blank one
    # the report's script ran: outside <script>, the static page only says "Loading"; rendered, its
    # navigation lists the categories and the workflow description
    import re

    visible = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)
    for text in (
        "Published versus reproduced",
        "Cost ledger",
        "Gradient probe",
        "Tables",
        "Luck Is Not Skill",
    ):
        assert text in visible, text
