"""The GRPO trainer shared by training, evaluation and the probe.

``PairedGRPOTrainer`` is TRL's ``GRPOTrainer`` plus two hooks: it captures the rewards TRL computed (to
cross-check them against the environments) and hands every training generation batch to a ``BatchSink``
(the group register); a callback stamps the environments' phase before each step. It is also the one place
that deviates from stock TRL (vLLM's engine seed, compact log-prob scoring on CPU): each deviation is
applied by constructing the trainer and lasts only for the span of TRL's own call, none on import. Evaluation and the probe
use the same class and the same tool loop in eval mode, so a checkpoint is rolled out exactly as it was
trained, only with one rollout per row.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.environment import EpisodeContext

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


class BatchSink(Protocol):
    def __call__(
        self,
        trainer: Any,
        inputs: list[dict[str, Any]],
        output: dict[str, Any],
        rewards: list[float],
        generation_seconds: float,
    ) -> None: ...


# The update's shape, set explicitly (never left to library defaults that may change between releases).
# The original study's trainer set none of these, so it ran with its libraries' defaults (TRL 1.12 /
# transformers 5.16): linear decay to 0 over max_steps, no warm-up, gradient-norm clipping at 1.0, PPO
# clip range 0.2 on both sides, AdamW (torch fused) with betas (0.9, 0.999), eps 1e-8, no weight decay.
UPDATE_SHAPE: dict[str, Any] = {
    "lr_scheduler_type": "linear",
    "warmup_steps": 0,
    "max_grad_norm": 1.0,
    "epsilon": 0.2,
    "epsilon_high": 0.2,
    "optim": "adamw_torch_fused",
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
    "weight_decay": 0.0,
    "num_iterations": 1,
    "top_p": 1.0,
    "top_k": 0,
    "repetition_penalty": 1.0,
}
# Every GRPOConfig / TrainingArguments field that shapes the update or the sampling, recorded in the run
# manifest with the value the trainer actually used.
TRAINER_CONFIG_KEYS = (
    "learning_rate",
    "lr_scheduler_type",
    "lr_scheduler_kwargs",
    "warmup_steps",
    "max_grad_norm",
    "optim",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "weight_decay",
    "epsilon",
    "epsilon_high",
    "delta",
    "beta",
    "loss_type",
    "scale_rewards",
    "num_iterations",
    "steps_per_generation",
    "gradient_accumulation_steps",
    "per_device_train_batch_size",
    "generation_batch_size",
    "num_generations",
    "max_steps",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "max_completion_length",
    "max_tool_calling_iterations",
    "mask_truncated_completions",
    "importance_sampling_level",
    "use_vllm",
    "vllm_mode",
    "vllm_importance_sampling_correction",
    "vllm_importance_sampling_mode",
    "vllm_importance_sampling_clip_max",
    "vllm_importance_sampling_clip_min",
    "vllm_importance_sampling_cap",
    "vllm_gpu_memory_utilization",
    "vllm_max_model_length",
    "off_policy_mask_threshold",
    "top_entropy_quantile",
    "use_bias_correction_kl",
    "bf16",
    "fp16",
    "gradient_checkpointing",
    "seed",
    "data_seed",
    "shuffle_dataset",
    "chat_template_kwargs",
)


def trainer_configuration(args: Any) -> dict[str, Any]:
    """The update-shaping fields of a GRPOConfig as JSON values (enums as their strings)."""
    out: dict[str, Any] = {}
    for key in TRAINER_CONFIG_KEYS:
        value = getattr(args, key, None)
        value = getattr(value, "value", value)
        out[key] = value if isinstance(value, (bool, int, float, str, list, dict, type(None))) else str(value)
    return out


def vllm_seed(run_seed: int, purpose: str = "train") -> int:
    """vLLM's engine seed: derived from the run seed (TRL would use the process index, 0 on one GPU)."""
    from paired_rollouts.noise.seeds import derive_seed

    return derive_seed("vllm", run_seed, purpose) % (2**31)


@contextmanager
def _swapped(module: Any, name: str, value: Any) -> Iterator[None]:
    """``module.name`` is ``value`` for the span of the block, then what it was (also after an error)."""
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


def plain_cpu_linears() -> None:
    """vLLM's CPU engine computes every linear layer with ``torch.nn.functional.linear`` on the weight it
    holds (backend vllm on device cpu only, the GPU check's rehearsal; set before the engine loads).

    vLLM's default on CPU hands each linear weight to oneDNN (or, on AMX CPUs, to a packed kernel) after
    loading and keeps an empty tensor (``vllm/model_executor/layers/utils.py:
    dispatch_cpu_unquantized_gemm``): the engine then computes with a copy that nothing can read back, so
    the check could not compare the synced weights with the merged LoRA weights. vLLM takes its plain path
    where oneDNN is absent; this selects it. CUDA layers keep their weights as loaded: never applied there."""
    import vllm._custom_ops as vllm_ops  # imports vLLM's CPU kernels first (their choice reads the CPU flags)
    import vllm.model_executor.layers.utils as vllm_layer_utils

    vllm_ops._supports_onednn = False
    vllm_layer_utils.check_cpu_sgl_kernel = lambda *args, **kwargs: False


def reprocessing_sync(vllm_generation: Any) -> None:
    """TRL's weight sync through vLLM's layerwise reload (``vllm/model_executor/model_loader/reload``), the
    engine's own path for updating a loaded model (CPU engine only).

    On CPUs with AVX-512-BF16, vLLM VNNI-packs each Gated-DeltaNet conv weight in place after loading; TRL's
    sync loads checkpoint-format tensors with ``model.load_weights`` and fails at the first packed one
    ("expand(torch.FloatTensor{[64, 1, 4]}, size=[64, 4])"). Between ``initialize_layerwise_reload`` and
    ``finalize_layerwise_reload`` vLLM restores every layer's checkpoint format, collects the tensors TRL
    pushes and re-runs each layer's processing (packing included) once all its tensors are in."""
    from vllm.model_executor.model_loader.reload import (
        finalize_layerwise_reload,
        initialize_layerwise_reload,
    )

    sync = vllm_generation.sync_weights

    def sync_weights() -> None:
        runner = vllm_generation.llm.llm_engine.model_executor.driver_worker.model_runner
        initialize_layerwise_reload(runner.model)
        try:
            sync()
        finally:
            finalize_layerwise_reload(runner.model, runner.model_config)

    vllm_generation.sync_weights = sync_weights


def grpo_args(
    settings: Settings,
    output_dir: str | Path,
    seed: int,
    *,
    evaluation: bool = False,
    importance_sampling: bool = False,
) -> Any:
    """GRPOConfig from the settings: one optimizer step per generation batch (docs/training.md#paper-scale-settings).

    ``importance_sampling``: keep TRL's vLLM IS correction in an evaluation build (the probe's implemented
    estimator uses the trainer's ratio rho); plain evaluations switch it off (it costs a forward pass)."""
    from trl import GRPOConfig

    from paired_rollouts.training import event_log

    training, stack = settings.training, settings.stack
    cuda = stack.device == "cuda"
    use_vllm = stack.backend == "vllm"
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=training.steps,
        per_device_train_batch_size=training.micro_batch,
        gradient_accumulation_steps=training.generation_batch // training.micro_batch,
        generation_batch_size=training.generation_batch,
        num_generations=training.num_generations,
        num_generations_eval=1,
        # TRL's eval-mode scoring pass (the probe's importance-sampling ratios) runs in chunks of this size;
        # the loss passes' micro-batch keeps it to the memory training was sized for (eval_batch rollouts,
        # 128 at paper scale, of up to ~9k tokens each would be one pass). Generation batches are the rows
        # given to ``roll_out``, whatever this is.
        per_device_eval_batch_size=training.micro_batch,
        learning_rate=training.learning_rate,
        temperature=training.temperature,
        loss_type=training.loss_type,
        scale_rewards=training.scale_rewards,
        beta=training.beta,
        max_completion_length=training.max_completion_length,
        max_tool_calling_iterations=training.max_tool_calling_iterations,
        chat_template_kwargs={"enable_thinking": False},
        seed=seed,
        data_seed=seed,
        shuffle_dataset=False,
        # Training metrics as TensorBoard event files (event_log.attach names the folder); an evaluation
        # build trains nothing, so it logs nothing.
        report_to=["tensorboard"] if not evaluation and event_log.installed() else "none",
        logging_steps=1,
        save_strategy="no" if evaluation else "steps",
        save_steps=training.checkpoint_every,
        save_total_limit=None,
        save_only_model=False,
        bf16=cuda and stack.dtype == "bfloat16",
        fp16=False,
        use_cpu=not cuda,
        gradient_checkpointing=stack.gradient_checkpointing and not evaluation,
        use_vllm=use_vllm,
        dataloader_num_workers=0,
        disable_tqdm=evaluation,
        **UPDATE_SHAPE,
    )
    if use_vllm:
        kwargs.update(
            vllm_mode="colocate",
            vllm_gpu_memory_utilization=training.vllm_gpu_memory_utilization,
            vllm_max_model_length=training.vllm_max_model_length,
            # In a plain evaluation nothing is trained, so the IS correction would only cost an extra pass;
            # the probe keeps it (its implemented estimator weights each rollout by the trainer's rho).
            vllm_importance_sampling_correction=training.vllm_importance_sampling_correction
            and (importance_sampling or not evaluation),
        )
    return GRPOConfig(**kwargs)


def _trainer_class() -> type:  # noqa: C901 - one override per deviation from TRL, with TRL's imports in scope (docs/training.md)
    import trl.generation.vllm_generation as trl_vllm
    import trl.trainer.utils as trl_utils
    from trl import GRPOTrainer

    class PairedGRPOTrainer(GRPOTrainer):
        """GRPOTrainer that keeps TRL's rewards and hands each training generation batch to a ``BatchSink``.

        Every deviation from stock TRL sits in this class, written against TRL 1.16.0 (a TRL upgrade
        that renames or re-signs one of the methods below fails tests/test_trainer_config.py, not a run).
        TRL has no public hook that sees a generation batch with its rewards and advantages, nor an option
        for vLLM's engine seed or for compact log-prob scoring off Triton devices, so these four methods
        override TRL's, and ``roll_out`` is the one entry point the rest of the package (evaluation, the
        probe) calls:

        - ``__init__(..., engine_seed=None, compact_logprobs=False)``: TRL's constructor. With
          ``engine_seed`` (vLLM backend) TRL builds its colocated engine as ``trl.generation.vllm_generation
          .LLM(seed=process_index // tensor_parallel_size, ...)``; that module name is looked up when the
          engine is built, inside this constructor, so for the span of the constructor it is a wrapper
          that adds ``engine_seed`` to TRL's seed (TRL's per-process offset kept), and is restored after;
        - ``_get_per_token_logps_and_entropies(...)``: TRL's. With ``compact_logprobs`` TRL's fused LM
          head, which scores only the completion positions on Triton devices and every position elsewhere
          (the per-token values are the same), takes the Triton branch on CPU: ``trl.trainer.utils
          ._use_triton`` answers True for the span of the call (only the compact/full choice; the kernel
          stays torch). Every-position scoring dominates a CPU step with a full-size vocabulary
          (measured: ~35 s per 1,900-token rollout with 248,320 tokens); only the GPU check's CPU
          rehearsal sets it;
        - ``_calculate_rewards(inputs, prompts, completions, completion_ids_list)``: TRL's per-function
          reward matrix, kept as ``last_rewards`` (to cross-check against the environments' records);
        - ``_generate_and_score_completions(inputs)``: timed; a training batch goes to ``batch_sink``.

        Both module names are swapped only while TRL's own call runs, so no other trainer (and nothing
        after it) sees them. Everything else uses TRL's public API: ``environment_factory`` (the trainer's
        ``EpisodeContext``), ``TrainerCallback``s (phase stamps per step, extra saves, checkpoint
        installation). The probe scores through ``token_logps``, so TRL's private scoring method is named
        here only.
        """

        batch_sink: BatchSink | None = None
        last_rewards: Any = None
        generation_seconds: float = 0.0

        def __init__(
            self, *args: Any, engine_seed: int | None = None, compact_logprobs: bool = False, **kwargs
        ):
            self.compact_logprobs = compact_logprobs
            engine = getattr(trl_vllm, "LLM", None)  # absent where vLLM is not installed (CPU)
            if engine_seed is None or engine is None:
                super().__init__(*args, **kwargs)
                return

            def seeded(*engine_args: Any, **engine_kwargs: Any) -> Any:
                engine_kwargs["seed"] = engine_seed + int(engine_kwargs.get("seed") or 0)
                return engine(*engine_args, **engine_kwargs)

            with _swapped(trl_vllm, "LLM", seeded):
                super().__init__(*args, **kwargs)

        def roll_out(self, inputs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[float]]:
            """One generation batch through TRL's tool loop and scoring (train or eval mode, as the model
            is): TRL's batch output and each rollout's summed reward."""
            output = self._generate_and_score_completions(inputs)
            return output, self.last_rewards.nansum(dim=1).tolist()

        def token_logps(self, model: Any, input_ids: Any, attention_mask: Any, completion_length: int) -> Any:
            """Per-token log-probabilities of one sequence's last ``completion_length`` tokens, as TRL's loss
            computes them (the probe's score vectors are their gradients)."""
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, completion_length, batch_size=1
            )
            return logps

        def _get_per_token_logps_and_entropies(self, *args, **kwargs):
            if not self.compact_logprobs:
                return super()._get_per_token_logps_and_entropies(*args, **kwargs)
            with _swapped(trl_utils, "_use_triton", lambda device: True):
                return super()._get_per_token_logps_and_entropies(*args, **kwargs)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # noqa: D401
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self.last_rewards = rewards.detach().cpu().clone()
            return rewards

        def _generate_and_score_completions(self, inputs):
            training = self.model.training
            start = time.perf_counter()
            output = super()._generate_and_score_completions(inputs)
            seconds = time.perf_counter() - start
            self.generation_seconds += seconds
            if training and self.batch_sink is not None:
                rewards = self.last_rewards.nansum(dim=1).tolist()
                self.batch_sink(self, inputs, output, rewards, seconds)
            return output

    return PairedGRPOTrainer


def build_trainer(
    model: Any,
    tokenizer: Any,
    settings: Settings,
    dataset: Any,
    output_dir: str | Path,
    seed: int,
    episodes: EpisodeContext,
    *,
    peft_config: Any = None,
    evaluation: bool = False,
    callbacks: list | None = None,
    importance_sampling: bool = False,
    sampling_seed: int | None = None,
) -> Any:
    """The one place that constructs the trainer (train, evaluate, diagnose and probe all come here).

    ``episodes``: the context every environment instance of this trainer shares (a fresh one per trainer)."""
    from paired_rollouts.training.callbacks import SaveAtSteps, StampPhase

    cls = _trainer_class()
    callbacks = list(callbacks or [])
    if not evaluation:
        callbacks.insert(0, StampPhase(episodes))
    extra = sorted(settings.training.extra_checkpoint_steps)
    if extra and not evaluation:
        callbacks.append(SaveAtSteps(extra))
    engine_seed = None
    cpu_engine = settings.stack.backend == "vllm" and settings.stack.device == "cpu"
    if settings.stack.backend == "vllm":
        engine_seed = vllm_seed(seed) if sampling_seed is None else sampling_seed
    if cpu_engine:
        plain_cpu_linears()
    trainer = cls(
        model=model,
        reward_funcs=[],
        args=grpo_args(
            settings, output_dir, seed, evaluation=evaluation, importance_sampling=importance_sampling
        ),
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=episodes.new_environment,
        peft_config=peft_config,
        callbacks=callbacks or None,
        engine_seed=engine_seed,
        compact_logprobs=settings.training.compact_logprobs,
    )
    if cpu_engine:
        reprocessing_sync(trainer.vllm_generation)
    return trainer
