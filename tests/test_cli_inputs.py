"""Bad input met by a sweep of every command (2026-12-03): each gets one line naming the file or option and
the fix, never a traceback, and a command with two outputs writes both or neither."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests/fixtures/render/results"
PROBE = FIXTURES / "probe/c2-paired-s0.json"
BENCHMARK = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n1.5\t0:00:01\t100\t200\t90\t95\t0\t0\t50\t0.7\n"


def _error(capsys) -> str:
    """The command's stderr: one line, no traceback."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "\n" not in err, err
    return err


def _benchmark(root: Path, text: str | bytes = BENCHMARK) -> Path:
    path = root / "results/benchmarks/train/c2-paired-s0/b.tsv"
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _ledger(root: Path, bench: Path, *extra: str) -> int:
    return main(
        ["ledger", "--benchmarks", str(bench), "--results", str(root / "results")]
        + ["--accelerator", "cpu", *extra]
    )


def test_a_yaml_syntax_error_is_one_line_with_its_place(tmp_path) -> None:
    from paired_rollouts.prereg.rules import load_decision_rules

    rules = tmp_path / "rules.yaml"
    rules.write_text("h2a:\n  alpha: [0.05\n")
    with pytest.raises(UserError) as caught:
        load_decision_rules(rules)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{rules}: not valid YAML (line 3, column 1: ")


def test_the_ledger_writes_its_register_and_page_both_or_neither(tmp_path, capsys) -> None:
    bench = _benchmark(tmp_path)
    out = tmp_path / "out/ledger.json"
    assert _ledger(tmp_path, bench, "--out", str(out), "--html", "/proc/nope/ledger.html") == 1
    assert "/proc/nope/ledger.html" in _error(capsys)
    assert not out.exists() and not list((tmp_path / "out").glob("*")), "no register without its page"
    assert _ledger(tmp_path, bench, "--out", str(out), "--html", str(tmp_path / "out/ledger.html")) == 0
    assert out.is_file() and (tmp_path / "out/ledger.html").is_file()


def test_a_rendered_table_writes_its_tex_and_page_both_or_neither(tmp_path, capsys) -> None:
    page = tmp_path / "t.html"
    argv = ["render", "table", "--number", "5", "--input", f"probe={PROBE}", "--scale", "s"]
    assert main([*argv, "--out", "/proc/nope/t.tex", "--html", str(page)]) == 1
    assert "/proc/nope/t.tex" in _error(capsys) and not page.exists()


@pytest.mark.parametrize("value", [-999, 400, 2.5, "5", True])
def test_a_table_setting_out_of_range_or_of_another_type_is_refused(tmp_path, capsys, value) -> None:
    argv = ["render", "table", "--number", "12", "--input", f"probe={PROBE}", "--scale", "s"]
    settings = json.dumps({"unit_exponent": value})
    assert main([*argv, "--settings", settings, "--out", str(tmp_path / "t.tex")]) == 1
    assert "unit_exponent must be an integer from -12 to 12" in _error(capsys)
    assert not (tmp_path / "t.tex").exists()


def test_an_output_under_a_file_says_the_file_is_in_the_way(tmp_path, capsys) -> None:
    blocker = tmp_path / "ledger.json"
    blocker.write_text("{}")
    bench = _benchmark(tmp_path)
    assert _ledger(tmp_path, bench, "--out", str(blocker / "sub/l.json")) == 1
    assert f"{blocker} is a file, not a folder" in _error(capsys)


def test_a_folder_given_for_html_is_not_blamed_on_out(tmp_path, capsys) -> None:
    bench = _benchmark(tmp_path)
    assert _ledger(tmp_path, bench, "--out", str(tmp_path / "l.json"), "--html", str(tmp_path)) == 1
    err = _error(capsys)
    assert "is a directory; give a file path" in err and "--out" not in err
    assert not (tmp_path / "l.json").exists()


@pytest.mark.parametrize("runs", ["0", "-3"])
def test_the_ledger_counts_at_least_one_run(tmp_path, runs) -> None:
    bench = _benchmark(tmp_path)
    with pytest.raises(SystemExit) as info:
        _ledger(tmp_path, bench, "--runs", runs, "--out", str(tmp_path / "l.json"))
    assert info.value.code == 2 and not (tmp_path / "l.json").exists()


def test_a_benchmark_file_that_is_not_text_is_named(tmp_path, capsys) -> None:
    bench = _benchmark(tmp_path, b"\xff\xfe garbage\n")
    assert _ledger(tmp_path, bench, "--out", str(tmp_path / "l.json")) == 1
    assert f"{bench}: not a Snakemake benchmark file (not UTF-8 text)" in _error(capsys)


def test_a_pool_file_given_as_the_tasks_folder_gets_advice_that_works(tmp_path, capsys) -> None:
    pool = REPO / "data/tasks/train.jsonl"
    assert (
        main(["reference", "--tasks-dir", str(pool), "--out", str(tmp_path / "r.json"), "--limit", "2"]) == 1
    )
    assert f"{pool}: is a file; give the folder that holds the pools and MANIFEST.json" in _error(capsys)


def test_a_manifest_count_that_is_not_an_integer_is_named(tmp_path, capsys) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "data/tasks", tasks)
    manifest = json.loads((tasks / "MANIFEST.json").read_text())
    manifest["pools"]["validation"]["count"] = "300"
    (tasks / "MANIFEST.json").write_text(json.dumps(manifest))
    assert (
        main(["reference", "--tasks-dir", str(tasks), "--out", str(tmp_path / "r.json"), "--limit", "2"]) == 1
    )
    assert "the count of validation.jsonl is '300', not an integer" in _error(capsys)


def test_a_diagnostic_file_of_one_sample_per_schedule_is_named(tmp_path, capsys) -> None:
    rows = [json.loads(line) for line in (FIXTURES / "evals/c4-paired-s0/final-step8-clean.jsonl").open()]
    episodes = tmp_path / "diag.jsonl"
    episodes.write_text("".join(json.dumps({**row, "phase": "diagnostic"}) + "\n" for row in rows))
    assert main(["luck-share", "--episodes", str(episodes), "--out", str(tmp_path / "l.json")]) == 1
    err = _error(capsys)
    assert err.split(": ")[1] == str(episodes) or str(episodes) in err
    assert "K >= 2 schedules x M >= 2 samples" in err and not (tmp_path / "l.json").exists()


def test_a_completeness_record_whose_settings_is_not_an_object_is_refused_by_its_reader(tmp_path) -> None:
    from paired_rollouts.records import read_completeness
    from records_fixtures import synthetic_study

    synthetic_study(tmp_path / "study")
    path = next((tmp_path / "study").rglob("complete.json"))
    data = json.loads(path.read_text())
    assert isinstance(read_completeness(path).settings, dict)
    data["settings"] = [1]
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as caught:
        read_completeness(path)
    assert str(caught.value).startswith(f"{path}: ") and "settings" in str(caught.value)
