"""The settings of a scale, parsed from the one place they are written: config/config.yaml.

Snakemake passes each stage the sections of the scale block it reads, unchanged (the shared ``study:``
block merged in, the accelerator's ``stacks:`` entry added as ``stack``), as one ``--settings`` JSON::

    {"task_filter": "simple_id", "training": {...}, "evaluation": {...}, "stack": {"device": "cpu", ...}}

Each section becomes a frozen dataclass here (TRL's ``GRPOConfig`` is the model: ``field(metadata=
{"help": ...})``, checks in ``__post_init__``); ``paired-rollouts train --help`` prints the same help, and
config/schema.json carries the same descriptions and defaults (tests/test_settings.py checks both). A
default is the embedded default scale's value (``scales.standin`` plus ``study:``), never a second truth.

The learning code reads :meth:`Settings.flat`: one key space with the names the run manifests have always
recorded (``probe.clean_tasks`` is ``probe_clean_tasks``, ``diagnostics.pool`` is ``diag_pool``). A flat
object (those names) is accepted too: what a manifest recorded can be given back to a command.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from paired_rollouts.backoffice.tasks import DIAG_POOLS, TASK_FILTERS
from paired_rollouts.errors import UserError

MODEL_KINDS = ("standin", "hub", "surrogate")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo")
TRL_SCALINGS = ("group", "batch", "none")  # TRL's; the design's run names use group and none


def _f(default: Any, help: str, flat: str | None = None, **extra: Any) -> Any:
    """A settings field: its default, its help (``--help``, schema description) and its flat name."""
    metadata = {"help": help, **({"flat": flat} if flat else {}), **extra}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


class _Section:
    """Shared parsing: unknown keys and values of the wrong type are refused, naming the key."""

    section: ClassVar[str] = ""

    @classmethod
    def parse(cls, raw: dict[str, Any] | None, source: str) -> Any:
        raw = dict(raw or {})
        where = f"{source}: {cls.section}" if cls.section else source
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - names)
        if unknown:
            raise UserError(
                f"{where}: unknown key(s) {', '.join(unknown)}; the keys are listed by "
                "'paired-rollouts train --help'"
            )
        values = {}
        for f in dataclasses.fields(cls):
            if f.name not in raw:
                continue
            values[f.name] = _typed(
                raw[f.name], f, f"{where}.{f.name}" if cls.section else f"{where}: {f.name}"
            )
        try:
            return cls(**values)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            raise UserError(message)

    def at_least(self, minimum: int, *names: str) -> None:
        for name in names:
            value = getattr(self, name)
            self.check(value >= minimum, f"{name} must be at least {minimum}, got {value}")

    def flat(self) -> dict[str, Any]:
        """The fields under their flat names (fields without one are not part of the flat view)."""
        return {
            f.metadata["flat"]: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if "flat" in f.metadata
        }


def _typed(value: Any, f: dataclasses.Field, where: str) -> Any:
    kind = f.metadata.get("kind", type(f.default) if f.default is not dataclasses.MISSING else None)
    if kind is None and f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        kind = type(f.default_factory())  # type: ignore[misc]
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where} must be a number, got {value!r}")
        return float(value)
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise UserError(f"{where} must be int, got {value!r}")
    if kind in (str, bool, list, dict) and not isinstance(value, kind):
        raise UserError(f"{where} must be {kind.__name__}, got {value!r}")
    if kind is None and value is not None and not isinstance(value, str):
        raise UserError(f"{where} must be a string, got {value!r}")
    return value


@dataclass(frozen=True)
class StackSettings(_Section):
    """The accelerator's software stack (config `stacks.<accelerator>`; the profile picks the accelerator)."""

    section: ClassVar[str] = "stack"
    device: str = _f("cpu", "cpu or cuda (ROCm builds of torch expose the GPU as cuda too)", "device")
    dtype: str = _f("float32", "weights and compute dtype: float32 (CPU), bfloat16 or float16 (GPU)", "dtype")
    backend: str = _f(
        "hf", "generation backend: hf (transformers generate) or vllm (TRL's colocated vLLM)", "backend"
    )
    gradient_checkpointing: bool = _f(
        False, "activation checkpointing for the loss passes (GPU)", "gradient_checkpointing"
    )

    def __post_init__(self) -> None:
        self.check(self.device in {"cpu", "cuda"}, f"device must be cpu or cuda, got {self.device!r}")
        self.check(
            self.dtype in {"float32", "bfloat16", "float16"},
            f"dtype {self.dtype!r} is not float32/bfloat16/float16",
        )
        self.check(self.backend in {"hf", "vllm"}, f"backend must be hf or vllm, got {self.backend!r}")
        self.check(
            not (self.backend == "vllm" and self.device != "cuda"),
            "backend vllm needs device cuda; use backend hf on CPU",
        )
        self.check(not (self.device == "cpu" and self.dtype != "float32"), "on CPU use dtype float32")


@dataclass(frozen=True)
class ModelSettings(_Section):
    """The policy every run starts from; the stand-in's build and warm start (`kind: standin` only)."""

    section: ClassVar[str] = "model"
    kind: str = _f(
        "standin",
        "standin: a tiny warm-started LLM (CPU); hub: the real model; surrogate: the "
        "log-linear softmax policy of workflow_src/paired_rollouts/surrogate (no weights)",
    )
    name_or_path: str | None = _f(
        None, "hub only: a hub id (owner/name) or a local snapshot folder of the real model", kind=None
    )
    vocab_size: int = _f(2048, "stand-in tokenizer vocabulary", "vocab_size")
    hidden_size: int = _f(96, "stand-in hidden size", "hidden_size")
    num_layers: int = _f(4, "stand-in layers (a multiple of full_attention_interval)", "num_layers")
    full_attention_interval: int = _f(
        2,
        "stand-in: every Nth layer is full attention, the rest Gated DeltaNet (1 = all full attention)",
        "full_attention_interval",
    )
    warm_start_steps: int = _f(900, "supervised warm-start steps on scripted transcripts", "warm_start_steps")
    warm_start_tasks: int = _f(
        400, "train tasks rendered for the warm start and the tokenizer", "warm_start_tasks"
    )
    warm_start_batch: int = _f(8, "warm-start batch size", "warm_start_batch")
    warm_start_lr: float = _f(
        1.5e-3, "warm-start learning rate (at 3e-3 the stand-in never learns to copy)", "warm_start_lr"
    )
    warm_start_short_frac: float = _f(
        0.3,
        "warm-start curriculum: fraction of steps on transcripts rendered "
        "without the tool schemas (short contexts teach copying fast)",
        "warm_start_short_frac",
    )

    def __post_init__(self) -> None:
        self.check(
            self.kind in MODEL_KINDS, f"kind must be one of {', '.join(MODEL_KINDS)}, got {self.kind!r}"
        )
        self.check(self.kind != "hub" or bool(self.name_or_path), "kind hub needs name_or_path")
        self.at_least(
            1,
            "vocab_size",
            "hidden_size",
            "num_layers",
            "full_attention_interval",
            "warm_start_batch",
            "warm_start_tasks",
        )
        self.at_least(0, "warm_start_steps")
        self.check(
            self.num_layers % self.full_attention_interval == 0,
            f"num_layers {self.num_layers} must be a multiple of full_attention_interval "
            f"{self.full_attention_interval}",
        )
        self.check(0 <= self.warm_start_short_frac <= 1, "warm_start_short_frac must lie in [0, 1]")


@dataclass(frozen=True)
class TrainingSettings(_Section):
    """One GRPO run (TRL's GRPOTrainer with LoRA): the update, its rollouts and its checkpoints."""

    section: ClassVar[str] = "training"
    steps: int = _f(6, "optimizer steps (one generation batch each)", "steps")
    prompts_per_step: int = _f(4, "groups (tasks) per step", "prompts_per_step")
    num_generations: int = _f(
        4, "G: rollouts per task; group-relative advantages need at least 2", "num_generations"
    )
    micro_batch: int = _f(
        16, "rollouts per forward/backward micro-batch; must divide prompts_per_step x G", "micro_batch"
    )
    checkpoint_every: int = _f(
        6, "save (and periodically evaluate) a checkpoint every N steps and at the last", "checkpoint_every"
    )
    extra_checkpoint_steps: list = _f(
        [],
        "more steps to checkpoint, off the regular grid (the workflow adds the diagnostic and probe steps)",
        "extra_checkpoint_steps",
    )
    learning_rate: float = _f(5e-4, "AdamW learning rate", "learning_rate")
    loss_type: str = _f("dapo", "TRL loss type (dapo, grpo, dr_grpo, bnpo)", "loss_type")
    scale_rewards: str = _f(
        "group",
        "TRL advantage scaling: group, batch or none (the H4 tier's runs named -scale_none use none)",
        "scale_rewards",
    )
    beta: float = _f(0.0, "KL coefficient (0: no reference model)", "beta")
    lora_r: int = _f(32, "LoRA rank", "lora_r")
    lora_alpha: int = _f(64, "LoRA alpha", "lora_alpha")
    lora_dropout: float = _f(0.0, "LoRA dropout", "lora_dropout")
    max_tool_calling_iterations: int = _f(8, "tool-calling turns per rollout", "max_tool_calling_iterations")
    max_completion_length: int = _f(
        512, "tokens per rollout after the prompt, tool results included", "max_completion_length"
    )
    temperature: float = _f(1.0, "sampling temperature (training and evaluation)", "temperature")
    vllm_gpu_memory_utilization: float = _f(0.35, "vLLM colocate memory share", "vllm_gpu_memory_utilization")
    vllm_max_model_length: int = _f(12288, "vLLM context length", "vllm_max_model_length")
    vllm_importance_sampling_correction: bool = _f(
        True,
        "TRL's vLLM importance-sampling correction (sequence mask)",
        "vllm_importance_sampling_correction",
    )
    train_episodes: bool = _f(True, "also write train_episodes.jsonl (phase train)", "train_episodes")
    compact_logprobs: bool = _f(
        False,
        "CPU: score only the completion positions in TRL's fused LM head, as TRL "
        "does on Triton devices (the GPU check's CPU rehearsal)",
        "compact_logprobs",
    )

    def __post_init__(self) -> None:
        self.check(
            self.num_generations >= 2, f"num_generations (G) must be at least 2, got {self.num_generations}"
        )
        self.at_least(
            1,
            "steps",
            "prompts_per_step",
            "micro_batch",
            "checkpoint_every",
            "max_completion_length",
            "max_tool_calling_iterations",
            "lora_r",
        )
        self.check(
            all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in self.extra_checkpoint_steps
            ),
            "extra_checkpoint_steps must be a list of steps >= 1",
        )
        self.check(self.learning_rate > 0, "learning_rate must be positive")
        self.check(self.temperature > 0, "temperature must be positive")
        self.check(self.loss_type in LOSS_TYPES, f"loss_type {self.loss_type!r} is unknown")
        self.check(self.scale_rewards in TRL_SCALINGS, f"scale_rewards {self.scale_rewards!r} is unknown")
        batch = self.prompts_per_step * self.num_generations
        self.check(
            batch % self.micro_batch == 0,
            f"micro_batch {self.micro_batch} must divide prompts_per_step x num_generations = {batch}",
        )


@dataclass(frozen=True)
class EvaluationSettings(_Section):
    """The periodic (validation) and final (test) evaluation sets."""

    section: ClassVar[str] = "evaluation"
    eval_tasks: int = _f(6, "periodic evaluation: the first N validation tasks", "eval_tasks")
    final_tasks: int = _f(4, "final evaluation: the first N test tasks", "final_tasks")
    eval_batch: int = _f(32, "episodes generated together", "eval_batch")

    def __post_init__(self) -> None:
        self.at_least(1, "eval_tasks", "final_tasks", "eval_batch")


@dataclass(frozen=True)
class DiagnosticSettings(_Section):
    """The luck-share diagnostic: K schedules x M samples per diagnostic task at a checkpoint."""

    section: ClassVar[str] = "diagnostics"
    pool: str = _f(
        "validation",
        "pool of the luck-share diagnostic and the transition probe: diagnostic (the "
        "paper's 16 fixed tasks, never filtered) or validation/test after task_filter",
        "diag_pool",
    )
    tasks: int = _f(4, "diagnostic tasks", "diag_tasks")
    schedules: int = _f(4, "K: paired schedules per diagnostic task", "diag_schedules")
    samples: int = _f(4, "M: samples per schedule", "diag_samples")
    steps: dict = _f(
        {"seed0": [0, 6], "other": [0, 6]},
        "checkpoints diagnosed: seed0 (the seed-0 runs) and other (every other run)",
    )
    resamples: int = _f(10000, "task-bootstrap resamples of the luck share")

    def __post_init__(self) -> None:
        self.check(self.pool in DIAG_POOLS, f"pool must be one of {', '.join(DIAG_POOLS)}, got {self.pool!r}")
        self.at_least(1, "tasks", "resamples")
        self.at_least(2, "schedules", "samples")


@dataclass(frozen=True)
class ProbeSettings(_Section):
    """The gradient-covariance probe (H1b): outcome-noise enumeration and transition-noise resampling."""

    section: ClassVar[str] = "probe"
    clean_tasks: int = _f(4, "outcome probe: validation tasks", "probe_clean_tasks")
    clean_rollouts: int = _f(4, "outcome probe: clean rollouts per task (G)", "probe_clean_rollouts")
    diagnostic_tasks: int = _f(2, "transition probe: diagnostic tasks", "probe_diag_tasks")
    schedules: int = _f(4, "transition probe: K schedules", "probe_schedules")
    samples: int = _f(4, "transition probe: M samples per schedule", "probe_samples")
    resamples: int = _f(16, "transition probe: independent resampled groups per task", "probe_resamples")
    q: float = _f(0.10, "outcome probe: grader flip rate", "probe_q")
    p: float = _f(0.25, "transition probe: fault rate per tool call", "probe_p")
    seed: int = _f(0, "probe resampling seed", "probe_seed")
    trajectories: dict = _f({}, "trajectories probed: NAME -> {run, steps}")

    def __post_init__(self) -> None:
        self.at_least(1, "clean_tasks", "diagnostic_tasks", "schedules", "samples", "resamples")
        self.at_least(2, "clean_rollouts")
        self.check(0 <= self.q <= 1 and 0 <= self.p <= 1, "p and q must lie in [0, 1]")


@dataclass(frozen=True)
class SurrogateSettings(_Section):
    """Surrogate scales only: the calibration's estimation and which runs keep training episode records."""

    section: ClassVar[str] = "surrogate"
    calibration_samples: int = _f(
        8, "Policy samples per (validation task, schedule) when the calibration estimates a step-0 rate."
    )
    train_episodes_seeds: list = _f(
        [0],
        "Seeds whose runs write train_episodes.jsonl (every run writes groups.jsonl); all 80 runs would "
        "take gigabytes.",
    )
    task_difficulty: float = _f(
        1.2,
        "Spread (logit units) of the per-task difficulty that shifts every mistake logit of a task; fitted "
        "offline to the paper's spread of step-0 success over tasks (docs/training.md).",
    )
    phrasing_tokens: int = _f(
        16,
        "Reward-irrelevant phrasing tokens the policy writes per decision (its score's token-sampling "
        "noise); fitted offline with error_phrasing_tokens to the probe's step-0 reductions.",
    )
    error_phrasing_tokens: int = _f(
        96,
        "Phrasing tokens per decision taken right after an error observation (an LLM says more after a "
        "failed call); fitted offline to the outcome probe's step-0 reduction.",
    )
    mechanism_captures: int = _f(
        8,
        "Step-0 probe captures (run seeds 0..n-1) whose mean the calibration compares with the paper's "
        "trace reductions; their spread sets the tolerance.",
    )
    snr_groups: int = _f(
        256,
        "Training groups per design on which the calibration measures the gradient signal-to-noise per step "
        "at step 0.",
    )
    check_curves: bool = _f(
        True,
        "Check the unpaired arms' mean learning curves against the published ones (false only where the "
        "run shape is not the paper's: the test scale).",
    )

    def __post_init__(self) -> None:
        self.at_least(1, "calibration_samples")
        self.at_least(0, "phrasing_tokens", "error_phrasing_tokens")
        self.at_least(2, "mechanism_captures", "snr_groups")
        self.check(self.task_difficulty >= 0, f"task_difficulty must be >= 0, got {self.task_difficulty}")
        self.check(
            all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in self.train_episodes_seeds),
            "train_episodes_seeds must be a list of seeds >= 0",
        )


SECTIONS: dict[str, type[_Section]] = {
    "stack": StackSettings,
    "model": ModelSettings,
    "training": TrainingSettings,
    "evaluation": EvaluationSettings,
    "diagnostics": DiagnosticSettings,
    "probe": ProbeSettings,
    "surrogate": SurrogateSettings,
}
# Keys of a scale block that are not settings of a learning command (the run matrix, captions, the
# surrogate's own block): the workflow reads them, the commands never do.
SCALE_ONLY = ("label", "seeds", "tiers")


@dataclass(frozen=True)
class Settings:
    """What a learning command was given: the scale's task filter and the sections its stage reads."""

    task_filter: str = field(
        default="simple_id",
        metadata={
            "help": "tasks used for training rows, warm start "
            "and the periodic/final sets: all; single_request_id (one request, order named by "
            "id); simple_id (of those, the templates whose every argument is copied)",
            "flat": "task_filter",
        },
    )
    stack: StackSettings = field(default_factory=StackSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    diagnostics: DiagnosticSettings = field(default_factory=DiagnosticSettings)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    surrogate: SurrogateSettings = field(default_factory=SurrogateSettings)
    given: tuple[str, ...] = field(default=(), metadata={"help": "the sections the JSON named"})

    def __post_init__(self) -> None:
        if self.task_filter not in TASK_FILTERS:
            raise UserError(f"task_filter must be one of {', '.join(TASK_FILTERS)}, got {self.task_filter!r}")

    @classmethod
    def parse(cls, raw: dict[str, Any] | None, source: str = "--settings") -> Settings:
        """From the nested form (sections) or the flat form (the manifests' names); never a mix."""
        raw = dict(raw or {})
        for key in SCALE_ONLY:
            raw.pop(key, None)
        nested = [k for k in raw if k in SECTIONS]
        if nested and any(k not in SECTIONS and k != "task_filter" for k in raw):
            loose = sorted(k for k in raw if k not in SECTIONS and k != "task_filter")
            raise UserError(
                f"{source}: key(s) {', '.join(loose)} outside a section; give the sections "
                f"({', '.join(SECTIONS)}) as written in config/config.yaml"
            )
        if not nested:
            raw = _unflatten(raw, source)
        task_filter = raw.pop("task_filter", cls.task_filter)
        if not isinstance(task_filter, str):
            raise UserError(f"{source}: task_filter must be str, got {task_filter!r}")
        sections = {}
        for name, section in SECTIONS.items():
            value = raw.get(name)
            if value is not None and not isinstance(value, dict):
                raise UserError(f"{source}: {name} must be an object, got {value!r}")
            sections[name] = section.parse(value, source)
        try:
            return cls(task_filter=task_filter, given=tuple(k for k in SECTIONS if k in raw), **sections)
        except UserError as exc:
            raise UserError(f"{source}: {exc}") from None

    def flat(self, sections: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The learning code's view, in the manifests' key names and order (sections: those given, or all)."""
        names = sections if sections is not None else (self.given or tuple(SECTIONS))
        out: dict[str, Any] = {}
        for name in FLAT_ORDER:
            section, _ = FLAT_SOURCE[name]
            if section == "" or section in names:
                out[name] = _flat_value(self, name)
        return out


def _flat_value(settings: Settings, name: str) -> Any:
    section, attribute = FLAT_SOURCE[name]
    return getattr(settings if section == "" else getattr(settings, section), attribute)


def _flat_fields() -> dict[str, tuple[str, str]]:
    out = {"task_filter": ("", "task_filter")}
    for name, section in SECTIONS.items():
        for f in dataclasses.fields(section):
            if "flat" in f.metadata:
                out[f.metadata["flat"]] = (name, f.name)
    return out


FLAT_SOURCE = _flat_fields()
# The order the run manifests have always recorded their settings in.
FLAT_ORDER = (
    "device",
    "dtype",
    "backend",
    "gradient_checkpointing",
    "vllm_gpu_memory_utilization",
    "vllm_max_model_length",
    "vllm_importance_sampling_correction",
    "compact_logprobs",
    "max_completion_length",
    "max_tool_calling_iterations",
    "temperature",
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "steps",
    "prompts_per_step",
    "num_generations",
    "micro_batch",
    "checkpoint_every",
    "extra_checkpoint_steps",
    "learning_rate",
    "loss_type",
    "scale_rewards",
    "beta",
    "train_episodes",
    "task_filter",
    "vocab_size",
    "hidden_size",
    "num_layers",
    "full_attention_interval",
    "warm_start_steps",
    "warm_start_batch",
    "warm_start_lr",
    "warm_start_short_frac",
    "warm_start_tasks",
    "eval_tasks",
    "final_tasks",
    "eval_batch",
    "diag_tasks",
    "diag_pool",
    "diag_schedules",
    "diag_samples",
    "probe_clean_tasks",
    "probe_clean_rollouts",
    "probe_diag_tasks",
    "probe_schedules",
    "probe_samples",
    "probe_resamples",
    "probe_q",
    "probe_p",
    "probe_seed",
)
assert set(FLAT_ORDER) == set(FLAT_SOURCE), sorted(set(FLAT_ORDER) ^ set(FLAT_SOURCE))


def _unflatten(raw: dict[str, Any], source: str) -> dict[str, Any]:
    unknown = sorted(set(raw) - set(FLAT_SOURCE))
    if unknown:
        raise UserError(
            f"{source}: unknown settings key(s) {', '.join(unknown)}; known keys are listed by "
            "'paired-rollouts train --help'"
        )
    nested: dict[str, Any] = {}
    for name, value in raw.items():
        section, attribute = FLAT_SOURCE[name]
        if section == "":
            nested[attribute] = value
        else:
            nested.setdefault(section, {})[attribute] = value
    return nested


# ---------------------------------------------------------------- the config -> a stage's JSON ------


def scale_block(config: dict[str, Any], scale: str) -> dict[str, Any]:
    """``scales.<scale>`` with the shared ``study:`` block under it (the scale's own values win)."""
    if scale not in config.get("scales", {}):
        raise UserError(
            f"scale {scale!r} has no block under `scales:` (defined: "
            f"{', '.join(sorted(config.get('scales', {})))}); pick one with --config scale=NAME or "
            "add the block (the test scales are in .test/config/config.yaml)"
        )
    block = {
        key: (dict(value) if isinstance(value, dict) else value)
        for key, value in config["scales"][scale].items()
    }
    for section, values in (config.get("study") or {}).items():
        block[section] = {**values, **block.get(section, {})}
    return block


def stage_settings(
    config: dict[str, Any], scale: str, accelerator: str, *sections: str, **overrides: dict[str, Any]
) -> dict[str, Any]:
    """The ``--settings`` object of a stage: the task filter, its sections of the scale block as written and
    the accelerator's stack; ``overrides`` update a section (a run's own checkpoint steps or reward scaling)."""
    block = scale_block(config, scale)
    out: dict[str, Any] = {"task_filter": block["task_filter"]}
    for section in sections:
        if section == "stack":
            out["stack"] = dict(config.get("stacks", {}).get(accelerator) or {})
        else:
            values = {
                k: v for k, v in block.get(section, {}).items() if k not in WORKFLOW_KEYS.get(section, ())
            }
            out[section] = {**values, **overrides.get(section, {})}
    return out


# Keys of a section that only the workflow reads (which checkpoints are diagnosed or probed, the luck
# share's bootstrap): left out of the jobs' settings, so that changing one reruns only the jobs it concerns.
WORKFLOW_KEYS = {"diagnostics": ("steps", "resamples"), "probe": ("trajectories",)}


# ---------------------------------------------------------------- help ------------------------------


def help_text(sections: tuple[str, ...] = tuple(SECTIONS)) -> str:
    """The ``--help`` epilog: every key of the given sections, with its help and default (the schema's)."""
    lines = [
        "settings (--settings JSON: the scale block's sections as in config/config.yaml, plus `stack`;",
        "the default is the embedded stand-in scale's value):",
        f"  task_filter: {Settings.__dataclass_fields__['task_filter'].metadata['help']} [{Settings.task_filter!r}]",
    ]
    for name in sections:
        section = SECTIONS[name]
        lines.append(f"  {name}: {section.__doc__.strip()}")
        for f in dataclasses.fields(section):
            lines.append(f"    {f.name}: {f.metadata['help']} [{_default(f)!r}]")
    return "\n".join(lines)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return f.default
