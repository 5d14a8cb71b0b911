"""The comparison and the cost ledger are read only when what they state follows from their own numbers
and the files they name: every entry's status, agrees and difference are recomputed with the comparison's
own rule from its published and reproduced values, the published file it names must be the pinned one it
states (and, at hand, hold exactly its entries and values); the ledger's GPU-hours add up over its stages
and its per-run figure is the writer's own arithmetic. A tampered register is refused in one line naming
the file; the register as written still reads (docs/records.md section 0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from paired_rollouts import records
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from test_compare import _bench

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "tests" / "fixtures" / "render" / "results"
PAPER = ROOT / "data" / "published" / "paper.yaml"
TASKS = ROOT / "data" / "tasks"


def _compare(out: Path, published: Path = PAPER) -> dict[str, Any]:
    """comparison.json of the render fixture's results root, written by `paired-rollouts compare`."""
    argv = ["compare", "--results", str(RES), "--published", str(published), "--tasks-dir", str(TASKS)]
    assert main([*argv, "--scale-name", "standin", "--scale", "stand-in", "--out", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, Any]:
    return _compare(tmp_path_factory.mktemp("comparison") / "comparison.json")


def _refused(path: Path, reader: Any, says: str) -> str:
    with pytest.raises(UserError) as caught:
        reader(path)
    line = str(caught.value)
    assert line.startswith(f"{path}: ") and "\n" not in line and says in line, line
    return line


def _write(tmp_path: Path, data: dict[str, Any], name: str = "comparison.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _row(data: dict[str, Any], status: str) -> dict[str, Any]:
    return next(r for r in data["entries"] if r["status"] == status and r["unit"] != "sha256")


def _recount(data: dict[str, Any]) -> None:
    """The summary made to agree with the (edited) entries, as a careful editor would."""
    for status in ("reproduced", "differs", "not computed"):
        data["summary"][status] = sum(r["status"] == status for r in data["entries"])
    data["summary"]["entries"] = len(data["entries"])


# ---------------------------------------------------------------- comparison


def test_the_comparison_as_written_reads(written, tmp_path):
    summary = written["summary"]
    assert summary["reproduced"] and summary["differs"] and summary["not computed"]
    comparison = records.read_comparison(_write(tmp_path, written))
    assert comparison.summary.differs == summary["differs"]
    assert comparison.published_sha256 == written["published_sha256"]


def test_a_comparison_of_an_older_writer_without_ops_reads_beside_its_published_file(written, tmp_path):
    data = json.loads(json.dumps(written))
    for row in data["entries"]:
        del row["op"]
    assert records.read_comparison(_write(tmp_path, data)).summary.entries == len(data["entries"])


def _status_flipped(data: dict[str, Any]) -> None:
    """The audit's entry: its own agrees false, its status "reproduced"."""
    _row(data, "differs")["status"] = "reproduced"
    _recount(data)


def _verdict_flipped(data: dict[str, Any]) -> None:
    row = _row(data, "differs")
    row.update(status="reproduced", agrees=True, reason=None)
    _recount(data)


def _reproduced_edited(data: dict[str, Any]) -> None:
    """A reproduced entry whose reproduced value is far off the published one (published 0.041,
    reproduced -0.300 in the audit)."""
    _row(data, "reproduced")["reproduced"] = -0.3


def _difference_edited(data: dict[str, Any]) -> None:
    row = _row(data, "differs")
    row["difference"] = 0.0


def _computed_made_not_computed(data: dict[str, Any]) -> None:
    row = _row(data, "differs")
    row.update(status="not computed", agrees=None, difference=None)
    _recount(data)


@pytest.mark.parametrize(
    "edit",
    [_status_flipped, _verdict_flipped, _reproduced_edited, _difference_edited, _computed_made_not_computed],
)
def test_an_entry_whose_status_is_not_what_its_numbers_give_is_refused(written, tmp_path, edit):
    data = json.loads(json.dumps(written))
    edit(data)
    _refused(_write(tmp_path, data), records.read_comparison, "a status follows from its numbers")


def test_a_published_value_rewritten_to_the_reproduced_one_is_refused(written, tmp_path):
    data = json.loads(json.dumps(written))
    row = _row(data, "differs")
    row.update(published=row["reproduced"], status="reproduced", agrees=True, difference=0.0, reason=None)
    _recount(data)
    path = _write(tmp_path, data)
    _refused(path, records.read_comparison, f"entry {row['id']} says published {row['reproduced']!r}")


def test_a_dropped_entry_is_refused(written, tmp_path):
    data = json.loads(json.dumps(written))
    data["entries"].remove(_row(data, "differs"))
    _recount(data)
    _refused(_write(tmp_path, data), records.read_comparison, "its entries are not those of")


def test_the_published_sha256_is_required_and_must_be_the_pinned_one(written, tmp_path):
    data = json.loads(json.dumps(written))
    del data["published_sha256"]
    _refused(_write(tmp_path, data), records.read_comparison, "missing key 'published_sha256'")
    data["published_sha256"] = "0" * 64
    _refused(_write(tmp_path, data), records.read_comparison, "is not the pinned transcription")


def test_a_published_file_changed_since_the_comparison_is_refused(written, tmp_path):
    published = tmp_path / "published" / "paper.yaml"
    published.parent.mkdir()
    published.write_text(PAPER.read_text() + "\n")
    data = {**written, "published_source": str(published)}
    _refused(
        _write(tmp_path, data), records.read_comparison, "is not the published file it was compared with"
    )


def test_away_from_its_published_file_each_entry_is_still_checked_on_its_own(tmp_path):
    published = tmp_path / "published" / "paper.yaml"
    published.parent.mkdir()
    shutil.copyfile(PAPER, published)
    data = _compare(tmp_path / "comparison.json", published)
    published.unlink()
    assert records.read_comparison(tmp_path / "comparison.json").summary.entries == len(data["entries"])
    flipped = json.loads(json.dumps(data))
    _status_flipped(flipped)
    _refused(_write(tmp_path, flipped, "flipped.json"), records.read_comparison, "a status follows from")
    for row in data["entries"]:
        del row["op"]
    _refused(_write(tmp_path, data, "no_op.json"), records.read_comparison, "names no op")


def test_a_reproduced_value_of_another_kind_is_refused(written, tmp_path):
    data = json.loads(json.dumps(written))
    _row(data, "differs")["reproduced"] = "high"
    _refused(_write(tmp_path, data), records.read_comparison, "is no value of the published")


# ---------------------------------------------------------------- ledger


def _ledger(tmp_path: Path, accelerator: str) -> dict[str, Any]:
    """ledger.json written by `paired-rollouts ledger` over five jobs of three GPU and two CPU stages."""
    root = tmp_path / "benchmarks"
    files = [
        _bench(root / "train" / "c2-paired-s0.tsv", 3600.0, 900.0, 3000.0),
        _bench(root / "train" / "c2-independent-s0.tsv", 1800.0, 1200.0, 1500.0),
        _bench(root / "evaluate" / "c2-paired-s0" / "final-step100-clean.tsv", 721.0, 500.0, 600.0),
        _bench(root / "decide" / "c2.tsv", 10.0, 300.0, 9.0),
        _bench(root / "render" / "table3.tsv", 2.0, 100.0, 1.5),
    ]
    out = tmp_path / f"{accelerator}.json"
    argv = ["ledger", "--benchmarks", *map(str, files), "--results", str(tmp_path)]
    argv += ["--accelerator", accelerator, "--runs", "3", "--published", str(PAPER), "--out", str(out)]
    assert main(argv) == 0
    return json.loads(out.read_text())


@pytest.fixture
def gpu_ledger(tmp_path) -> dict[str, Any]:
    return _ledger(tmp_path, "h100")


def test_the_ledger_as_written_reads(gpu_ledger, tmp_path):
    ledger = records.read_ledger(_write(tmp_path, gpu_ledger, "ledger.json"))
    assert ledger.total.gpu_hours == 1.7003 and ledger.gpu_hours_per_run == 0.5668
    assert (
        records.read_ledger(_write(tmp_path, _ledger(tmp_path, "cpu"), "cpu.json")).gpu_hours_per_run is None
    )


def _stage_not_in_total(data: dict[str, Any]) -> None:
    """The audit's ledger: a stage of 20 GPU-hours under a total (and a per-run figure) of 0.5."""
    data["stages"]["train"]["gpu_hours"] = 20.0
    data["total"]["gpu_hours"] = 0.5
    data["gpu_hours_per_run"] = round(0.5 / data["runs_in_study"], 4)


def _total_lowered(data: dict[str, Any]) -> None:
    data["total"]["gpu_hours"] = 0.5
    data["gpu_hours_per_run"] = round(0.5 / data["runs_in_study"], 4)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_stage_not_in_total, "total.gpu_hours 0.5 is not the sum of its stages'"),
        (_total_lowered, "total.gpu_hours 0.5 is not the sum of its stages'"),
        (lambda d: d.update(gpu_hours_per_run=0.5), "gpu_hours_per_run is 0.5, but total.gpu_hours 1.7003"),
        (lambda d: d.update(runs_in_study=1), "over runs_in_study 1 gives 1.7003"),
        (lambda d: d.update(gpu_hours_per_run=None), "gpu_hours_per_run is None"),
        (lambda d: d["stages"]["decide"].update(gpu_hours=None), "gpu_hours of stages.decide is null"),
        (lambda d: d.update(accelerator="cpu"), "but the cpu profile has no GPU-hours"),
    ],
)
def test_a_ledger_whose_gpu_hours_do_not_add_up_is_refused(gpu_ledger, tmp_path, edit, says):
    edit(gpu_ledger)
    _refused(_write(tmp_path, gpu_ledger, "ledger.json"), records.read_ledger, says)
