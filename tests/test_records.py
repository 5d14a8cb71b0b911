"""The typed readers refuse every shape but the one their writer writes: one line naming the file."""

from __future__ import annotations

import json

import pytest
from paired_rollouts.errors import UserError
from paired_rollouts.records import read_run_manifest, read_verification
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


def test_completeness_refuses_the_nested_settings_shape(tmp_path, capsys):
    nested = {"periodic": {"steps": [0], "pool": "validation", "tasks": 2, "regimes": {"clean": [1]}}}
    rc = completeness_on_empty_evals(tmp_path, SHA, json.dumps(nested))
    assert rc == 1 and "unknown keys ['periodic']" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()
