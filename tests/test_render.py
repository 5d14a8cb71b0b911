"""Rendering: every table and figure from the fixture results, the compiled PDF, and the guarantees
(missing inputs named, LaTeX escaping, numbers equal to their source registers)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from paired_rollouts import records
from paired_rollouts.cli import main as cli_main
from paired_rollouts.errors import UserError
from paired_rollouts.render import document, figures, tables, tex
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from records_fixtures import predictions_register, run_registers, synthetic_study

FIX = Path(__file__).parent / "fixtures" / "render"
RES = FIX / "results"
HAVE_LATEX = shutil.which("pdflatex") is not None
REQUIRE_LATEX = bool(os.environ.get("PAIRED_ROLLOUTS_REQUIRE_LATEX"))


def need_latex() -> None:
    if not HAVE_LATEX:
        if REQUIRE_LATEX:
            pytest.fail("pdflatex is required (PAIRED_ROLLOUTS_REQUIRE_LATEX is set) but not installed")
        pytest.skip("pdflatex not installed")


def files(pattern: str) -> list[Path]:
    return sorted(RES.glob(pattern))


INPUTS = {
    # episodes, manifests, group_stats, luck, registers, decisions, predictions: see _study below
    "probe": files("probe/*.json"),
    "rules": [Path(__file__).parents[1] / "prereg" / "decision_rules.yaml"],
    # surrogate scales (copied from a tiny_surrogate run)
    "power": [RES / "decisions/power.json"],
    "calibration": [RES / "models/surrogate/calibration.json"],
    "prediction": [RES / "decisions/prediction_a3.json"],  # amendment A3's register (table 17)
    "published_curves": [Path(__file__).parents[1] / "data" / "published" / "curves.yaml"],
    "published": [Path(__file__).parents[1] / "data" / "published" / "paper.yaml"],
}


@pytest.fixture(scope="session", autouse=True)
def _study(tmp_path_factory):
    """Episodes, manifests, luck shares, group statistics, run registers, decisions and the predictions
    register, every one written by the stats stage's own code on a small synthetic study, so that a
    renamed register key fails here (the probe, power and calibration registers are fixtures; the power
    curves are computed from the fixture's decision registers)."""
    out = tmp_path_factory.mktemp("study")
    INPUTS.update(synthetic_study(out))
    from test_power_curves import power_curves_register

    decisions = tmp_path_factory.mktemp("power_curves") / "results" / "decisions"
    decisions.mkdir(parents=True)
    INPUTS["power_curves"] = [power_curves_register(decisions)]
    INPUTS["predictions"] = [
        predictions_register(
            INPUTS["decisions"],
            INPUTS["probe"],
            out / "results/decisions/predictions.json",
            Path(__file__).parents[1] / "prereg" / "tier_rules.yaml",
        )
    ]
    yield


def given_for(number: int) -> dict[str, list[Path]]:
    keys = tables.table_inputs(number)
    given = {k: INPUTS[k] for k in keys if k in INPUTS and INPUTS[k] and INPUTS[k][0].exists()}
    if number == 3:
        given["decisions"] = [INPUTS["decisions"][0]]
    if number == 4:
        given["decisions"] = [INPUTS["decisions"][1]]
    return given


def rows_of(text: str) -> list[list[str]]:
    """The data rows of a rendered tabular, split into cells (parse-back for the number checks)."""
    body = text.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    out = []
    for line in body.splitlines():
        line = line.strip()
        if not line.endswith("\\\\") or line.startswith(("\\multicolumn", "\\midrule", "\\cmidrule")):
            continue
        out.append([c.strip() for c in line[:-2].split(" & ")])
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("render")
    paths: dict[str, Path] = {}
    for number in tables.TABLES:
        text = tables.render_table(number, given_for(number), "stand-in")
        path = out / f"table{number}.tex"
        path.write_text(text)
        paths[f"table{number}"] = path
    for name, spec in figures.FIGURES.items():
        given = {k: INPUTS[k] for k in spec.keys}
        pdf, png = figures.render_figure(name, given, "stand-in", out / f"{name}.pdf")
        assert png.is_file() and png.stat().st_size > 1000
        paths[name] = pdf
    return paths


# ---------------------------------------------------------------- rendering and compiling


def test_every_table_renders_with_caption_sources_and_scale(rendered):
    for number in tables.TABLES:
        text = rendered[f"table{number}"].read_text()
        assert "\\toprule" in text and "\\bottomrule" in text, number
        caption = re.search(r"\\caption\[.*?\]\{(.*)\}\n\\label", text, re.S).group(1)
        assert "Scale: stand-in." in caption and "Sources:" in caption, number
        assert "results" in caption or "prereg" in caption or "fixtures" in caption, number


def test_document_compiles_without_overfull_boxes(rendered, tmp_path):
    need_latex()
    tex_files = [rendered[f"table{n}"] for n in tables.TABLES]
    figs = [rendered[name] for name in figures.FIGURES]
    out = tmp_path / "paper" / "tables.pdf"
    warnings = document.build_document(
        tex_files, figs, RES / "prereg/verification.json", "cpu", "stand-in", "abc123def456", out, strict=True
    )
    assert warnings == []
    data = out.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 20000
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
        for needle in (
            "abc123def456",
            "cpu",
            "stand-in",
            "6dc709de6f36f008",
            "verified",
            "Registered outcomes",
            "Outcome-noise probe traces",
        ):
            assert needle in text, needle


def table3_document(rendered, out: Path, **kwargs) -> list[str]:
    """The PDF of table 3 alone (cpu, stand-in, commit abc) under the fixture study's verification."""
    return document.build_document(
        [rendered["table3"]], [], RES / "prereg/verification.json", "cpu", "stand-in", "abc", out, **kwargs
    )


def test_document_opens_with_the_published_versus_reproduced_summary(rendered, tmp_path):
    need_latex()
    comparison = tmp_path / "comparison.json"
    assert (
        cli_main(
            [
                "compare",
                "--results",
                str(RES),
                "--published",
                str(INPUTS["published"][0]),
                "--tasks-dir",
                str(Path(__file__).parents[1] / "data" / "tasks"),
                "--scale-name",
                "standin",
                "--scale",
                "stand-in",
                "--out",
                str(comparison),
            ]
        )
        == 0
    )
    summary = json.loads(comparison.read_text())["summary"]
    out = tmp_path / "tables.pdf"
    table3_document(rendered, out, strict=True, comparison=comparison)
    text = subprocess.run(
        ["pdftotext", "-layout", str(out), "-"], capture_output=True, text=True, check=True
    ).stdout
    first = text.split("\f")[1]  # the page after the title page
    assert "Published versus reproduced" in first
    assert (
        f"{summary['reproduced']} of {summary['entries']} published numbers reproduced within rounding"
        in first
    )
    assert "a mismatch with the published numbers is expected" in " ".join(first.split())
    assert summary["reproduced"] >= 1 and summary["entries"] > 200


def test_tables_3_and_4_show_the_published_values_under_the_reproduced(rendered):
    from paired_rollouts.compare.published import load_published

    pub = {e.id: e.value for e in load_published(INPUTS["published"][0]).entries}
    for number, cond in ((3, "c2"), (4, "c4")):
        text = rendered[f"table{number}"].read_text()
        assert "Published (the paper" in text
        published_rows = rows_of("\\midrule\n" + text.split("Published (the paper", 1)[1].split("\n", 1)[1])
        seeds = [r for r in published_rows if r[0] in ("0", "1", "2")]
        assert [r[0] for r in seeds] == ["0", "1", "2"]
        for row in seeds:
            s = row[0]
            assert fmt.parse_number(row[1]) == pytest.approx(round(pub[f"{cond}.auc.paired.s{s}"], 3))
            assert fmt.parse_number(row[2]) == pytest.approx(round(pub[f"{cond}.auc.independent.s{s}"], 3))
            assert fmt.parse_number(row[3]) == pytest.approx(round(pub[f"{cond}.auc.difference.s{s}"], 3))
        mean = next(r for r in published_rows if r[0] == "mean")
        assert fmt.parse_number(mean[3]) == pytest.approx(pub[f"{cond}.auc.difference.mean"])


def test_document_is_reproducible(rendered, tmp_path):
    need_latex()
    args = (
        [rendered["table3"], rendered["table5"]],
        [rendered["spurious_variance"]],
        RES / "prereg/verification.json",
        "cpu",
        "stand-in",
        "abc",
    )
    document.build_document(*args, tmp_path / "a.pdf")
    document.build_document(*args, tmp_path / "b.pdf")
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()


def test_latex_error_shows_log_tail_and_source(tmp_path):
    need_latex()
    bad = tmp_path / "table1.tex"
    bad.write_text("\\begin{table}\\undefinedcommandxyz\\end{table}\n")
    with pytest.raises(UserError) as err:
        document.build_document(
            [bad], [], RES / "prereg/verification.json", "cpu", "stand-in", "abc", tmp_path / "out.pdf"
        )
    message = str(err.value)
    assert "LaTeX failed" in message and "main.tex" in message and "undefinedcommandxyz" in message
    assert not (tmp_path / "out.pdf").exists()


def test_figures_are_deterministic(tmp_path):
    given = {"probe": INPUTS["probe"]}
    figures.render_figure("probe_ratios", given, "stand-in", tmp_path / "a.pdf")
    figures.render_figure("probe_ratios", given, "stand-in", tmp_path / "b.pdf")
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert "Gradient-probe variance ratios" in figures.read_caption(tmp_path / "a.pdf")


# ---------------------------------------------------------------- numbers equal their sources


def test_table3_numbers_equal_the_decision_register(rendered):
    register = json.loads((INPUTS["decisions"][0]).read_text())["H2a"]
    rows = rows_of(rendered["table3"].read_text())
    seeds = register["seeds"]
    for i, seed in enumerate(seeds):
        cells = rows[i]
        assert fmt.parse_number(cells[0]) == seed
        expected = [
            register["auc_paired"][i],
            register["auc_independent"][i],
            register["auc_difference_by_seed"][i],
            register["final_paired_by_seed"][i],
            register["final_independent_by_seed"][i],
            register["final_difference_by_seed"][i],
        ]
        got = [fmt.parse_number(c) for c in cells[1:7]]
        assert got == pytest.approx([round(v, 3) for v in expected], abs=1e-9)
    mean_row = rows[len(seeds)]
    means = [f"{stat}_mean" for stat in ("auc_paired", "auc_independent", "auc_difference")] + [
        f"final_{stat}_mean" for stat in ("paired", "independent", "difference")
    ]
    assert [fmt.parse_number(c) for c in mean_row[1:7]] == pytest.approx(
        [round(register[key], 3) for key in means], abs=1e-9
    )
    ci_row = rows[len(seeds) + 1]
    assert fmt.parse_interval(ci_row[3]) == pytest.approx(
        tuple(round(v, 3) for v in register["auc_difference_ci95"])
    )


def test_table10_numbers_equal_group_stats(rendered):
    rows = {r[0]: r for r in rows_of(rendered["table10"].read_text()) if r[0].startswith("\\texttt")}
    for path in INPUTS["group_stats"]:
        stats = json.loads(path.read_text())
        row = rows["\\texttt{" + fmt.escape(stats["run"]) + "}"]
        assert fmt.parse_number(row[1]) == stats["groups"]
        assert fmt.parse_number(row[2]) == pytest.approx(round(stats["zero_variance_frac"], 3))
        assert fmt.parse_number(row[3]) == stats["all_correct_groups"]
        assert fmt.parse_number(row[4]) == stats["spurious_groups"]
        assert fmt.parse_number(row[5]) == pytest.approx(round(stats["spurious_among_all_correct"], 3))
    # pooled rows (C2 paired, C2 independent, C4 paired, C4 independent): sums of the runs' counts
    pooled = [r for r in rows_of(rendered["table10"].read_text()) if r[0] == "\\textit{pooled}"]
    runs = [json.loads(p.read_text()) for p in INPUTS["group_stats"]]
    order = [(c, a) for c in ("C2", "C4") for a in ("paired", "independent")]
    assert len(pooled) == len(order)
    for (condition, arm), row in zip(order, pooled, strict=True):
        members = [r for r in runs if (r["condition"], r["arm"]) == (condition, arm)]
        groups = sum(r["groups"] for r in members)
        correct = sum(r["all_correct_groups"] for r in members)
        spurious = sum(r["spurious_groups"] for r in members)
        zero = sum(r["zero_variance_groups"] for r in members)
        assert [fmt.parse_number(c) for c in row[1:5]] == pytest.approx(
            [groups, round(zero / groups, 3), correct, spurious]
        )
        assert fmt.parse_number(row[5]) == (pytest.approx(round(spurious / correct, 3)) if correct else None)


def test_table10_pooled_rows_must_pool_the_runs_shown(tmp_path):
    """A curves register pooled over other runs than the group statistics given is one error line."""
    c2 = next(p for p in INPUTS["curves"] if p.stem == "c2")
    data = json.loads(c2.read_text())
    data["arms"]["paired"]["group_stats"]["runs"] = ["c2-paired-s0"]
    path = tmp_path / "c2.json"
    path.write_text(json.dumps(data))
    given = {"group_stats": INPUTS["group_stats"], "curves": [path]}
    # pooled over fewer runs than the arm's: its reader refuses it (records/curves.py check_arithmetic)
    with pytest.raises(UserError, match="arms.paired.group_stats.runs are c2-paired-s0, the arm's runs"):
        tables.render_table(10, given, "stand-in")
    del data["arms"]["paired"]["group_stats"]
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="built with --group-stats"):
        tables.render_table(10, given, "stand-in")


def test_table9_numbers_equal_the_episode_records(rendered):
    outcomes: dict[tuple, dict[str, list[bool]]] = {}
    for path in INPUTS["episodes"]:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r["phase"] == "periodic" and r["seed"] == 0 and r["condition"] == "C2":
                outcomes.setdefault((r["arm"], r["step"], r["regime"]), {}).setdefault(
                    r["task_id"], []
                ).append(r["true_success"])

    def value(arm, step, regime):
        tasks = outcomes[(arm, step, regime)]
        return sum(sum(v) / len(v) for v in tasks.values()) / len(tasks)

    rows = rows_of(rendered["table9"].read_text())
    for row in rows[:-1]:
        step = int(fmt.parse_number(row[0]))
        for k, regime in enumerate(("clean", "at_training", "challenge")):
            p, i = value("paired", step, regime), value("independent", step, regime)
            assert fmt.parse_number(row[1 + 3 * k]) == pytest.approx(round(p, 3))
            assert fmt.parse_number(row[2 + 3 * k]) == pytest.approx(round(i, 3))
            assert fmt.parse_number(row[3 + 3 * k]) == pytest.approx(round(p - i, 3), abs=1e-9)
    # the AUC row's differences are the curves register's, which pairs exactly these two runs
    c2 = json.loads(next(p for p in INPUTS["curves"] if p.stem == "c2").read_text())["pairs"]["0"]
    assert (c2["paired"], c2["independent"]) == ("c2-paired-s0", "c2-independent-s0")
    for k, regime in enumerate(("clean", "at_training", "challenge")):
        assert fmt.parse_number(rows[-1][3 + 3 * k]) == pytest.approx(round(c2["auc_difference"][regime], 3))


def test_table5_ratios_equal_the_probe_register(rendered):
    probe = json.loads((RES / "probe/c2-paired-s0.json").read_text())
    text = rendered["table5"].read_text()
    section = text.split("c2-paired-s0}}", 1)[1].split("H1b", 1)[0]
    rows = [r for r in rows_of("\\midrule\n" + section + "\\bottomrule") if r and r[0].isdigit()]
    for row in rows:
        cp = probe["checkpoints"][row[0]]
        assert fmt.parse_number(row[2]) == pytest.approx(
            round(cp["outcome"]["mean_centered"]["ratio_paired_over_independent"], 3)
        )
        assert fmt.parse_number(row[3]) == pytest.approx(
            round(cp["transition"]["mean_centered"]["ratio_paired_over_independent"], 3)
        )


# ---------------------------------------------------------------- errors name the file and key


def test_missing_input_file_is_named(tmp_path):
    missing = tmp_path / "nowhere" / "c2.json"
    with pytest.raises(UserError, match=re.escape(str(missing))):
        tables.render_table(3, {"decisions": [missing]}, "stand-in")


def test_missing_required_key_is_named_with_its_file(tmp_path):
    data = json.loads((INPUTS["decisions"][0]).read_text())
    broken = copy.deepcopy(data)
    del broken["H2a"]["auc_paired"]
    path = tmp_path / "c2.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(UserError) as err:
        tables.render_table(3, {"decisions": [path]}, "stand-in")
    assert str(path) in str(err.value) and "H2a.auc_paired" in str(err.value)
    del data["seeds"]
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match="missing key 'seeds'"):
        tables.render_table(3, {"decisions": [path]}, "stand-in")


def _edited_copy(source: Path, tmp_path: Path, edit) -> Path:
    data = json.loads(source.read_text())
    edit(data)
    path = tmp_path / source.parent.name / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def _first_row(d):
    return d["predictions"][0]


# (input key, table or figure, edit, the key the one error line names): each register the typed readers
# of the records package read for render (and for the stats code that reads it back) refuses another shape.
MALFORMED = [
    ("group_stats", 10, lambda d: d.pop("G"), "missing key 'G'"),
    ("group_stats", 10, lambda d: d.update(zero_variance_frac="0.25"), "'zero_variance_frac'"),
    ("group_stats", 10, lambda d: d["seed_sharing"].update(passes="yes"), "seed_sharing"),
    ("predictions", 6, lambda d: _first_row(d).update(verdict="passed"), "predictions[0]"),
    ("predictions", 6, lambda d: d["H4"].pop("decided"), "H4"),
    ("power", 13, lambda d: d["hypotheses"]["H2a"].pop("power"), "hypotheses.H2a"),
    ("power", 13, lambda d: d.update(draws=1000.5), "'draws'"),
    ("power_curves", 19, lambda d: d.update(draws="400"), "'draws'"),
    ("power_curves", "power_curves", lambda d: d["hypotheses"]["H3"].pop("spreads"), "hypotheses.H3"),
    ("calibration", 14, lambda d: d["targets"][0].update(achieved="0.81"), "targets[0]"),
    ("calibration", 14, lambda d: d["theta"].pop(), "parameter names"),
    ("curves", 8, lambda d: d["arms"]["paired"]["curves"]["clean"].update(last=0.5), "key 'curves'"),
    ("curves", 8, lambda d: d["arms"]["paired"].pop("final"), "missing key 'final'"),
    ("curves", "curves_c2", lambda d: d["arms"]["paired"]["curve_runs"].pop("clean"), "curve_runs"),
]


@pytest.mark.parametrize("key, target, edit, needle", MALFORMED)
def test_a_malformed_register_is_one_line_naming_the_file_and_key(
    tmp_path, capsys, key, target, edit, needle
):
    path = _edited_copy(INPUTS[key][0], tmp_path, edit)
    if isinstance(target, int):
        given = given_for(target)
        command = ["render", "table", "--number", str(target), "--out", str(tmp_path / "t.tex")]
    else:
        given = {k: INPUTS[k] for k in figures.FIGURES[target].keys}
        command = ["render", "figure", "--name", target, "--out", str(tmp_path / "f.pdf")]
    given[key] = [path] + [p for p in given[key][1:]]
    args = [arg for k, paths in given.items() for p in paths for arg in ("--input", f"{k}={p}")]
    assert cli_main([*command, *args, "--scale", "s"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and needle in err, err
    assert "regenerate it with 'paired-rollouts " in err
    assert not any(tmp_path.glob("[tf].*"))


def test_table8_numbers_equal_the_episode_records(rendered):
    """Each run's final success (mean over test tasks of the task means) and the arms' means over seeds,
    recomputed here from the episode records the run and curves registers were built from."""
    outcomes: dict[str, dict[str, dict[str, list[bool]]]] = {}
    for path in INPUTS["episodes"]:
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r["phase"] == "final":
                by_task = outcomes.setdefault(r["run"], {}).setdefault(r["regime"], {})
                by_task.setdefault(r["task_id"], []).append(r["true_success"])

    def final(run, regime):
        tasks = outcomes[run].get(regime)
        return sum(sum(v) / len(v) for v in tasks.values()) / len(tasks) if tasks else None

    regimes = ["clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge", "at_training"]
    rows = rows_of(rendered["table8"].read_text())
    by_label: dict[str, list[str]] = {}
    means = []
    for row in rows:
        if row[0] == "\\textit{mean}":
            means.append(row)
        else:
            by_label[row[0]] = row
    order = [("c4", "paired"), ("c4", "independent"), ("c2", "paired"), ("c2", "independent")]
    assert len(means) == len(order)
    for (condition, arm), mean_row in zip(order, means, strict=True):
        runs = [f"{condition}-{arm}-s{seed}" for seed in (0, 1)]
        for k, regime in enumerate(regimes):
            values = [final(run, regime) for run in runs]
            for run, value in zip(runs, values, strict=True):
                cell = by_label["\\texttt{" + run + "}"][1 + k]
                assert fmt.parse_number(cell) == (None if value is None else pytest.approx(round(value, 3)))
            expected = None if None in values else sum(values) / len(values)
            got = fmt.parse_number(mean_row[1 + k])
            assert got == (None if expected is None else pytest.approx(round(expected, 3))), (arm, regime)
    # the difference rows (C4 arm - C2 arm; no C0 here) are the C4 curves register's, of these means
    for arm in ("paired", "independent"):
        row = by_label[f"C4 {arm} $-$ C2 {arm}"]
        for k, regime in enumerate(regimes):
            c4, c2 = ([final(f"{c}-{arm}-s{seed}", regime) for seed in (0, 1)] for c in ("c4", "c2"))
            expected = None if None in c4 + c2 else sum(c4) / 2 - sum(c2) / 2
            got = fmt.parse_number(row[1 + k])
            assert got == (None if expected is None else pytest.approx(round(expected, 3), abs=1e-9))


def test_table8_differences_must_be_against_the_register_given(tmp_path):
    """A C4 curves register whose differences were taken against another C2 register is refused."""
    c2 = next(p for p in INPUTS["curves"] if p.stem == "c2")
    c4 = next(p for p in INPUTS["curves"] if p.stem == "c4")
    data = json.loads(c2.read_text())
    data["arms"]["paired"]["final"]["clean"] = 0.5
    other = tmp_path / "c2.json"
    other.write_text(json.dumps(data))
    given = {"registers": INPUTS["registers"], "curves": [other, c4]}
    with pytest.raises(UserError, match="sha256 differs"):
        tables.render_table(8, given, "stand-in")


def test_curves_register_of_other_runs_is_refused(tmp_path):
    """A mean over seeds beside single seeds that are not the ones averaged is an error, not a figure."""
    path = _edited_copy(
        next(p for p in INPUTS["curves"] if p.stem == "c2"),
        tmp_path,
        lambda d: d["arms"]["paired"]["runs"].pop(),
    )
    registers = INPUTS["registers"]
    # fewer runs than the registers it names: its reader refuses it (records/curves.py check_arithmetic)
    with pytest.raises(UserError, match=re.escape(f"{path}: arms.paired.curve_runs.at_training is 2")):
        tables.render_table(8, {"registers": registers, "curves": [path]}, "s")
    c2 = next(p for p in INPUTS["curves"] if p.stem == "c2")
    fewer = [p for p in registers if p.parent.name != "c2-paired-s1"]
    with pytest.raises(
        UserError, match="the C2 paired means are over c2-paired-s0, c2-paired-s1 but the run"
    ):
        tables.render_table(8, {"registers": fewer, "curves": [c2]}, "s")
    with pytest.raises(UserError, match=re.escape(str(path))):
        figures.render_figure(
            "curves_c2", {"registers": registers, "curves": [path]}, "s", tmp_path / "c.pdf"
        )
    assert not (tmp_path / "c.pdf").exists()


def test_render_reads_no_episode_records():
    """Every table and figure reads registers only: no --input key takes episode records."""
    keys = {k for n in tables.TABLES for k in tables.table_inputs(n)}
    keys |= {k for spec in figures.FIGURES.values() for k in spec.keys}
    assert "episodes" not in keys
    assert not hasattr(src, "load_episodes")


def test_probe_missing_nested_key(tmp_path):
    data = json.loads((RES / "probe/c2-paired-s1.json").read_text())
    del data["checkpoints"]["8"]["outcome"]["lhs_mean"]
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"missing key 'checkpoints\.8\.outcome\.lhs_mean'"):
        tables.render_table(12, {"probe": [path]}, "stand-in")


def test_unknown_and_missing_keys_and_settings():
    with pytest.raises(UserError, match="unknown --input key"):
        tables.render_table(5, {"probe": INPUTS["probe"], "bogus": INPUTS["probe"]}, "x")
    with pytest.raises(UserError, match="missing --input probe"):
        tables.render_table(5, {}, "x")
    with pytest.raises(UserError, match="unknown --settings"):
        tables.render_table(5, {"probe": INPUTS["probe"]}, "x", {"nope": 1})
    with pytest.raises(UserError, match="tables are 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15"):
        tables.render_table(99, {}, "x")
    with pytest.raises(UserError, match="missing --input prediction"):  # table 17: amendment A3's register
        tables.render_table(17, {}, "x")
    with pytest.raises(UserError, match="KEY=PATH"):
        src.parse_input_args(["decisions"])


def test_cli_writes_table_and_reports_errors(tmp_path, capsys):
    def table3(decisions: Path, scale: str, out: Path) -> int:
        argv = ["--number", "3", "--input", f"decisions={decisions}", "--scale", scale, "--out", str(out)]
        return cli_main(["render", "table", *argv])

    out = tmp_path / "tables" / "table3.tex"
    assert table3(INPUTS["decisions"][0], "stand-in", out) == 0
    assert "C2 primary endpoints" in out.read_text()
    bad = tmp_path / "absent.json"
    assert table3(bad, "s", tmp_path / "t.tex") == 1
    assert str(bad) in capsys.readouterr().err
    assert not (tmp_path / "t.tex").exists()


# ---------------------------------------------------------------- escaping


SPECIAL = "r&d 50% a_b #1 $x {y} ~z ^w back\\slash"


def test_escape_every_special_character():
    escaped = fmt.escape(SPECIAL)
    for raw, want in (
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
        ("\\", r"\textbackslash{}"),
    ):
        assert want in escaped, raw
    assert fmt.escape(escaped) == escaped  # Tex is never escaped twice
    with pytest.raises(TypeError):
        fmt.escape(0.5)


def test_templates_refuse_unescaped_values(tmp_path):
    template = tmp_path / "t.tex.j2"
    template.write_text("\\VAR{value}\n")
    env = tex.environment(tmp_path)
    with pytest.raises(TypeError, match="unescaped"):
        env.get_template("t.tex.j2").render(value="a_b")
    assert env.get_template("t.tex.j2").render(value=fmt.Tex("ok")) == "ok\n"
    template.write_text("\\VAR{value|tex} \\VAR{missing_name|tex}\n")
    with pytest.raises(Exception, match="missing_name"):
        tex.environment(tmp_path).get_template("t.tex.j2").render(value="x")


def test_special_characters_in_run_names_and_scale_compile(tmp_path):
    manifest = json.loads(INPUTS["manifests"][0].read_text())
    manifest["run"] = SPECIAL
    manifest["hardware"]["gpu"] = "gpu & co_1"
    path = tmp_path / "runs" / "odd" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(manifest))
    text = tables.render_table(1, {"manifests": [path]}, "stand-in 100% {test} #1")
    assert fmt.escape(SPECIAL) in text and r"100\% \{test\} \#1" in text
    assert "gpu \\& co\\_1" in text
    need_latex()
    main = tmp_path / "t.tex"
    main.write_text(
        "\\documentclass{article}\\usepackage[T1]{fontenc}\\usepackage{lmodern,booktabs,array}"
        "\\begin{document}\n" + text + "\\end{document}\n"
    )
    pdf, log = document.compile_latex(tmp_path, "t.tex")
    assert pdf.is_file() and "! " not in log


# ---------------------------------------------------------------- formatting and special cases


def test_number_formats():
    notes = fmt.Notes()
    assert fmt.prop(0.12345) == "0.123"
    assert fmt.prop(-0.0004) == "0.000"
    assert (
        fmt.signed(0.0539) == "$+$0.054" and fmt.signed(-0.0016) == "$-$0.002" and fmt.signed(0.0) == "0.000"
    )
    assert fmt.pp(0.0539) == "5.4" and fmt.signed_pp(-0.0016) == "$-$0.2"
    assert fmt.interval([-0.0039, 0.0779]) == "[$-$0.004, $+$0.078]"
    assert fmt.interval([None, None], notes=notes).startswith("---")
    assert fmt.integer(19200) == "19{,}200" and fmt.integer(2400) == "2400"
    assert fmt.censored_steps(None, True, 100) == "$>$100" and fmt.censored_steps(37.5, False, 100) == "37.5"
    assert fmt.scaled(81906.34, 1e5) == "0.819"
    assert fmt.missing(notes, "not run") == "---\\textsuperscript{b}"
    assert fmt.prop(None, notes=notes, reason="not run") == "---\\textsuperscript{b}"
    assert [m for m, _ in notes.items] == ["a", "b"]
    assert fmt.parse_number("$-$0.002") == -0.002 and fmt.parse_number("---\\textsuperscript{a}") is None


def test_table11_replication_and_not_run(tmp_path):
    alone = tables.render_table(11, {"cross_stack": INPUTS["cross_stack"]}, "s")
    assert "not run" in alone
    replica = FIX / "replica" / "results"
    other = run_registers(replica, tmp_path / "replica")
    manifests = INPUTS["manifests"] + sorted((tmp_path / "replica").glob("runs/*/manifest.json"))
    register = tmp_path / "cross_stack.json"
    command = ["cross-stack", "--manifests", *map(str, manifests)]
    assert (
        cli_main([*command, "--registers", *map(str, INPUTS["registers"] + other), "--out", str(register)])
        == 0
    )
    text = tables.render_table(11, {"cross_stack": [register]}, "s")
    data = json.loads(register.read_text())
    assert [(r["condition"], r["arm"], r["seed"]) for r in data["replications"]] == [("C4", "paired", 1)]
    runs = data["replications"][0]["runs"]
    assert data["replications"][0]["difference"]["auc"] == pytest.approx(runs[0]["auc"] - runs[1]["auc"])
    rows = rows_of(text)
    assert [r[0] for r in rows] == [
        "\\texttt{c4-paired-s1}",
        "\\texttt{c4-paired-s1}",
        "\\textit{difference}",
    ]
    assert "H100" in rows[0][1] + rows[1][1]
    for k in range(2, 6):
        a, b, d = (fmt.parse_number(rows[i][k]) for i in range(3))
        assert d == pytest.approx(round(a - b, 3), abs=0.0015)


def test_not_computed_hypothesis_shows_reason(tmp_path):
    data = json.loads((INPUTS["decisions"][0]).read_text())
    data["H2a"] = {"hypothesis": "H2a", "passes": None, "computed": False, "reason": "no admitted seed pair"}
    path = tmp_path / "c2.json"
    path.write_text(json.dumps(data))
    text = tables.render_table(3, {"decisions": [path]}, "s")
    assert "no admitted seed pair" in text and "---\\textsuperscript{a}" in text
    assert "no admitted seed pair" in tables.render_table(2, {"decisions": [path]}, "s")


def test_table6_rows_are_the_predictions_register(tmp_path):
    register = json.loads(INPUTS["predictions"][0].read_text())
    rows = rows_of(tables.render_table(6, {"predictions": INPUTS["predictions"]}, "s"))
    assert [r[0] for r in rows] == [p["id"] for p in register["predictions"]]
    assert [r[-1] for r in rows] == [fmt.escape(p["verdict"]) for p in register["predictions"]]
    assert [fmt.parse_number(r[2]) for r in rows] == [
        round(p["confidence"], 2) for p in register["predictions"]
    ]


def test_help_lists_each_tables_inputs(capsys):
    with pytest.raises(SystemExit):
        cli_main(["render", "table", "--help"])
    out = capsys.readouterr().out
    assert "12 Outcome-noise probe traces: probe*" in out and "decisions*" in out


def _undecided_register(tmp_path):
    """The C2 register ``decide`` writes when only seed 0's pair of the design's two is given."""
    from test_stats_decisions import decide

    root = INPUTS["decisions"][0].parents[2]  # the synthetic study: ROOT/results/decisions/c2.json
    path = tmp_path / "decisions" / "c2.json"
    path.parent.mkdir(parents=True)
    data = decide(root, "C2", ["c2-paired-s0", "c2-independent-s0"], out_name=str(path))
    assert data["decided"] is False and data["H2a"]["passes"] is None
    return path, data["H2a"]["reason"]


def test_table2_says_not_decided_on_partial_evidence(tmp_path):
    """A register decided on fewer seed pairs than the design used to print a bold pass in table 2."""
    path, reason = _undecided_register(tmp_path)
    text = tables.render_table(2, {"decisions": [path]}, "s")
    h2a = text[text.index("H2a") : text.index("H3")]
    assert (
        "not decided" in h2a and "\\textbf{pass}" not in text.split("\\midrule", 1)[-1].split("H1b")[0] + h2a
    )
    assert "1 of 2 seed pairs" in text


def test_title_page_says_the_study_is_incomplete(rendered, tmp_path):
    need_latex()
    path, _ = _undecided_register(tmp_path)
    assert document.study_status([INPUTS["decisions"][0]]) == ""  # the fixture c2 register is complete
    status = document.study_status([path])
    assert status.startswith("STUDY INCOMPLETE: C2: 1 of 2 seed pairs admitted, H1a, H2a, H3, H5 not decided")
    out = tmp_path / "doc.pdf"
    table3_document(rendered, out, decisions=[path])
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
        assert "STUDY INCOMPLETE" in text


def test_added_table_content_p13_within_ratios_sw_traces_and_residual(rendered):
    probe = json.loads((RES / "probe/c2-paired-s0.json").read_text())
    t2 = rendered["table2"].read_text()
    assert t2.count(r"\textbf{P13}") == 2 and "transition-noise MC ratio below one" in t2
    base = probe["checkpoints"][str(probe["steps"][0])]["outcome"]["lhs_over_rhs"]
    assert f"$L/R$ = {base:.3f}" in t2
    rows5 = rows_of(rendered["table5"].read_text())
    first = rows5[0]
    cp = probe["checkpoints"][str(probe["steps"][0])]
    assert fmt.parse_number(first[9]) == pytest.approx(round(cp["counts"]["rho_zero_fraction"], 3))
    assert fmt.parse_number(first[7]) == pytest.approx(
        round(cp["outcome"]["mean_centered"]["ratio_within_paired_over_independent"], 3)
    )
    t12 = rendered["table12"].read_text()
    residual = cp["outcome"]["mean_centered"]["identity_residual"]
    mantissa, exponent = f"{residual:.2e}".split("e")
    assert f"${mantissa}\\times 10^{{{int(exponent)}}}$" in t12
    # table 12's clean success and non-zero share are the probe register's, shown as written
    for row, step in zip(rows_of(t12), probe["steps"], strict=False):
        outcome = probe["checkpoints"][str(step)]["outcome"]
        assert fmt.parse_number(row[5]) == pytest.approx(round(outcome["clean_success"], 3))
        assert fmt.parse_number(row[7]) == pytest.approx(round(outcome["nonzero_share"], 3))


def test_outcome_probe_writes_the_clean_success_and_mixed_group_share():
    """The probe register's writer derives table 12's shares from the clean groups' success counts."""
    import numpy as np
    from paired_rollouts.probe.enumeration import outcome_probe

    rng = np.random.default_rng(3)
    g, counts = 4, [0, 1, 4, 2, 4]
    scores = [rng.normal(size=(g, 3)) for _ in counts]
    success = [np.arange(g) < k for k in counts]
    rho = [np.ones(g) for _ in counts]
    out = outcome_probe([s @ s.T for s in scores], success, rho, 4.0, 0.1, scores_by_group=scores)
    assert out["success_counts"] == counts
    assert out["clean_success"] == pytest.approx(11 / 20)  # 11 successes of 5 groups x 4
    assert out["nonzero_share"] == pytest.approx(2 / 5)  # k = 1 and k = 2 are mixed


# ---------------------------------------------------------------- registered tiers render under their own names

# Two registered tiers' decision registers as `paired-rollouts decide --comparison` wrote them at the
# tiny_surrogate scale (copied from a tiny_surrogate run): blocking arms and an unscaled reward.
TIERS = RES / "decisions" / "tiers"


def _sections(text: str) -> list[str]:
    """The section rows of a rendered table (\\multicolumn{N}{@{}l}{\\textit{...}})."""
    return re.findall(r"\\multicolumn\{\d+\}\{@\{\}l\}\{\\textit\{(.*?)\}\}", text)


def test_a_tier_registers_runs_render_under_their_own_arms():
    """Table 7 given a tier's C2 register (c2-blocking): its runs c2-blocking_paired-s0, ... are shown
    under their own arms, in the design's order (they used to fall into one 'other' section)."""
    text = tables.render_table(7, {"decisions": [TIERS / "c2-blocking.json"]}, "s")
    assert _sections(text) == ["clean (C0)", "blocking", "blocking\\_paired"]
    rows = [r[0] for r in rows_of(text)]
    label = "\\texttt{{{}}}".format
    blocking = rows.index(label("c2-blocking-s0"))
    paired = rows.index(label("c2-blocking\\_paired-s0"))
    assert rows[blocking + 1] == label("c2-blocking-s1")
    assert rows[paired + 1] == label("c2-blocking\\_paired-s1")
    assert blocking < paired and "other" not in text


def _figure_text(pdf: Path) -> list[str]:
    """The text lines of a figure PDF (titles, legend labels, tick labels)."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) not installed")
    result = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True)
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def test_final_success_draws_every_tier_run_under_its_arm(tmp_path):
    """Figure final_success draws a tier register's runs under their arms (c4-paired-scale_none-s0 is a
    paired run, c2-blocking_paired-s1 a blocking_paired one); none is dropped."""
    from paired_rollouts.records import read_decision_register

    given = {"decisions": [TIERS / "c4-scale_none.json"]}
    figures.render_figure("final_success", given, "s", tmp_path / "f.pdf")
    lines = _figure_text(tmp_path / "f.pdf")
    assert {"paired", "independent", "clean (C0)"} <= set(lines)  # the legend: every arm has a bar
    scale_none = figures.final_by_arm(read_decision_register(TIERS / "c4-scale_none.json"))
    assert list(scale_none) == ["paired", "independent", "clean"]
    assert [len(v) for v in scale_none.values()] == [2, 2, 1]
    blocking = figures.final_by_arm(read_decision_register(TIERS / "c2-blocking.json"))
    assert list(blocking) == ["clean", "blocking", "blocking_paired"]


def test_luck_share_figure_shows_a_tier_condition_in_its_own_panel(tmp_path):
    """Luck-share files of a tier's runs (c2r-paired-s0, ...) are drawn in a C2r panel after the tier-1
    conditions (they used to share a panel titled '?')."""
    from test_stats_decisions import luck, make_pools, make_run

    pools = make_pools(tmp_path)
    runs = [make_run(tmp_path, "C2r", arm, 0, pools) for arm in ("paired", "independent")]
    for run in runs:
        luck(tmp_path, run)
    files = sorted(tmp_path.glob("results/diagnostics/*/luck-step0.json")) + INPUTS["luck"]
    figures.render_figure("luck_share", {"luck": files}, "s", tmp_path / "luck.pdf")
    lines = _figure_text(tmp_path / "luck.pdf")
    assert [t for t in lines if t in ("C2", "C4", "C2r", "?")] == ["C2", "C4", "C2r"]  # the panel titles
    series = figures.luck_series(files)
    assert list(series) == ["C2", "C4", "C2r"]
    assert list(series["C2r"]) == ["c2r-independent-s0", "c2r-paired-s0"]


def test_the_document_states_the_checkout_commit_it_was_compiled_from(rendered, tmp_path):
    """Without --commit, `render document` reads the checkout's commit when it compiles (the workflow no
    longer runs git when it parses); outside a git checkout the title page says unknown."""
    need_latex()
    repo = Path(__file__).resolve().parents[1]
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    command = [
        "render",
        "document",
        "--tables",
        str(rendered["table3"]),
        "--verification",
        str(RES / "prereg/verification.json"),
        "--profile",
        "cpu",
        "--scale",
        "stand-in",
    ]
    for where, expected in ((repo, head), (tmp_path, "unknown")):
        out = tmp_path / f"{where.name}.pdf"
        cwd = Path.cwd()
        try:
            os.chdir(where)
            assert cli_main([*command, "--out", str(out)]) == 0
        finally:
            os.chdir(cwd)
        text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
        assert expected in text, (where, expected)


def test_the_findings_page_states_each_conditions_result_in_words_before_the_comparison(rendered, tmp_path):
    """The page after the title states, from the decision registers, each condition's AUC gap, its seed
    pairs and every registered verdict, before the published-versus-reproduced summary."""
    need_latex()
    out = tmp_path / "doc.pdf"
    undecided, _ = _undecided_register(tmp_path)
    table3_document(rendered, out, decisions=[*INPUTS["decisions"], undecided])
    text = subprocess.run(["pdftotext", str(out), "-"], capture_output=True, text=True, check=True).stdout
    page = " ".join(text.split("\f")[1].split())
    assert page.startswith("Findings What this run found (stand-in)")
    for path in INPUTS["decisions"]:
        raw = json.loads(Path(path).read_text())
        block = raw["H2a"] if "H2a" in raw else raw["H2b"]
        gap, positive, seeds = (
            block["auc_difference_mean"],
            block["auc_difference_positive_seeds"],
            block["seeds"],
        )
        assert f"{raw['condition']} (" in page
        assert f"validation AUC {gap:+.3f}" in page
        assert f"ahead in {positive} of {len(seeds)}" in page
        for name in ("H1a", "H2a", "H2b", "H3", "H5"):
            if name in raw and raw[name].get("passes") is not None:
                verdict = "pass" if raw[name]["passes"] else "not pass"
                assert re.search(rf"\b{name}(, H[0-9a-z]+)* (does |do )?{verdict}", page), (name, verdict)
    # the partial register's hypotheses are named as not decided, never as passing or failing
    assert "H1a, H2a, H3, H5 are not decided (not decided: 1 of 2 seed pairs" in page


def test_findings_say_helped_only_when_the_interval_lies_above_zero(tmp_path):
    raw = json.loads(INPUTS["decisions"][0].read_text())
    path = tmp_path / "c2.json"
    cases = (
        (0.01, 0.05, "Pairing helped"),
        (-0.02, 0.03, "No difference detected"),
        (-0.05, -0.01, "Pairing hurt"),
    )
    for low, high, words in cases:
        raw["H2a"]["auc_difference_ci95"] = [low, high]
        path.write_text(json.dumps(raw))
        finding = document.condition_finding(records.read_decision_register(path))
        assert words in finding and f"95 % interval {low:+.3f} to {high:+.3f}" in finding
        assert sum(w in finding for _, _, w in cases) == 1
