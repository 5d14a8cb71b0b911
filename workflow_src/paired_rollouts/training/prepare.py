"""``paired-rollouts model prepare``: any Qwen3.5 snapshot -> a text-only ``Qwen3_5ForCausalLM`` snapshot.

Why: the hub snapshot of Qwen3.5-2B is the vision-language ``Qwen3_5ForConditionalGeneration``. Training
loads only its language model, whose parameters are named ``model.layers.N...``; TRL starts colocated vLLM
on the model's own folder and, at every weight sync, pushes those text-model names. vLLM builds the VL
class for a VL folder, and its name mapper for that class does not rewrite ``model.layers.`` (it maps
``model.language_model.``, ``model.visual.``, ``lm_head.``), so the first sync would fail before the first
generation. A text-only folder makes vLLM build its ``Qwen3_5ForCausalLM``, whose names are exactly the
names TRL pushes. Every learning command (train, evaluate, diagnose, probe) loads the prepared folder.

What it does: config -> the text config with ``architectures: [Qwen3_5ForCausalLM]``; weights renamed
``model.language_model.X`` -> ``model.X`` (text-only sources unchanged), the vision tower (``model.visual.``)
and multi-token-prediction heads (``mtp.``) dropped, the resulting names checked against the text model's
own parameter names; tokenizer files, chat template and generation config copied; the chat template must
be TRL's shipped Qwen3.5 template byte for byte (TRL only then parses Qwen3.5 tool calls). The output
folder appears whole or not at all (built in a sibling temp folder, renamed into place).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError

TEXT_ARCHITECTURE = "Qwen3_5ForCausalLM"
VL_PREFIX = "model.language_model."
DROPPED_PREFIXES = ("model.visual.", "mtp.")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "generation_config.json",
)
PREPARED_MARKER = "prepared.json"


def resolve_source(source: str) -> Path:
    """A local folder, or a hub id already in the local HF cache (GPU nodes download it beforehand)."""
    path = Path(source)
    if path.is_dir():
        return path
    if "/" in source and not source.startswith((".", "/")):
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(source, local_files_only=True))
        except Exception as exc:  # noqa: BLE001 - any cache miss gets the same fix
            raise UserError(
                f"--source {source}: not a folder and not in the local Hugging Face cache ({type(exc).__name__}); "
                f"download it first: huggingface-cli download {source}"
            ) from None
    raise UserError(f"--source {source}: no such folder; give a Qwen3.5 snapshot folder or a hub id")


def text_config_dict(source: Path) -> tuple[dict[str, Any], bool]:
    """(the text model's config.json content, whether the source was the VL composite)."""
    path = source / "config.json"
    if not path.is_file():
        raise UserError(f"{path}: not found; --source must be a Qwen3.5 model snapshot folder")
    raw = json.loads(path.read_text(encoding="utf-8"))
    model_type = raw.get("model_type")
    if model_type == "qwen3_5":
        text = dict(raw.get("text_config") or {})
        if not text:
            raise UserError(
                f"{path}: a qwen3_5 (vision-language) config without text_config; is the snapshot complete?"
            )
        # The composite keeps tie_word_embeddings at the top level; the text model must see it.
        if "tie_word_embeddings" in raw:
            text["tie_word_embeddings"] = raw["tie_word_embeddings"]
        vl = True
    elif model_type == "qwen3_5_text":
        text, vl = dict(raw), False
    else:
        raise UserError(
            f"{path}: model_type {model_type!r} is not a Qwen3.5 model (qwen3_5 or qwen3_5_text); "
            "model prepare handles the Qwen3.5 family only"
        )
    text["model_type"] = "qwen3_5_text"
    text["architectures"] = [TEXT_ARCHITECTURE]
    text.pop("_name_or_path", None)
    return text, vl


def expected_keys(config_dict: dict[str, Any]) -> set[str]:
    """The tensor names a saved ``Qwen3_5ForCausalLM`` of this config holds (built on the meta device)."""
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    values = {
        k: v
        for k, v in config_dict.items()
        if k not in ("architectures", "model_type", "transformers_version")
    }
    config = Qwen3_5TextConfig(**values)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    # named_parameters drops tied duplicates (lm_head when embeddings are tied), as save_pretrained does.
    names = {n for n, _ in model.named_parameters()} | {
        n for n, _ in model.named_buffers(remove_duplicate=True) if n in model.state_dict()
    }
    return names


def rename(name: str) -> str | None:
    """The text model's name for a source tensor, or None when the tensor is dropped."""
    if name.startswith(DROPPED_PREFIXES):
        return None
    if name.startswith(VL_PREFIX):
        return "model." + name[len(VL_PREFIX) :]
    return name


def _weight_files(source: Path) -> list[Path]:
    index = source / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        return [source / s for s in shards]
    single = source / "model.safetensors"
    if single.is_file():
        return [single]
    raise UserError(
        f"{source}: no model.safetensors or model.safetensors.index.json; the snapshot is incomplete"
    )


def check_chat_template(folder: Path, source: Path) -> str:
    """The tokenizer's chat template must be one of TRL's shipped Qwen3.5 templates, byte for byte."""
    from trl import chat_template_utils as ctu

    from paired_rollouts.training.tokenizer import CHAT_TEMPLATE_NAME

    template_file = folder / "chat_template.jinja"
    if template_file.is_file():
        template, where = template_file.read_text(encoding="utf-8"), "chat_template.jinja"
    else:
        config = folder / "tokenizer_config.json"
        template = (
            json.loads(config.read_text(encoding="utf-8")).get("chat_template") if config.is_file() else None
        )
        where = "tokenizer_config.json (chat_template)"
    known = {
        "qwen3_5_nothink.jinja": ctu.qwen3_5_nothink_chat_template,
        "qwen3_5_think.jinja": ctu.qwen3_5_think_chat_template,
    }
    for name, text in known.items():
        if template == text:
            return name
    raise UserError(
        f"{source / where.split(' ')[0]}: the chat template is not TRL's Qwen3.5 template byte for byte, so TRL "
        f"would not parse Qwen3.5 tool calls; rerun with --chat-template trl to install TRL's "
        f"{CHAT_TEMPLATE_NAME} (trl/chat_templates/{CHAT_TEMPLATE_NAME})"
    )


def prepare(  # noqa: C901 - the snapshot's steps in order, each refusing with its own message
    source_arg: str, out: str | Path, *, chat_template: str = "check", max_shard_bytes: int = 5 << 30
) -> dict:
    """Write the text-only snapshot to ``out`` (atomically) and return its report (also ``prepared.json``)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from paired_rollouts.io import atomic_write_json, sha256_file
    from paired_rollouts.training.tokenizer import qwen35_chat_template

    if chat_template not in ("check", "trl"):
        raise UserError(f"--chat-template {chat_template!r}: use check or trl")
    source = resolve_source(source_arg)
    config, was_vl = text_config_dict(source)
    files = _weight_files(source)
    want = expected_keys(config)

    out_dir = Path(out)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        got: dict[str, str] = {}
        dropped = 0
        shards: list[dict[str, Any]] = []
        current: dict[str, Any] = {}
        size = 0

        def flush() -> None:
            nonlocal current, size
            if current:
                shards.append(current)
                current, size = {}, 0

        for path in files:
            with safe_open(str(path), "pt") as handle:
                for name in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
                    target = rename(name)
                    if target is None:
                        dropped += 1
                        continue
                    if (
                        target == "lm_head.weight"
                        and config.get("tie_word_embeddings")
                        and target not in want
                    ):
                        dropped += 1  # a tied head saved anyway: the embedding is the head
                        continue
                    if target in got:
                        raise UserError(
                            f"{path}: tensor {target} appears twice after renaming; the snapshot is inconsistent"
                        )
                    tensor = handle.get_tensor(name)
                    nbytes = tensor.numel() * tensor.element_size()
                    if current and size + nbytes > max_shard_bytes:
                        flush()
                    current[target] = tensor.contiguous()
                    size += nbytes
                    got[target] = name
        flush()
        missing, extra = sorted(want - set(got)), sorted(set(got) - want)
        if missing or extra:
            raise UserError(
                f"{source}: weights do not match a Qwen3_5ForCausalLM of its config (missing {missing[:3]}, "
                f"unexpected {extra[:3]}); the snapshot is incomplete or not a Qwen3.5 checkpoint"
            )
        weight_map: dict[str, str] = {}
        names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
        if len(shards) == 1:
            names = ["model.safetensors"]
        for shard, fname in zip(shards, names, strict=True):
            save_file(shard, str(tmp / fname), metadata={"format": "pt"})
            weight_map.update({k: fname for k in shard})
        if len(shards) > 1:
            total = sum(t.numel() * t.element_size() for s in shards for t in s.values())
            (tmp / "model.safetensors.index.json").write_text(
                json.dumps(
                    {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
                    indent=2,
                    sort_keys=True,
                )
                + "\n",
                encoding="utf-8",
            )
        shards.clear()
        (tmp / "config.json").write_text(
            json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        copied = []
        for fname in TOKENIZER_FILES:
            if (source / fname).is_file():
                shutil.copyfile(source / fname, tmp / fname)
                copied.append(fname)
        if not {"tokenizer.json", "tokenizer_config.json"} & set(copied):
            raise UserError(
                f"{source}: no tokenizer.json or tokenizer_config.json; the snapshot has no tokenizer"
            )
        if chat_template == "trl":
            (tmp / "chat_template.jinja").write_text(qwen35_chat_template(), encoding="utf-8")
            cfg = tmp / "tokenizer_config.json"
            if cfg.is_file():
                data = json.loads(cfg.read_text(encoding="utf-8"))
                if data.pop("chat_template", None) is not None:
                    cfg.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        template = check_chat_template(tmp, source)
        report = {
            "source": str(source_arg),
            "source_was_vision_language": was_vl,
            "architecture": TEXT_ARCHITECTURE,
            "tensors": len(got),
            "dropped_tensors": dropped,
            "chat_template": template,
            "chat_template_installed_from_trl": chat_template == "trl",
            "copied": copied,
            "files_sha256": {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()},
        }
        atomic_write_json(tmp / PREPARED_MARKER, report)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old")
            if old.exists():
                shutil.rmtree(old)
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old)
        else:
            tmp.rename(out_dir)
        return report
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def register(subparsers: Any) -> None:
    model = subparsers.add_parser(
        "model",
        help="model preparation (Qwen3.5 snapshot -> text-only Qwen3_5ForCausalLM snapshot)",
        description="Model sub-commands.",
    )
    sub = model.add_subparsers(dest="model_command", required=True, metavar="MODEL_COMMAND")
    p = sub.add_parser(
        "prepare",
        help="turn a Qwen3.5 snapshot (vision-language or text-only) into a text-only snapshot",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--source", required=True, help="snapshot folder or hub id in the local HF cache (Qwen/Qwen3.5-2B)"
    )
    p.add_argument("--out", required=True, help="output folder, e.g. results/models/paper/prepared")
    p.add_argument(
        "--chat-template",
        default="check",
        choices=("check", "trl"),
        help="check: refuse a template that is not TRL's Qwen3.5 copy; trl: install TRL's copy",
    )
    p.set_defaults(handler=_prepare_cli)


def _prepare_cli(args: Any) -> int:
    report = prepare(args.source, args.out, chat_template=args.chat_template)
    print(
        f"model prepare: {report['tensors']} tensors ({report['dropped_tensors']} dropped), "
        f"template {report['chat_template']} -> {args.out}"
    )
    return 0
