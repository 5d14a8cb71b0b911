"""The regime map (target `regime_map`): cell statistics against a hand computation on a tiny map, the
grid's refusals, rerunning only new cells, the reader refusing a tampered map, the map's page in the
study's document (surrogate scales only), and a tiny map on SLURM."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from paired_rollouts.config_check import check_config
from paired_rollouts.errors import UserError
from paired_rollouts.pairing.bootstrap import BOOTSTRAP_SEED
from paired_rollouts.settings import Settings, scale_block, stage_settings
from paired_rollouts.surrogate import regime_map as rm
from workflow_runs import REPO, copy_repo, snakemake

CALIBRATION = REPO / "tests/fixtures/render/results/models/surrogate/calibration.json"
TINY = "tiny_surrogate"


def _config() -> dict:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    test = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())
    config["scales"].update(test["scales"])
    return config


def _cell_settings() -> Settings:
    """What the tiny scale's map-cell job is given (the grid's factor lists left out)."""
    sections = ("training", "diagnostics", "probe", "surrogate", "regime_map")
    return Settings.parse(stage_settings(_config(), TINY, "cpu", *sections))


def _grid() -> Settings:
    return Settings.parse({"regime_map": scale_block(_config(), TINY)["regime_map"]})


@pytest.fixture(scope="module")
def tiny_map(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The tiny map (2 cells x 3 seed pairs) measured and assembled, as its command writes it."""
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.surrogate.run import load_calibration

    folder = tmp_path_factory.mktemp("map")
    theta = load_calibration(CALIBRATION)
    settings = _cell_settings()
    cells = []
    for cell in rm.map_cells(_grid().regime_map):
        record = rm.measure_cell(cell, theta0=theta, tasks_dir=str(REPO / "data/tasks"), settings=settings)
        atomic_write_json(folder / "cells" / f"{cell.id}.json", record)
        cells.append(record)
    body = rm.assemble(sorted((folder / "cells").glob("*.json")), _grid().regime_map, "tiny surrogate")
    atomic_write_json(folder / "regime_map.json", body)
    return folder, cells


def _hand_auc(steps: list[int], values: list[float]) -> float:
    area = sum((steps[i + 1] - steps[i]) * (values[i] + values[i + 1]) / 2 for i in range(len(steps) - 1))
    return area / (steps[-1] - steps[0])


def _hand_interval(gaps: list[float], resamples: int) -> list[float]:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, len(gaps), size=(resamples, len(gaps)))
    means = sorted(sum(gaps[i] for i in row) / len(gaps) for row in draws)

    def percentile(q: float) -> float:  # numpy's linear interpolation, by hand
        pos = q / 100 * (len(means) - 1)
        low = int(pos)
        high = min(low + 1, len(means) - 1)
        return means[low] + (means[high] - means[low]) * (pos - low)

    return [percentile(2.5), percentile(97.5)]


def _hand_luck(tables: list) -> float:
    values = []
    for table in tables:
        k, m = len(table), len(table[0])
        rows = [sum(r) / m for r in table]
        grand = sum(rows) / k
        between = m / (k - 1) * sum((r - grand) ** 2 for r in rows)
        within = sum((x - rows[i]) ** 2 for i, r in enumerate(table) for x in r) / (k * (m - 1))
        env = max(0.0, (between - within) / m)
        if env + within > 0:
            values.append(env / (env + within))
    return sum(values) / len(values)


def test_cell_statistics_equal_a_hand_computation(tiny_map) -> None:
    folder, cells = tiny_map
    assert len(cells) == 2 and {c["factors"]["noise"] for c in cells} == {"transition", "outcome"}
    for cell in cells:
        steps, pairs = cell["eval_steps"], cell["seed_pairs"]
        assert steps == [0, 1, 2, 3] and pairs == 3
        curves = cell["curves"]
        # both runs of a pair start from the same policy and meet the same evaluation draws
        assert [c[0] for c in curves["paired"]] == [c[0] for c in curves["independent"]]
        auc = {arm: [_hand_auc(steps, c) for c in curves[arm]] for arm in rm.ARMS}
        for arm in rm.ARMS:
            assert cell["auc"][arm] == pytest.approx(auc[arm], abs=1e-12)
        gaps = [a - b for a, b in zip(auc["paired"], auc["independent"], strict=True)]
        assert cell["auc_gap"]["mean"] == pytest.approx(sum(gaps) / pairs, abs=1e-12)
        assert cell["auc_gap"]["interval"] == pytest.approx(
            _hand_interval(gaps, cell["resamples"]), abs=1e-12
        )
        finals = [curves["paired"][s][-1] - curves["independent"][s][-1] for s in range(pairs)]
        assert cell["final_gap"]["mean"] == pytest.approx(sum(finals) / pairs, abs=1e-12)
        lo, hi = cell["auc_gap"]["interval"]
        assert cell["verdict"] == ("helps" if lo > 0 else "hurts" if hi < 0 else "no_difference")
        assert cell["luck_share"]["lam"] == pytest.approx(_hand_luck(cell["luck_share"]["tables"]), abs=1e-12)
        assert cell["predictions"]["contrast_reduction"] == cell["luck_share"]["lam"]
        assert cell["predictions"]["variance_reduction"] == pytest.approx(
            1 - cell["gradient_variance"]["ratio"]
        )
    outcome = next(c for c in cells if c["factors"]["noise"] == "outcome")
    # Equation 5: the mean-centred paired trace is below the independent one exactly when lhs < rhs
    eq5 = outcome["eq5"]
    assert (
        eq5["holds"] == (eq5["lhs"] < eq5["rhs"]) == (outcome["gradient_variance"]["mean_centered_ratio"] < 1)
    )
    assert outcome["predictions"]["eq5_margin"] == pytest.approx(1 - eq5["lhs"] / eq5["rhs"])
    assert next(c for c in cells if c["factors"]["noise"] == "transition")["eq5"] is None
    summary = json.loads((folder / "regime_map.json").read_text())["summary"]
    assert sum(summary["verdicts"].values()) == 2
    best = max(cells, key=lambda c: c["auc_gap"]["mean"])
    assert summary["largest_gain"]["cell_id"] == best["cell_id"]


def test_spearman_equals_a_hand_computation() -> None:
    # ranks with a tie: x -> 1, 2.5, 2.5, 4; y -> 2, 1, 3, 4; Pearson of the ranks by hand
    x, y = [0.1, 0.5, 0.5, 0.9], [0.2, -0.3, 0.4, 0.8]
    rx, ry = [1, 2.5, 2.5, 4], [2, 1, 3, 4]
    mx, my = sum(rx) / 4, sum(ry) / 4
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    assert rm.spearman(x, y) == pytest.approx(num / den, abs=1e-12)
    assert rm.spearman([1, 1, 1], [1, 2, 3]) is None and rm.spearman([1, 2], [1, 2]) is None


def test_a_cell_is_reproducible_to_the_byte(tiny_map) -> None:
    from paired_rollouts.surrogate.run import load_calibration

    folder, cells = tiny_map
    cell = rm.Cell.parse(cells[0]["factors"])
    again = rm.measure_cell(
        cell,
        theta0=load_calibration(CALIBRATION),
        tasks_dir=str(REPO / "data/tasks"),
        settings=_cell_settings(),
    )
    keep = {k: v for k, v in cells[0].items() if k != "cpu_seconds"}
    assert json.dumps({k: v for k, v in again.items() if k != "cpu_seconds"}, sort_keys=True) == json.dumps(
        keep, sort_keys=True
    )


def test_the_reader_refuses_a_tampered_map_or_cell(tiny_map, tmp_path: Path) -> None:
    from paired_rollouts.records.regime_map import read_regime_map, read_regime_map_cell

    folder, _ = tiny_map
    read_regime_map(folder / "regime_map.json")
    shutil.copytree(folder, tmp_path / "map")
    path = tmp_path / "map/regime_map.json"
    data = json.loads(path.read_text())
    data["summary"]["verdicts"]["helps"] += 1
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"regime_map\.json: summary verdicts do not follow from its cells"):
        read_regime_map(path)
    data = json.loads((folder / "regime_map.json").read_text())
    data["cells"][0]["auc_gap"]["mean"] += 0.01
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"cells\[0\]: auc_gap .* does not follow from its per-pair gaps"):
        read_regime_map(path)
    cell_path = next((tmp_path / "map/cells").glob("*.json"))
    cell = json.loads(cell_path.read_text())
    cell["curves"]["paired"][0][-1] += 0.5
    cell_path.write_text(json.dumps(cell))
    with pytest.raises(UserError, match=r"auc does not follow from the curves"):
        read_regime_map_cell(cell_path)
    path.write_text((folder / "regime_map.json").read_text())
    with pytest.raises(UserError, match=r"missing or not the file the map read"):
        read_regime_map(path)


def test_the_map_command_writes_the_map_and_its_figure_together(tiny_map, tmp_path: Path, capsys) -> None:
    """`surrogate map` checks the map and draws its heatmaps before it writes anything, then writes the map,
    the PDF and the PNG together. Base: a --figure that could not be written (a folder in its place) left
    regime_map.json and the PNG behind; a map written away from its cells/ was refused but left there."""
    from paired_rollouts.cli import main

    folder, _ = tiny_map
    work = tmp_path / "map"
    shutil.copytree(folder / "cells", work / "cells")
    cells = sorted(str(p) for p in (work / "cells").glob("*.json"))
    grid = json.dumps({"regime_map": scale_block(_config(), TINY)["regime_map"]})
    argv = ["surrogate", "map", "--cells", *cells, "--settings", grid, "--scale", "tiny surrogate"]
    figure = ["--figure", str(work / "heatmap.pdf")]
    (work / "heatmap.pdf").mkdir()
    assert main([*argv, "--out", str(work / "regime_map.json"), *figure]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "heatmap.pdf: is a directory" in err[0], err
    assert sorted(p.name for p in work.iterdir()) == ["cells", "heatmap.pdf"]
    (work / "heatmap.pdf").rmdir()
    assert main([*argv, "--out", str(work / "regime_map.json"), *figure]) == 0
    assert (work / "regime_map.json").read_bytes() == (folder / "regime_map.json").read_bytes()
    assert sorted(p.name for p in work.iterdir()) == [
        "cells",
        "heatmap.pdf",
        "heatmap.png",
        "regime_map.json",
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert main([*argv, "--out", str(elsewhere / "regime_map.json")]) == 1
    assert "missing or not the file the map read" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_the_reader_refuses_a_maps_cell_edited_consistently_away_from_its_file(
    tiny_map, tmp_path: Path
) -> None:
    """A map whose copy of a cell was edited with its gap block, verdict and summary recomputed (the cell
    files untouched) used to be read, and the document's map page said pairing helped there."""
    from paired_rollouts.records.regime_map import _gap_block, read_regime_map

    folder, _ = tiny_map
    shutil.copytree(folder, tmp_path / "map")
    path = tmp_path / "map/regime_map.json"
    data = json.loads(path.read_text())
    cell, resamples = data["cells"][0], data["grid"]["resamples"]
    cell["auc_gap"] = {"per_pair": [g + 0.2 for g in cell["auc_gap"]["per_pair"]]}
    cell["auc_gap"].update(_gap_block(cell["auc_gap"]["per_pair"], resamples))
    cell["verdict"] = rm.verdict(cell["auc_gap"]["interval"])
    data["summary"] = rm.summarize(data["cells"])
    path.write_text(json.dumps(data))
    with pytest.raises(
        UserError, match=r"regime_map\.json: cells\[0\] \(cell-[0-9a-f]+\) is not its cell file's summary"
    ):
        read_regime_map(path)


def _pdf_pages(path: Path) -> list[str]:
    """The PDF's pages as text (pdftotext), whitespace collapsed."""
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return [" ".join(page.split()) for page in text.split("\f")]


def _need_pdf_tools() -> None:
    if shutil.which("pdflatex") is None or shutil.which("pdftotext") is None:
        if os.environ.get("PAIRED_ROLLOUTS_REQUIRE_LATEX"):
            pytest.fail("pdflatex and pdftotext are required (PAIRED_ROLLOUTS_REQUIRE_LATEX is set)")
        pytest.skip("pdflatex or pdftotext not installed")


MAP_HEADING = "When pairing helps: the regime map"


def test_the_maps_page_is_in_the_document_and_only_where_a_map_is_given(tiny_map, tmp_path: Path) -> None:
    """tables.pdf at a surrogate scale carries the map's page after the title page, its words and numbers
    read from the map (through its reader); the document without a map (LLM scales) has no such page."""
    from paired_rollouts.render import document

    _need_pdf_tools()
    folder, _ = tiny_map
    verification = REPO / "tests/fixtures/render/results/prereg/verification.json"
    args = ([], [], verification, "cpu", "tiny surrogate", "abc123")
    with_map = tmp_path / "surrogate.pdf"
    assert document.build_document(*args, with_map, strict=True, regime_map=folder / "regime_map.json") == []
    pages = _pdf_pages(with_map)
    page = next(p for p in pages if p.startswith(MAP_HEADING))
    assert pages.index(page) == 1  # right after the title page (no findings or comparison given here)
    raw = json.loads((folder / "regime_map.json").read_text())
    s, grid = raw["summary"], raw["grid"]
    assert page.startswith(f"{MAP_HEADING} (tiny surrogate) The map has {s['cells']} cells")
    assert f"each with {grid['seed_pairs']} seed pairs" in page
    verdicts = s["verdicts"]
    assert f"in {verdicts['helps']} cells, hurts in {verdicts['hurts']}" in page
    best = s["largest_gain"]
    assert f"the largest AUC gap of any cell is {best['auc_gap']:+.3f}" in page
    # the Spearman table: every quantity with the cells it is defined on (two cells: no correlation)
    assert "Which quantity predicts the gain" in page
    for name, entry in s["spearman_with_auc_gap"].items():
        assert entry["all"]["spearman"] is None  # fewer than three cells
        assert re.search(rf"{name.replace('_', ' ')}: .*?\({entry['all']['cells']}\)", page), name
    assert "none can be ranked" in page and "Regime map." in page
    # a tampered map is refused before LaTeX runs: the page reads the map through its reader
    tampered = tmp_path / "map"
    shutil.copytree(folder, tampered)
    raw["summary"]["largest_gain"]["auc_gap"] += 0.01
    (tampered / "regime_map.json").write_text(json.dumps(raw))
    with pytest.raises(UserError, match=r"summary largest_gain do not follow from its cells"):
        document.build_document(*args, tmp_path / "bad.pdf", regime_map=tampered / "regime_map.json")
    assert not (tmp_path / "bad.pdf").exists()
    without = tmp_path / "llm.pdf"
    document.build_document(*args, without)
    assert not any(MAP_HEADING in p for p in _pdf_pages(without))


def test_only_the_surrogate_scales_document_is_given_the_map() -> None:
    """The document rule passes --regime-map (and needs the map, so `all` builds it) at surrogate scales;
    an LLM scale's document is compiled without one and plans no map job."""
    config = ("--configfile", ".test/config/config.yaml")
    for scale, has_map in (("tiny_surrogate", True), ("tiny", False)):
        result = snakemake("-n", "-p", "--forceall", "all", *config, "--config", f"scale={scale}")
        text = result.stdout + result.stderr
        command = next(line for line in text.splitlines() if "paired-rollouts render document" in line)
        assert (f"--regime-map results/{scale}/map/regime_map.json" in command) is has_map, scale
        counts = _counts(text)
        assert (counts["regime_map_cell"], counts["regime_map_assemble"]) == ((2, 1) if has_map else (0, 0))


def _priorities(text: str) -> dict[str, set[int]]:
    """Each planned rule's Snakemake priorities in a dry run's listing (0 where the job states none; the
    jobs of a group job are listed indented)."""
    found: dict[str, set[int]] = {}
    rule = None
    for line in text.splitlines():
        if match := re.match(r"\s*(?:local)?rule (\w+):", line):
            rule = match.group(1)
            found.setdefault(rule, set())
        elif rule and (match := re.match(r"\s+priority: (\d+)", line)):
            found[rule].add(int(match.group(1)))
    return {rule: values or {0} for rule, values in found.items()}


def test_the_calibration_s_arms_go_first_and_the_map_cells_fill_the_gaps() -> None:
    """On two cores the map cells were ready with the step-0 register and held up the calibration; the
    planned priorities put the unpaired arms and the calibration first, the paired arms next, the cells last."""
    text = snakemake(
        "-n",
        "--forceall",
        "all",
        "regime_map",
        "--profile",
        "cpu",
        "--config",
        "accelerator=cpu",
        "scale=surrogate",
    ).stdout
    priorities = _priorities(text)
    arms = {rule: values for rule, values in priorities.items() if rule.startswith("surrogate_arm_")}
    unpaired = {rule for rule in arms if "_paired_" not in rule}
    assert len(arms) == 10 and len(unpaired) == 6, sorted(arms)
    assert all(arms[rule] == {20} for rule in unpaired)
    assert all(arms[rule] == {10} for rule in set(arms) - unpaired)
    assert priorities["surrogate_calibration"] == {20}
    assert priorities["regime_map_cell"] == {0}


def _refusal(edit: dict) -> str:
    config = _config()
    config.update(accelerator="cpu", scale=TINY)
    config["scales"][TINY]["regime_map"].update(edit)
    with pytest.raises(UserError) as caught:
        check_config(config, REPO / "config/schema.json", "config/config.yaml")
    return str(caught.value)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        ({"batch_sizes": [4]}, r"regime_map: Additional properties are not allowed \('batch_sizes'"),
        ({"flip_rates": [0.2, 0.7]}, r"regime_map\.flip_rates\.1: 0\.7 is greater than the maximum of 0\.5"),
        ({"group_sizes": [1]}, r"regime_map\.group_sizes\.0: 1 is less than the minimum of 2"),
        (
            {"group_sizes": [4, 17]},
            r"regime_map\.group_sizes\.1: 17 is greater than the maximum of 16; fix: Group sizes G .*2\^G flip",
        ),
        ({"step_sizes": [0]}, r"regime_map\.step_sizes\.0: 0 is less than the minimum of 0\.01"),
    ],
)
def test_the_grid_refuses_an_unknown_factor_or_a_value_out_of_range_in_one_line(edit, needle) -> None:
    message = _refusal(edit)
    assert "\n" not in message and message.startswith("config/config.yaml: scales.tiny_surrogate.")
    assert re.search(needle, message), message
    # the settings the jobs are given hold the same rules (a command run by hand)
    with pytest.raises(UserError) as caught:
        Settings.parse({"regime_map": {**scale_block(_config(), TINY)["regime_map"], **edit}})
    assert "\n" not in str(caught.value) and "regime_map" in str(caught.value)


def test_a_cell_beyond_the_probe_s_exact_enumeration_is_refused_in_one_line() -> None:
    """A cell given by hand (``surrogate map-cell --cell``) meets the grid's rule: its step-0 probe
    enumerates 2^G flip patterns, so G is at most 16 (G = 32 once asked numpy for 240 GiB)."""
    factors = {"noise": "outcome", "rate": 0.2, "step_size": 1.0, "prompts_per_step": 4}
    assert rm.Cell.parse({**factors, "group_size": 16}).group_size == 16
    for group_size in (1, 17, 32):
        with pytest.raises(UserError) as caught:
            rm.Cell.parse(json.dumps({**factors, "group_size": group_size}))
        message = str(caught.value)
        assert (
            message
            == f"--cell: group_size must be 2 to 16 (the step-0 probe enumerates 2^G flip patterns), got {group_size}"
        )


def test_the_dry_run_stops_on_a_bad_grid_before_any_job(tmp_path: Path) -> None:
    extra = tmp_path / "bad.yaml"
    extra.write_text(yaml.safe_dump({"scales": {TINY: {"regime_map": {"flip_rates": [0.9]}}}}))
    result = snakemake(
        "regime_map",
        "--profile",
        "cpu",
        "-n",
        "--configfile",
        ".test/config/config.yaml",
        str(extra),
        "--config",
        f"scale={TINY}",
        check=False,
    )
    text = result.stdout + result.stderr
    assert result.returncode != 0
    # the line names the file that set the value (the last of those merged that writes it)
    refusal = "scales.tiny_surrogate.regime_map.flip_rates.0: 0.9 is greater than the maximum of 0.5"
    assert f"\n{extra.resolve()}: {refusal}" in text
    assert "rule regime_map_cell" not in text


def _counts(text: str) -> Counter:
    counts: Counter = Counter()
    for line in text.split("Job stats:", 1)[-1].splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit() and fields[0] != "total":
            counts[fields[0]] = int(fields[1])
    return counts


def test_adding_a_value_to_a_factor_runs_only_the_new_cells(tmp_path: Path) -> None:
    work = copy_repo(tmp_path)
    base = ("--profile", "cpu", "--configfile", ".test/config/config.yaml", "--config", f"scale={TINY}")
    summary = snakemake("-n", "--forceall", "--summary", "regime_map", *base, cwd=work).stdout
    for line in summary.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) >= 5 and fields[0] != "output_file":
            (work / fields[0]).parent.mkdir(parents=True, exist_ok=True)
            (work / fields[0]).touch()
    snakemake("--touch", "--forceall", "regime_map", *base, cwd=work)
    assert "Nothing to be done" in snakemake("-n", "regime_map", *base, cwd=work).stdout
    grid = scale_block(_config(), TINY)["regime_map"]
    extra = work / "more.yaml"
    extra.write_text(
        yaml.safe_dump({"scales": {TINY: {"regime_map": {"step_sizes": [*grid["step_sizes"], 4]}}}})
    )
    args = (
        "--profile",
        "cpu",
        "--configfile",
        ".test/config/config.yaml",
        str(extra),
        "--config",
        f"scale={TINY}",
    )
    result = snakemake("-n", "regime_map", *args, cwd=work)
    counts = _counts(result.stdout + result.stderr)
    new = {c.id for c in rm.map_cells(_grid().regime_map)}
    grown = Settings.parse({"regime_map": {**grid, "step_sizes": [*grid["step_sizes"], 4]}}).regime_map
    added = {c.id for c in rm.map_cells(grown)} - new
    assert len(added) == 2  # one new step size x (one fault rate + one flip rate)
    assert counts == Counter({"regime_map_cell": 2, "regime_map_assemble": 1, "regime_map": 1})
    for cell_id in added:
        assert f"map/cells/{cell_id}.json" in result.stdout


def _prepared_copy(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A scratch copy whose tiny_surrogate step-0 register is the fixture's (it passes), up to date."""
    work = copy_repo(tmp_path)
    calibration = work / f"results/{TINY}/models/surrogate/step0.json"
    calibration.parent.mkdir(parents=True)
    shutil.copy(CALIBRATION, calibration)
    base = ("--configfile", "config/config.yaml", ".test/config/config.yaml")
    # the copied pools and register are up to date: times in DAG order, as after a finished study
    snakemake(
        "--touch",
        str(calibration.relative_to(work)),
        "--profile",
        "cpu",
        *base,
        "--config",
        f"scale={TINY}",
        cwd=work,
    )
    return work, base


def test_the_tiny_map_runs_through_its_rules(tmp_path: Path) -> None:
    work, base = _prepared_copy(tmp_path)
    config = ("--profile", "cpu", *base, "--config", f"scale={TINY}")
    snakemake("regime_map", *config, "--cores", "1", cwd=work)
    from paired_rollouts.records.regime_map import read_regime_map

    folder = work / f"results/{TINY}/map"
    regime_map = read_regime_map(folder / "regime_map.json")
    assert sorted(c["cell_id"] for c in regime_map.cells) == sorted(
        c.id for c in rm.map_cells(_grid().regime_map)
    )
    assert (folder / "regime_map_heatmap.png").stat().st_size > 0
    assert (folder / "regime_map_heatmap.pdf").read_bytes().startswith(b"%PDF")
    assert not (folder / "regime_map.pdf").exists()  # the map's page is in tables.pdf (target `all`)
    assert "Nothing to be done" in snakemake("-n", "regime_map", *config, cwd=work).stdout


def _require_cluster() -> None:
    if shutil.which("sinfo") is None or subprocess.run(["sinfo"], capture_output=True, timeout=30).returncode:
        if os.environ.get("PAIRED_ROLLOUTS_REQUIRE_SLURM"):
            pytest.fail("PAIRED_ROLLOUTS_REQUIRE_SLURM is set but sinfo fails: run scripts/local_slurm.sh up")
        pytest.skip("no SLURM cluster reachable (sinfo)")


@pytest.mark.slurm
def test_a_tiny_map_runs_through_the_local_slurm_cluster_one_job_per_chunk(tmp_path: Path) -> None:
    """The profile's group-components (8 cells to a job) sends the tiny map's two cells as one submission."""
    _require_cluster()
    work, base = _prepared_copy(tmp_path)
    slurm = ("--configfile", "config/config.yaml", "profiles/slurm-cpu/settings.yaml", base[-1])
    snakemake(
        "regime_map", "--profile", "slurm-cpu", *slurm, "--config", f"scale={TINY}", cwd=work, timeout=900
    )
    from paired_rollouts.records.regime_map import read_regime_map

    regime_map = read_regime_map(work / f"results/{TINY}/map/regime_map.json")
    assert len(regime_map.cells) == 2
    logs = list((work / ".snakemake/slurm_logs").rglob("*.log"))
    # the plugin logs a group job under group_<group id>: the two cells went as one job
    assert len([p for p in logs if "group_regime_map_cells" in str(p)]) == 1, logs
    assert not [p for p in logs if "rule_regime_map_cell" in str(p)], logs
