"""The TRL environment, training rows and settings validation (no model needed; fast)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from paired_rollouts.errors import UserError
from records_fixtures import verification_report


@pytest.fixture(scope="module")
def pool_tasks(sim_tasks_dir):
    from paired_rollouts.training.environment import EpisodeContext

    return EpisodeContext.from_pools(sim_tasks_dir).tasks


@pytest.fixture
def context(pool_tasks):
    """A fresh episode context per test (as each trainer gets its own)."""
    from paired_rollouts.training.environment import EpisodeContext

    return EpisodeContext(tasks=pool_tasks)


@pytest.fixture
def env_cls(context):
    """Builds environments the way TRL does: the zero-argument factory of the context."""
    return context.new_environment


def test_tools_match_simulator_signatures(env_cls):
    from paired_rollouts.backoffice.tools import TOOL_NAMES, TOOL_SIGNATURES
    from paired_rollouts.training.environment import BackOfficeEnv, tool_methods
    from transformers.utils import get_json_schema

    env = env_cls()
    tools = tool_methods(env)
    assert sorted(t.__name__ for t in tools) == sorted(TOOL_NAMES)
    # TRL exposes every public function of the class as a tool: nothing public but the tools and TRL's hooks.
    public = {n for n, _ in inspect.getmembers(BackOfficeEnv, inspect.isfunction) if not n.startswith("_")}
    assert public == set(TOOL_NAMES) | {"reset", "get_reward"}
    for tool in tools:
        assert inspect.signature(tool) == TOOL_SIGNATURES[tool.__name__]
        schema = get_json_schema(tool)["function"]
        assert schema["name"] == tool.__name__
        assert list(schema["parameters"]["properties"]) == list(TOOL_SIGNATURES[tool.__name__].parameters)
        assert schema["description"]


# sha256 of the 13 tool schemas every prompt carries, as the code before the tools were declared once wrote
# them (the LLM's outputs depend on every byte; change it only together with a deliberate prose change).
TOOL_SCHEMAS_SHA256 = "bcceb8d45f0c9b9567ec22751dcdc4ba0bd61f428313ecb6b56c04c1a089d7c6"


def test_the_model_sees_each_tools_one_declaration():
    """The schemas in the prompt, the simulator's public methods and the environment's methods all come
    from the tool's declaration next to its implementation, and the prose the model sees is unchanged."""
    import hashlib

    from paired_rollouts.backoffice.tools import TOOL_DECLARATIONS, ToolAPI
    from paired_rollouts.training.warmstart import tool_functions
    from transformers.utils import get_json_schema

    schemas = [get_json_schema(t) for t in tool_functions()]
    digest = hashlib.sha256(json.dumps(schemas, sort_keys=True).encode()).hexdigest()
    assert digest == TOOL_SCHEMAS_SHA256
    for schema in schemas:
        declaration = TOOL_DECLARATIONS[schema["function"]["name"]]
        assert schema["function"]["description"] == declaration.summary
        props = schema["function"]["parameters"]["properties"]
        assert {a: props[a]["description"] for a in props} == declaration.args
        assert getattr(ToolAPI, declaration.name).__doc__ == declaration.docstring()


def _row(task, noise, seed=12345, condition="C2"):
    from paired_rollouts.backoffice.tasks import budget_for

    return {
        "prompt": [],
        "task_id": task["task_id"],
        "schedule_seed": seed,
        "noise": noise,
        "condition": condition,
        "budget": budget_for(task),
        "row_index": 0,
    }


def _play_oracle(env, task):
    from paired_rollouts.agents.scripted import lookup_calls
    from paired_rollouts.backoffice.world import World

    for step in lookup_calls(task, World.generate(task["world_seed"])) + task["oracle_plan"]:
        getattr(env, step["tool"])(**step["args"])
    env.finish(summary="done")
    return env.get_reward()


def test_oracle_episode_and_budget(env_cls, sim_pools):
    from paired_rollouts.noise.config import NoiseConfig

    task = sim_pools["train"][0]
    env = env_cls()
    env.reset(**_row(task, NoiseConfig.clean().to_json()))
    assert _play_oracle(env, task) == 1.0
    assert env.last_episode["true_success"] and env.last_episode["task_id"] == task["task_id"]
    # Missing argument: counted, then the TypeError reaches TRL (which reports it to the model).
    env.reset(**_row(task, NoiseConfig.clean().to_json()))
    with pytest.raises(TypeError):
        env.get_order()
    assert env._session.calls == 1


def test_paired_share_and_independent_differ(pool_tasks, sim_pools):
    from paired_rollouts.noise.config import NoiseConfig
    from paired_rollouts.training.environment import EpisodeContext

    context = EpisodeContext(tasks=pool_tasks, phase="train:step0")
    envs = [context.new_environment() for _ in range(4)]
    task = sim_pools["train"][1]
    for mode, shared in (("paired", True), ("independent", False)):
        noise = NoiseConfig.transition(0.25, mode=mode).to_json()
        for env in envs:
            env.reset(**_row(task, noise, seed=777))
        seeds = {env.resolved_seed for env in envs}
        assert (seeds == {777}) if shared else (len(seeds) == 4)
    # docs/simulator.md#check-numbers vector: independent seed of (777, slot 0, draw 0, train); envs[0] is slot 0, draw 1 now
    first = EpisodeContext(tasks=pool_tasks, phase="train:step0").new_environment()
    first.reset(**_row(task, NoiseConfig.transition(0.25, mode="independent").to_json(), seed=777))
    assert first.resolved_seed == 5457687404510714343


def test_outcome_flips_only_successes(env_cls, sim_pools):
    from paired_rollouts.noise.config import NoiseConfig

    env = env_cls()
    noise = NoiseConfig.outcome(0.5, mode="paired").to_json()
    task = sim_pools["train"][2]
    flips = 0
    for seed in range(30):
        env.reset(**_row(task, noise, seed=seed, condition="C4"))
        reward = _play_oracle(env, task)
        rec = env.last_episode
        assert rec["true_success"]
        flips += rec["flipped"]
        assert reward == (0.0 if rec["flipped"] else 1.0)
    assert 0 < flips < 30
    for seed in range(30):  # a failed episode is never flipped to success
        env.reset(**_row(task, noise, seed=seed, condition="C4"))
        env.finish(summary="nothing")
        assert env.get_reward() == 0.0 and not env.last_episode["flipped"]


def test_rows_same_tasks_across_arms(sim_pools):
    from paired_rollouts.training.rows import build_rows

    tasks = sim_pools["train"]
    paired = build_rows(tasks, "C2", "paired", 0, 3, 4)
    indep = build_rows(tasks, "C2", "independent", 0, 3, 4)
    assert [r["task_id"] for r in paired] == [r["task_id"] for r in indep]
    assert [r["schedule_seed"] for r in paired] == [r["schedule_seed"] for r in indep]
    assert [r["task_id"] for r in paired[:5]] == [
        "train-01944",
        "train-00216",
        "train-01129",
        "train-01494",
        "train-01567",
    ]
    assert [r["schedule_seed"] for r in paired[:2]] == [307198333, 286348399]
    assert [r["step"] for r in paired[:5]] == [0, 0, 0, 0, 1]
    assert json.loads(paired[0]["noise"])["mode"] == "paired"
    assert json.loads(indep[0]["noise"])["mode"] == "independent"
    c4 = build_rows(tasks, "C4", "paired", 0, 1, 2)
    assert json.loads(c4[0]["noise"])["q"] == 0.1
    c0 = build_rows(tasks, "C0", "clean", 0, 1, 2)
    assert json.loads(c0[0]["noise"])["mode"] == "clean"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"num_generations": 1}, "at least 2"),
        ({"bogus": 1}, "unknown settings key"),
        ({"steps": "ten"}, "steps must be int"),
        ({"backend": "vllm"}, "needs device cuda"),
        ({"prompts_per_step": 3, "num_generations": 3, "micro_batch": 2}, "must divide"),
        ({"profile": "paper"}, "unknown settings key"),  # the defaults are the config's, not a profile's
        ({"training": {"learnig_rate": 1e-3}}, "training: unknown key"),
        ({"training": {"steps": 2}, "eval_tasks": 3}, "outside a section"),
        ({"stack": {"device": "cpu", "dtype": "bfloat16"}}, "on CPU use dtype float32"),
    ],
)
def test_bad_settings_refused(raw, fragment):
    from paired_rollouts.settings import Settings

    with pytest.raises(UserError, match=fragment):
        Settings.parse(raw)


def test_paper_settings():
    """The paper scale of config/config.yaml, with the h100 stack, is the paper's setup."""
    import yaml
    from paired_rollouts.settings import Settings, stage_settings

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    s = Settings.parse(stage_settings(config, "paper", "h100", "stack", "training"))
    training, stack = s.training, s.stack
    assert (training.steps, training.prompts_per_step, training.num_generations) == (100, 24, 8)
    assert stack.backend == "vllm" and stack.dtype == "bfloat16" and training.learning_rate == 1e-5
    assert (training.max_tool_calling_iterations, training.max_completion_length) == (24, 6144)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("c9-paired-s0", "unknown condition"),
        ("c2-clean-s0", "clean condition goes with arm .clean."),
        ("c2paired", "is not of the form"),
    ],
)
def test_bad_run_names(name, fragment):
    from paired_rollouts.design import PAPER_CONDITIONS, parse_run

    with pytest.raises(UserError, match=fragment):
        parse_run(name, PAPER_CONDITIONS)


def test_train_refuses_without_verification(tmp_path, sim_tasks_dir):
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.grpo import run_training

    missing = tmp_path / "verification.json"
    with pytest.raises(UserError, match="prereg verify"):
        run_training(
            "c2-paired-s0", str(sim_tasks_dir), str(tmp_path), str(missing), Settings(), str(tmp_path / "run")
        )
    # a failing report, a bare verdict, and a verdict its own findings contradict: none lets training start
    for report, fragment in [
        (verification_report(passes=False), "not verified"),
        ({"passes": True}, "missing key"),
        (dict(verification_report(), failures=["a token does not verify"]), "passes is true with 1 failure"),
        (dict(verification_report(), records=[]), "it verified no record"),
    ]:
        missing.write_text(json.dumps(report))
        with pytest.raises(UserError, match=fragment) as info:
            run_training(
                "c2-paired-s0",
                str(sim_tasks_dir),
                str(tmp_path),
                str(missing),
                Settings(),
                str(tmp_path / "run"),
            )
        assert str(missing) in str(info.value) and "\n" not in str(info.value)
    missing.write_text(json.dumps(verification_report()))
    with pytest.raises(UserError, match="model-dir"):
        run_training(
            "c2-paired-s0",
            str(sim_tasks_dir),
            str(tmp_path / "nope"),
            str(missing),
            Settings(),
            str(tmp_path / "run"),
        )
    with pytest.raises(UserError, match="unknown condition"):
        run_training(
            "c7-paired-s0", str(sim_tasks_dir), str(tmp_path), str(missing), Settings(), str(tmp_path / "run")
        )
