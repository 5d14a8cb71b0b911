"""The settings have one source: config/config.yaml, parsed by paired_rollouts.settings. The schema's
descriptions and defaults, the dataclasses' help and defaults and `paired-rollouts train --help` say the
same; no default contradicts the embedded scale; each job gets its sections as written."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from paired_rollouts import settings as S
from paired_rollouts.cli import main
from paired_rollouts.errors import UserError
from paired_rollouts.training.settings import recorded, resolve

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "config/schema.json").read_text())
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
TEST_CONFIG = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


@pytest.mark.parametrize("section", sorted(S.SECTIONS))
def test_schema_and_dataclass_say_the_same(section: str) -> None:
    schema = SCHEMA["$defs"][section]["properties"]
    fields = {f.name: f for f in dataclasses.fields(S.SECTIONS[section])}
    assert set(schema) == set(fields), f"{section}: schema and dataclass keys differ"
    for name, f in fields.items():
        assert schema[name]["description"] == f.metadata["help"], (section, name)
        if _default(f) is not None:
            assert schema[name]["default"] == _default(f), (section, name)


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


def test_the_flat_view_keeps_the_manifests_names() -> None:
    flat = resolve(S.stage_settings(CONFIG, "standin", "cpu", *S.SECTIONS))
    assert flat["diag_pool"] == "validation" and flat["probe_clean_tasks"] == 4 and flat["eval_batch"] == 32
    assert flat["probe_diag_tasks"] == 2 and flat["warm_start_steps"] == 900
    # a run manifest records the sections the train job was given, in the order it always had
    train = recorded(S.stage_settings(CONFIG, "standin", "cpu", "stack", "training"))
    assert list(train) == [k for k in S.FLAT_ORDER if S.FLAT_SOURCE[k][0] in ("", "stack", "training")]
    assert "eval_tasks" not in train and "profile" not in train
    # and what a manifest recorded is accepted back (the flat form)
    assert recorded(train) == resolve(train)
    assert resolve(train)["steps"] == 6


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"training": {"learnig_rate": 1e-3}}, "training: unknown key(s) learnig_rate"),
        ({"training": {"steps": "6"}}, "training.steps must be int"),
        ({"evaluation": {"eval_tasks": 3}, "steps": 6}, "outside a section"),
        ({"diagnostics": {"pool": "train"}}, "pool must be one of"),
        ({"model": {"kind": "hub"}}, "kind hub needs name_or_path"),
        ({"stack": {"backend": "vllm"}}, "needs device cuda"),
        ({"training": []}, "training must be an object"),
    ],
)
def test_bad_settings_name_the_key(raw, fragment) -> None:
    with pytest.raises(UserError) as caught:
        S.Settings.parse(raw)
    assert fragment in str(caught.value)


def test_train_help_is_the_dataclasses(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for section in ("stack", "training"):
        for f in dataclasses.fields(S.SECTIONS[section]):
            assert f"{f.name}: {' '.join(f.metadata['help'].split())} [{_default(f)!r}]" in text, f.name
    assert "max_completion_length: tokens per rollout after the prompt, tool results included [512]" in text
