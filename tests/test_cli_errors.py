"""Issue 14: bad inputs get one line naming the file and the fix, never a traceback."""

import json

import pytest
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_json, load_settings, read_json, read_jsonl


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def completeness_on_empty_evals(folder, validation_sha256: str, expected: str) -> int:
    """``completeness`` of c2-paired-s0 on an empty evals folder, against a pool manifest listing only the
    validation pool (with that digest) and the ``expected`` evidence (JSON text): the exit code; the record
    would be folder/c.json."""
    manifest = folder / "MANIFEST.json"
    manifest.write_text(json.dumps({"pools": {"validation": {"sha256": validation_sha256}}}))
    return main(
        [
            "completeness",
            "--run",
            "c2-paired-s0",
            "--expected",
            expected,
            "--evals",
            str(folder),
            "--manifest",
            str(manifest),
            "--out",
            str(folder / "c.json"),
        ]
    )


def test_non_utf8_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "\xff"}\n')
    with pytest.raises(UserError, match=r"e\.jsonl:2: not UTF-8"):
        read_jsonl(path)


def test_non_utf8_json_names_file(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b'{"a":\n "\xfe"}\n')
    with pytest.raises(UserError, match=r"m\.json:2: not UTF-8"):
        read_json(path)


def test_nan_in_a_record_is_refused(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text('{"a": NaN}\n')
    with pytest.raises(UserError, match=r"e\.jsonl:1: NaN is not a JSON number"):
        read_jsonl(path)


def test_nan_reaching_the_writer_is_a_user_error(tmp_path):
    out = tmp_path / "x.json"
    with pytest.raises(UserError, match="NaN or infinite"):
        atomic_write_json(out, {"lam": float("nan")})
    assert not out.exists() and not list(tmp_path.iterdir())


def test_out_at_a_directory(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    episodes = tmp_path / "d.jsonl"
    episodes.write_text("")
    with pytest.raises(UserError, match="is a directory"):
        atomic_write_json(tmp_path / "out", {})
    rc = main(["group-stats", "--groups", str(episodes), "--out", str(tmp_path / "out")])
    assert rc == 1 and _err(capsys)


@pytest.mark.parametrize(
    "text, suffix, needle",
    [
        ('{"periodic": ', ".json", "not valid JSON"),
        ("periodic: [1, 2\n", ".yaml", r"not valid YAML \(line 2, column 1: expected .*\); fix the file$"),
        (b"\xff\xfe{}", ".json", "not UTF-8"),
    ],
)
def test_malformed_settings_file(tmp_path, text, suffix, needle):
    path = tmp_path / f"s{suffix}"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UserError, match=needle) as info:
        load_settings(f"@{path}")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("bad", [2.5, "2", True, None])
def test_non_integer_completeness_settings(tmp_path, capsys, bad):
    periodic = {"steps": [0], "pool": "validation", "tasks": bad, "regimes": {"clean": [1]}}
    rc = completeness_on_empty_evals(tmp_path, "0" * 64, json.dumps({"periodic": periodic}))
    err = _err(capsys)
    assert rc == 1 and "'periodic.tasks'" in err and "expected an integer" in err
    assert not (tmp_path / "c.json").exists()


@pytest.mark.parametrize("value", ["0", "-5", "ten"])
def test_luck_share_resamples_must_be_positive(tmp_path, capsys, value):
    episodes = tmp_path / "diag.jsonl"
    episodes.write_text("")
    with pytest.raises(SystemExit) as info:
        main(
            [
                "luck-share",
                "--episodes",
                str(episodes),
                "--out",
                str(tmp_path / "l.json"),
                "--resamples",
                value,
            ]
        )
    assert info.value.code == 2
    err = _err(capsys)
    last = err.strip().splitlines()[-1]  # argparse: the usage, then one error line
    assert "argument --resamples" in last and ("at least 1" in last or "not an integer" in last)


def test_completeness_with_a_run_manifest_of_the_wrong_shape(tmp_path, capsys):
    training = '{"training": {"steps": 1, "prompts": 1, "generations": 1}}'  # some phase: '{}' is refused
    rc = completeness_on_empty_evals(tmp_path, "not-a-digest", training)
    err = _err(capsys)
    assert rc == 1 and "pools.validation" in err and "sha256" in err
