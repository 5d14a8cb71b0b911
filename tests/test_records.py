"""The typed readers refuse every shape but the one their writer writes: one line naming the file."""

from __future__ import annotations

import json
import re

import pytest
from paired_rollouts.cli import main
from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.records import read_curves_register, read_run_manifest, read_verification
from records_fixtures import run_manifest
from test_cli_errors import completeness_on_empty_evals

SHA = "a" * 64


def test_run_manifest_in_the_writers_shape_is_typed(tmp_path):
    path = tmp_path / "manifest.json"
    data = run_manifest("c4-paired-s1", {"test": SHA}, code="x", q=0.1, device="cuda")
    data["hardware"]["gpu"] = "NVIDIA H100 80GB"
    path.write_text(json.dumps(data))
    m = read_run_manifest(path)
    assert (m.condition, m.arm, m.seed, m.q, m.device, m.gpu) == (
        "C4",
        "paired",
        1,
        0.1,
        "cuda",
        "NVIDIA H100 80GB",
    )
    assert m.pools_sha256 == {"test": SHA} and m.code_versions == ["x"]


def test_run_register_keeps_when_a_training_attempt_ended(tmp_path):
    """training/grpo.py records an attempt's end as ``ended``; the run register's ``finished`` is that
    time (it was always null: the register looked for a ``finished`` key the manifest never had)."""
    from paired_rollouts.stats.run_register import _lineage

    attempt = {"attempt": 1, "started": "2026-12-03T12:00:00+00:00", "ended": "2026-12-03T12:12:08+00:00"}
    data = run_manifest("c2-independent-s0", {"test": SHA}, attempts=[{**attempt, "status": "complete"}])
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    _, attempts = _lineage(read_run_manifest(path))
    assert attempts == [
        {
            "attempt": 1,
            "started": attempt["started"],
            "finished": attempt["ended"],
            "resumed_from_step": None,
            "status": "complete",
        }
    ]


@pytest.mark.parametrize(
    "edit, needle",
    [
        # the synonyms the render stage used to search for are not read
        (lambda d: d["settings"].update(accelerator="h100") or d["hardware"].pop("device"), "'device'"),
        (lambda d: d.update(pools=d.pop("pools_sha256")), "'pools_sha256'"),
        (lambda d: d["noise"].pop("p") and d["settings"].update(p=0.25), "'p'"),
        (lambda d: d["pools_sha256"].update(test="ce49"), "pools_sha256.test"),
    ],
)
def test_run_manifest_of_another_shape_is_one_line_naming_the_file(tmp_path, edit, needle):
    data = run_manifest("c2-paired-s0", {"test": SHA})
    edit(data)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as info:
        read_run_manifest(path)
    assert str(path) in str(info.value) and needle in str(info.value) and "\n" not in str(info.value)


def test_verification_token_without_its_verdicts_is_refused(tmp_path):
    path = tmp_path / "verification.json"
    path.write_text(
        json.dumps(
            {
                "passes": True,
                "imprint": SHA,
                "documents": [],
                "failures": [],
                "records": [{"record": "freeze", "tokens": [{"name": "a", "time": "2026"}]}],
            }
        )
    )
    with pytest.raises(UserError, match="rfc3161_client"):
        read_verification(path)


def test_completeness_refuses_the_old_flat_evidence_shape(tmp_path, capsys):
    flat = {"periodic_steps": [0], "periodic_regimes": {"clean": [1]}, "eval_tasks": 2}
    rc = completeness_on_empty_evals(tmp_path, SHA, json.dumps(flat))
    assert (
        rc == 1
        and "unknown keys ['eval_tasks', 'periodic_regimes', 'periodic_steps']" in capsys.readouterr().err
    )
    assert not (tmp_path / "c.json").exists()


def _run_register(tmp_path, run, curves, final):
    """A run register with the keys read_run_register types (stats/run_register.py writes more)."""
    ident = parse_run(run)
    path = tmp_path / "runs" / run / "register.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"run": run, "condition": ident.condition, "arm": ident.arm, "seed": ident.seed}
    lineage = {"complete_sha256": SHA, "luck_share": {}, "attempts": [], "checkpoints": []}
    path.write_text(json.dumps({**body, "curves": curves, "auc": {}, "final": final, **lineage}))
    return path


def test_curves_register_means_over_the_seeds_that_have_each_set(tmp_path, capsys):
    paths = [
        _run_register(
            tmp_path,
            "c2-paired-s0",
            {"clean": {"0": 0.5, "4": 0.6, "8": 0.7}},
            {"clean": 0.6, "challenge": 0.2},
        ),
        _run_register(tmp_path, "c2-paired-s1", {"clean": {"0": 0.3, "4": 0.4}}, {"clean": 0.8}),
        _run_register(tmp_path, "c2-independent-s0", {"at_training": {"0": 0.25}}, {"clean": 0.1}),
    ]
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.records import read_run_register
    from paired_rollouts.stats.condition_curves import build_curves_register

    # registers written by hand (no evidence behind them): the averaging alone, read unverified; the
    # command reads only registers equal to their recomputation (test_register_checks item 4)
    out = tmp_path / "curves" / "c2.json"
    atomic_write_json(out, build_curves_register(paths, read=read_run_register))
    assert main(["curves-register", "--registers", *map(str, paths), "--out", str(tmp_path / "y.json")]) == 1
    err = capsys.readouterr().err
    assert "not recomputable from the files it names" in err and not (tmp_path / "y.json").exists()
    register = read_curves_register(out)
    assert register.condition == "C2" and set(register.arms) == {"paired", "independent"}
    paired = register.arms["paired"]
    assert paired.runs == ["c2-paired-s0", "c2-paired-s1"]
    assert paired.curves == {"clean": {0: 0.4, 4: 0.5}} and paired.curve_runs == {"clean": 2}
    assert paired.final == {"challenge": None, "clean": 0.7}  # s1 has no challenge set: no mean
    assert register.arms["independent"].curves == {"at_training": {0: 0.25}}
    assert set(register.registers) == {"c2-paired-s0", "c2-paired-s1", "c2-independent-s0"}
    # seed 0 is the only seed with both arms: its differences, at the steps and sets both have
    assert list(register.pairs) == [0]
    pair = register.pairs[0]
    assert (pair.paired, pair.independent) == ("c2-paired-s0", "c2-independent-s0")
    assert pair.curves_difference == {"at_training": {}, "clean": {}}  # no set evaluated by both
    c4 = _run_register(tmp_path, "c4-paired-s0", {}, {})
    with pytest.raises(UserError, match=r"several conditions \['C2', 'C4'\]"):
        build_curves_register([paths[0], c4], read=read_run_register)


def test_decision_register_without_the_means_tables_3_and_4_show_is_refused(tmp_path):
    """A computed H2 block must carry its per-seed final gap and its means over seeds (render computes none)."""
    from paired_rollouts.records import read_decision_register
    from records_fixtures import auc_gap_block, decision_register

    block = auc_gap_block("H2a", [0, 1], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25])
    top = decision_register("C2")
    path = tmp_path / "c2.json"
    path.write_text(json.dumps({**top, "H2a": block}))
    assert read_decision_register(path).h2a.final_difference_by_seed == [0.0, 0.0]
    for edit, needle in (
        (lambda b: b.pop("final_paired_mean"), "missing key 'H2a.final_paired_mean'"),
        (lambda b: b.update(final_difference_by_seed=[0.0]), "1 values for 2 seeds"),
        (lambda b: b.update(auc_paired_mean=None), "key 'H2a.auc_paired_mean' is None"),
    ):
        broken = json.loads(json.dumps(block))
        edit(broken)
        path.write_text(json.dumps({**top, "H2a": broken}))
        with pytest.raises(UserError, match=re.escape(needle)) as err:
            read_decision_register(path)
        assert str(path) in str(err.value) and "paired-rollouts decide" in str(err.value)


def test_curves_register_pairs_hold_paired_minus_independent(tmp_path):
    """Table 9's differences: per seed pair, at the steps both runs evaluated, and of the AUC per set."""
    a = _run_register(tmp_path, "c2-paired-s3", {"clean": {"0": 0.5, "4": 0.75, "8": 1.0}}, {})
    b = _run_register(tmp_path, "c2-independent-s3", {"clean": {"0": 0.25, "4": 0.5}}, {})
    for path, auc in ((a, {"clean": 0.75, "challenge": 0.5}), (b, {"clean": 0.5, "challenge": None})):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "auc": auc}))
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.records import read_run_register
    from paired_rollouts.stats.condition_curves import build_curves_register

    out = tmp_path / "c2.json"  # hand-written registers: the averaging alone, read unverified
    atomic_write_json(out, build_curves_register([a, b], read=read_run_register))
    pair = read_curves_register(out).pairs[3]
    assert pair.curves_difference == {"clean": {0: 0.25, 4: 0.25}}
    assert pair.auc_difference == {"challenge": None, "clean": 0.25}
    data = json.loads(out.read_text())
    data["pairs"]["3"]["auc_difference"]["clean"] = "0.25"
    out.write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"pairs\.3.*auc_difference.*curves-register"):
        read_curves_register(out)


def test_cross_stack_register_of_another_shape_is_refused(tmp_path):
    from paired_rollouts.records import read_cross_stack

    run = {"run": "c4-paired-s1", "root": "/r", "stack": "cpu", "register": True, "auc": 0.5, "final": {}}
    entry = {"condition": "C4", "arm": "paired", "seed": 1, "runs": [run, {**run, "stack": "H100"}]}
    entry["difference"] = {"auc": 0.0, "final": {}}
    body = {"manifests": 2, "stacks": ["H100", "cpu"], "replications": [entry]}
    path = tmp_path / "cross_stack.json"
    path.write_text(json.dumps(body))
    assert read_cross_stack(path).replications[0].seed == 1
    entry["difference"] = {"auc": "0.0", "final": {}}
    path.write_text(json.dumps(body))
    with pytest.raises(UserError, match=r"replications\[0\]\.difference.*'paired-rollouts cross-stack'"):
        read_cross_stack(path)
