"""Issue 14: bad inputs get one line naming the file and the fix, never a traceback."""

import json
from pathlib import Path

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


@pytest.mark.parametrize("content", [None, "", '{"run": "c2-paired-s0", '])
def test_a_missing_empty_or_torn_register_names_the_fix(tmp_path, capsys, content):
    """A register that is not there, empty or cut off (a killed writer elsewhere, a copy) is one line naming
    the file and the command that rewrites it. Base: 'file not found' / 'not valid JSON (...)', no fix."""
    register = tmp_path / "register.json"
    if content is not None:
        register.write_text(content)
    out = tmp_path / "curves.json"
    assert main(["curves-register", "--registers", str(register), "--out", str(out)]) == 1
    err = _err(capsys).strip().splitlines()
    assert len(err) == 1 and str(register) in err[0], err
    assert err[0].endswith("regenerate it with 'paired-rollouts run-register'"), err
    assert not out.exists() and sorted(tmp_path.iterdir()) == ([] if content is None else [register])


@pytest.mark.parametrize("content", ["", "{", "[1, 2]"])
def test_a_malformed_json_file_says_how_to_fix_it(tmp_path, content):
    """The generic reader (pool manifests, freeze records) ends its line with the fix too."""
    path = tmp_path / "MANIFEST.json"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        if read_json(path) == [1, 2]:
            from paired_rollouts.records.prereg import read_pool_manifest

            read_pool_manifest(path)
    assert str(path) in str(info.value) and str(info.value).endswith("regenerate the file")


def _quick_tokenizer(*_args, **_kwargs):
    from paired_rollouts.training.tokenizer import train_tokenizer

    return train_tokenizer(["bootstrap"], 300)


def test_tokenizer_output_folder_is_written_all_or_none(tmp_path, capsys, monkeypatch):
    """`tokenizer --out DIR` writes its files into a temporary folder and swaps it in: a write that fails
    half way (here the tokenizers library's own error, a plain Exception, as on a full disk) is one line
    naming DIR, and neither DIR nor a temporary is left. Base: a traceback, and DIR holding
    tokenizer_config.json and chat_template.jinja without tokenizer.json."""
    from paired_rollouts.training import warmstart

    repo = Path(__file__).resolve().parents[1]
    tokenizer = _quick_tokenizer()
    real_save = type(tokenizer).save_pretrained

    def failing_save(self, folder, *args, **kwargs):
        real_save(self, folder, *args, **kwargs)
        raise Exception("No space left on device (os error 28)")

    monkeypatch.setattr(warmstart, "build_tokenizer", lambda *a, **k: tokenizer)
    monkeypatch.setattr(type(tokenizer), "save_pretrained", failing_save)
    out = tmp_path / "models" / "tokenizer"
    argv = ["tokenizer", "--tasks-dir", str(repo / "data" / "tasks"), "--out", str(out)]
    assert main(argv) == 1
    err = _err(capsys).strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "os error 28" in err[0], err
    assert not out.exists() and list((tmp_path / "models").iterdir()) == []

    # a folder in the way of one of its files (left by hand, or a half-written earlier run) is replaced
    monkeypatch.setattr(type(tokenizer), "save_pretrained", real_save)
    (out / "tokenizer.json").mkdir(parents=True)
    (out / "stray.txt").write_text("earlier")
    assert main(argv) == 0
    assert (out / "tokenizer.json").is_file() and not (out / "stray.txt").exists()
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["tokenizer"]


def test_a_figure_is_written_pdf_and_png_together(tmp_path, capsys):
    """`render figure` writes the PDF and the PNG beside it both or neither. Base: a PDF path that could
    not be written (here a folder in its place) still left the PNG behind."""
    luck = Path(__file__).parent / "fixtures/render/results/diagnostics/c2-independent-s0/luck-step0.json"
    out = tmp_path / "luck_share.pdf"
    out.mkdir()
    argv = ["render", "figure", "--name", "luck_share", "--input", f"luck={luck}", "--scale", "tiny"]
    assert main([*argv, "--out", str(out)]) == 1
    err = _err(capsys).strip().splitlines()
    assert len(err) == 1 and str(out) in err[0], err
    assert [p.name for p in tmp_path.iterdir()] == ["luck_share.pdf"]
    out.rmdir()
    assert main([*argv, "--out", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["luck_share.pdf", "luck_share.png"]
