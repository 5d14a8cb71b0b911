"""The registers over several runs are recomputed from the files they name wherever those are at hand.

A condition's curves register (stats/condition_curves.py) is read for quoting only if the whole of it,
its seed pairs, its final differences and its pooled group statistics included, equals its recomputation
from the run registers, group statistics and compared curves register it names; its own arithmetic is
checked even where they are not. A cross-stack register's run values must be those of the run register at
hand (stats/cross_stack.py run_values). Each tamper below was read as written before (audit 1, items 1
and 2); each is refused in one line naming the file.
"""

import contextlib
import json
import shutil
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.layout import Layout
from paired_rollouts.records import read_cross_stack, read_curves_register
from paired_rollouts.render import sources
from paired_rollouts.stats.condition_curves import verified_curves


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    from records_fixtures import synthetic_study

    root = tmp_path_factory.mktemp("study")
    synthetic_study(root)
    return root / "results"


@contextlib.contextmanager
def edited(path: Path, edit):
    """``path`` with ``edit`` applied to its JSON, restored afterwards."""
    before = path.read_bytes()
    data = json.loads(before)
    edit(data)
    path.write_text(json.dumps(data))
    try:
        yield path
    finally:
        path.write_bytes(before)


def refused(read, path) -> str:
    with pytest.raises(UserError) as info:
        read(path)
    text = str(info.value)
    assert "\n" not in text and text.startswith(f"{path}: "), text
    return text


def verified(path):
    return verified_curves(path, Layout(str(Path(path).parent.parent)).register)


def _set(*keys, value):
    def edit(data):
        for k in keys[:-1]:
            data = data[k]
        data[keys[-1]] = value

    return edit


def _group_stats_consistent(data):  # counts and share agree with each other, not with the runs' files
    block = data["arms"]["paired"]["group_stats"]
    block.update(spurious_groups=4, spurious_among_all_correct=4 / block["all_correct_groups"])


def test_untampered_registers_read_verified_and_plain(res):
    for name in ("c2", "c4"):
        path = res / "curves" / f"{name}.json"
        register = verified(path)
        assert register.pairs and register.arms["paired"].group_stats is not None
        assert read_curves_register(path).raw == register.raw
    [c4] = sources.curves_registers([res / "curves" / "c4.json"], "test")
    assert set(c4.differences) == {"C2"}


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            _set("pairs", "0", "auc_difference", "at_training", value=0.9),
            "pairs.0.auc_difference is not what its run registers give "
            "(pairs.0.auc_difference.at_training is 0.9",
        ),
        (
            _set("pairs", "0", "curves_difference", "clean", "8", value=0.0 + 2**-20),
            "pairs.0.curves_difference is not what its run registers give",
        ),
        (
            _set("differences", "C2", "arms", "paired", "noisy_p025", value=0.5),
            "differences.C2.arms is not what the curves register it names gives",
        ),
        (_group_stats_consistent, "arms.paired.group_stats is not what its group statistics give"),
        (
            _set("arms", "paired", "curve_runs", "clean", value=1),
            "arms.paired.curve_runs is not what its run registers give",
        ),
        (_set("format", value="paired-rollouts-curves/0"), "format is not what its run registers give"),
    ],
)
def test_curves_register_is_its_recomputation_where_its_files_are_at_hand(res, edit, needle):
    """Item 1. Before: only arms.*.{runs,curves,final} were compared; these were read as written."""
    path = res / "curves" / "c4.json"
    with edited(path, edit):
        assert needle in refused(verified, path)
        # render reads the register (its own arithmetic) before recomputing it: refused either way
        refused(lambda p: sources.curves_registers([p], "test"), path)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            _set("arms", "paired", "group_stats", "spurious_among_all_correct", value=0.1),
            "arms.paired.group_stats.spurious_among_all_correct is 0.1, its counts give 0.0 (0/8)",
        ),
        (
            _set("arms", "paired", "group_stats", "spurious_groups", value=9),
            "arms.paired.group_stats: counts no group statistics give (spurious 9, all-correct 8",
        ),
        (
            _set("arms", "paired", "group_stats", "runs", value=["c4-paired-s0"]),
            "arms.paired.group_stats.runs are c4-paired-s0, the arm's runs c4-paired-s0, c4-paired-s1",
        ),
        (
            _set("pairs", "0", "curves_difference", "at_training", "8", value=0.9),
            "pairs' curves_difference.at_training.8 average 0.7, the arms' mean curves differ by 0.375",
        ),
        (
            lambda d: d["pairs"]["1"]["curves_difference"]["clean"].pop("4"),
            "pairs.1.curves_difference.clean lacks step 4",
        ),
        (_set("arms", "paired", "curve_runs", "clean", value=7), "arms.paired.curve_runs.clean is 7"),
        (_set("pairs", "1", "paired", value="c4-paired-s0"), "pairs.1 pairs c4-paired-s0 with"),
        (lambda d: d["pairs"].pop("1"), "pairs are seeds [0], the seeds with both arms are [0, 1]"),
        (
            _set("arms", "paired", "runs", value=["c4-paired-s0", "c2-paired-s1"]),
            "arms.paired.runs holds c2-paired-s1, not a C4 paired run",
        ),
        (
            _set("arms", "paired", "final", "clean", value=None),
            "differences.C2.arms.paired.clean is 0.0, but this arm's final mean is None",
        ),
    ],
)
def test_curves_register_arithmetic_is_checked_without_its_files(res, tmp_path, edit, needle):
    """Item 1, its own numbers: with no run register at hand (a copy alone), as with them."""
    alone = tmp_path / "elsewhere" / "curves" / "c4.json"
    alone.parent.mkdir(parents=True)
    shutil.copy(res / "curves" / "c4.json", alone)
    assert sources.curves_registers([alone], "test")[0].raw == json.loads(alone.read_text())
    with edited(alone, edit):
        assert needle in refused(read_curves_register, alone)
        assert needle in refused(lambda p: sources.curves_registers([p], "test"), alone)
    path = res / "curves" / "c4.json"
    with edited(path, edit):  # the run registers at hand: refused too (by the recomputation or after it)
        refused(verified, path)


def test_compared_register_and_group_statistics_must_be_those_it_was_built_from(res, tmp_path):
    path = res / "curves" / "c4.json"
    c2 = res / "curves" / "c2.json"
    with edited(c2, _set("arms", "paired", "final", "clean", value=0.25)):
        assert "differences.C2 are not of the curves register" in refused(verified, path)
    stats = res / "runs" / "c4-paired-s1" / "group_stats.json"
    moved = tmp_path / "group_stats.json"
    shutil.move(stats, moved)
    try:
        assert f"the group statistics {stats} of a paired run are not at hand" in refused(verified, path)
    finally:
        shutil.move(moved, stats)
    # with no group statistics of an arm here, its pooled block keeps the arithmetic checks alone
    away = [res / "runs" / run / "group_stats.json" for run in ("c4-paired-s0", "c4-paired-s1")]
    for i, f in enumerate(away):
        shutil.move(f, tmp_path / f"g{i}.json")
    try:
        assert verified(path).arms["paired"].group_stats.groups == 8
        with edited(path, _group_stats_consistent):
            verified(path)  # counts that agree with each other: nothing here says otherwise
        with edited(path, _set("arms", "paired", "group_stats", "spurious_among_all_correct", value=0.1)):
            assert "spurious_among_all_correct is 0.1, its counts give" in refused(verified, path)
    finally:
        for i, f in enumerate(away):
            shutil.move(tmp_path / f"g{i}.json", f)


# ---------------------------------------------------------------- cross-stack


@pytest.fixture(scope="module")
def cross(res, tmp_path_factory):
    """c2-paired-s0 of the study again under a second results tree whose manifest says another stack,
    and the cross-stack register over both."""
    run = "c2-paired-s0"
    other = tmp_path_factory.mktemp("other") / "results"
    shutil.copytree(res, other)
    manifest = other / "runs" / run / "manifest.json"
    data = json.loads(manifest.read_text())
    data["hardware"] = {"device": "cuda", "gpu": "NVIDIA H100 80GB HBM3"}
    manifest.write_text(json.dumps(data))
    manifests = [str(r / "runs" / run / "manifest.json") for r in (res, other)]
    registers = [str(r / "runs" / run / "register.json") for r in (res, other)]
    out = tmp_path_factory.mktemp("cross") / "cross_stack.json"
    assert main(["cross-stack", "--manifests", *manifests, "--registers", *registers, "--out", str(out)]) == 0
    return out


def _both_runs(**values):
    def edit(data):
        for run in data["replications"][0]["runs"]:
            run.update(values)

    return edit


def _final_both(regime, value):
    def edit(data):
        for run in data["replications"][0]["runs"]:
            run["final"][regime] = value

    return edit


def _no_register(data):  # both runs as if given without their run registers: nulls, null difference
    replication = data["replications"][0]
    nulls = {"clean": None, "noisy_p025": None, "heldout_types": None}
    for run in replication["runs"]:
        run.update(register=False, auc=None, final=dict(nulls))
    replication["difference"] = {"auc": None, "final": dict(nulls)}


def test_cross_stack_untampered_reads_and_holds_the_run_registers_values(cross, res):
    from paired_rollouts.records import read_run_register

    (replication,) = read_cross_stack(cross).replications
    register = read_run_register(res / "runs" / "c2-paired-s0" / "register.json")
    assert [r.auc for r in replication.runs] == [register.auc["at_training"]] * 2
    assert replication.difference.auc == 0.0


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (_both_runs(auc=0.95), "replications[0].runs[0]: auc of c2-paired-s0 is 0.95, its run register"),
        (_final_both("clean", 0.9), "final.clean of c2-paired-s0 is 0.9, its run register"),
        (_no_register, "runs[0]: says no run register of c2-paired-s0 was given, but"),
    ],
)
def test_cross_stack_run_values_are_the_run_registers_at_hand(cross, edit, needle):
    """Item 2. Before: AUC 0.95 for both runs (difference 0) was read where the run register says 0.75."""
    with edited(cross, edit):
        text = refused(read_cross_stack, cross)
        assert needle in text and "c2-paired-s0/register.json" in text, text
        assert text.endswith("regenerate it with 'paired-rollouts cross-stack'"), text


def test_cross_stack_run_of_a_tree_not_here_is_read_as_written(cross, tmp_path):
    def elsewhere(data):
        for run in data["replications"][0]["runs"]:
            run.update(root=str(tmp_path / "gone" / "results"), auc=0.95)

    with edited(cross, elsewhere):
        assert [r.auc for r in read_cross_stack(cross).replications[0].runs] == [0.95, 0.95]
