"""No configuration value can run a command or delete a folder outside results/.

Each hostile value is set in a scratch copy of the workflow; the test then checks the refusal (one line
naming config/config.yaml and the key) and that nothing outside results/ changed. A static check makes
sure every interpolation in every rule's shell command is quoted with `:q`.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from workflow_runs import REPO, copy_repo, snakemake

CLI = shutil.which("paired-rollouts") or str(Path(sys.executable).with_name("paired-rollouts"))


def _tree_digest(root: Path) -> dict[str, str]:
    """Every file outside results/ (and Snakemake's own state) with its SHA-256, plus every folder."""
    digest: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("results", ".snakemake") or "__pycache__" in rel.parts:
            continue
        digest[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return digest


def _set(work: Path, keys: tuple[str, ...], value: object) -> None:
    config_path = work / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    node = config
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


HOSTILE = [
    # (profile, key path, value, target)
    ("cpu", ("prereg", "local_freeze_dir"), "results/prereg/x canary", "all"),
    ("cpu", ("prereg", "local_freeze_dir"), "results/prereg/freeze data", "all"),
    ("cpu", ("prereg", "local_freeze_dir"), "data/tasks", "all"),
    ("cpu", ("prereg", "local_freeze_dir"), "results/../canary", "all"),
    ("cpu", ("tasks_dir",), "data/tasks; touch pwned", "all"),
    ("cpu", ("tasks_dir",), "$(touch pwned)", "all"),
    ("cpu", ("decision_rules",), "prereg/decision_rules.yaml`touch pwned`", "all"),
    ("h100", ("scales", "paper", "model", "name_or_path"), "Qwen/Qwen3.5-2B; touch pwned", "all"),
    ("cpu", ("scales", "standin", "label"), "stand-in'; touch pwned; '", "all"),
    ("cpu", ("prereg", "tsas", "freetsa"), "https://freetsa.org/tsr;touch${IFS}pwned", "all"),
]


@pytest.mark.parametrize(("profile", "keys", "value", "target"), HOSTILE, ids=lambda v: str(v)[:40])
def test_hostile_config_value_is_refused_and_nothing_outside_results_changes(
    tmp_path: Path, profile: str, keys: tuple[str, ...], value: str, target: str
) -> None:
    work = copy_repo(tmp_path)
    (work / "canary").mkdir()
    (work / "canary" / "keep.txt").write_text("keep\n")
    _set(work, keys, value)
    before = _tree_digest(work)
    # A real run, not a dry run: if anything reached a shell, it would execute here.
    result = snakemake("--profile", profile, "--cores", "1", target, cwd=work, check=False)
    assert result.returncode != 0
    text = result.stdout + result.stderr
    key = ".".join(keys)
    assert f"config/config.yaml: {key}:" in text, text[-3000:]
    assert not (work / "pwned").exists()
    assert _tree_digest(work) == before


def test_every_rule_quotes_every_shell_interpolation() -> None:
    """A `{params.x}` without `:q` in any rule's shell command fails here."""
    unquoted = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        text = path.read_text()
        for block in re.finditer(r"\n(\s+)shell:\n((?:\1\s+\".*\"\n)+)", text):
            for field in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", block.group(2)):
                if not field.endswith(":q"):
                    unquoted.append(f"{path.name}: {{{field}}}")
    assert not unquoted, unquoted
    # The check sees the shell commands at all (every rule file but common.smk has some).
    blocks = sum(len(re.findall(r"\n\s+shell:\n", p.read_text())) for p in (REPO / "rules").glob("*.smk"))
    assert blocks >= 12


def test_printed_shell_commands_parse_and_keep_a_label_with_shell_characters(tmp_path: Path) -> None:
    """A label the schema allows but a shell would split (spaces, parentheses) reaches the CLI whole."""
    work = copy_repo(tmp_path)
    label = "stand-in (audit run) 2"
    _set(work, ("scales", "standin", "label"), label)
    result = snakemake("--profile", "cpu", "-n", "-p", "--forceall", "all", cwd=work, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    prefix = "Shell command: "
    lines = (result.stdout + result.stderr).splitlines()
    commands = [
        line.strip()[len(prefix) :] for line in lines if line.strip().startswith(prefix + "paired-rollouts")
    ]
    assert len(commands) > 20
    rendered = 0
    for command in commands:
        syntax = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
        assert syntax.returncode == 0, (command, syntax.stderr)
        argv = shlex.split(command)
        if "--scale" in argv:
            assert argv[argv.index("--scale") + 1] == label
            rendered += 1
    assert rendered >= 13


def test_freeze_rule_never_deletes_through_a_link_out_of_results(tmp_path: Path) -> None:
    """results/prereg/freeze as a link to a folder outside results/: the freeze rule refuses to replace it."""
    work = copy_repo(tmp_path)
    outside = work / "canary"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    link = work / "results" / "prereg" / "freeze"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside, target_is_directory=True)
    result = snakemake(
        "--profile", "cpu", "--cores", "1", "results/prereg/freeze/freeze.json", cwd=work, check=False
    )
    assert result.returncode != 0
    assert (outside / "keep.txt").read_text() == "keep\n"
    log = (work / "results" / "standin" / "logs" / "prereg_freeze_local.log").read_text()
    assert "refusing to delete a folder outside results/" in log


@pytest.mark.parametrize("target", ["results", "data", "results/../data", "/"])
def test_remove_tree_inside_refuses_anything_not_strictly_inside(tmp_path: Path, target: str) -> None:
    from paired_rollouts.errors import UserError
    from paired_rollouts.io import remove_tree_inside

    (tmp_path / "results" / "x").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    path = Path(target) if target.startswith("/") else tmp_path / target
    with pytest.raises(UserError, match="refusing to delete"):
        remove_tree_inside(path, tmp_path / "results")
    assert (tmp_path / "data").is_dir() and (tmp_path / "results" / "x").is_dir()


def test_remove_tree_inside_removes_a_folder_inside(tmp_path: Path) -> None:
    from paired_rollouts.io import remove_tree_inside

    folder = tmp_path / "results" / "prereg" / "freeze"
    folder.mkdir(parents=True)
    (folder / "freeze.json").write_text("{}")
    remove_tree_inside(folder, tmp_path / "results")
    assert not folder.exists() and (tmp_path / "results" / "prereg").is_dir()


def test_freeze_local_cli_refuses_replace_outside_root(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("keep\n")
    result = subprocess.run(
        [CLI, "prereg", "freeze-local", "--out", "data", "--replace-inside", "results", "--root", str(REPO)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "refusing to delete a folder outside results/" in result.stderr
    assert (tmp_path / "data" / "keep.txt").is_file()
