"""Scripted-reference transcripts, the stand-in tokenizer, and the supervised warm start.

A randomly initialised tiny model never emits a tool call, so GRPO would see only zero rewards. The
stand-in is therefore first trained (full fine-tune, next-token loss on the assistant tokens only) on
transcripts of the scripted reference agent: look the customer up, open each named order, make the
planned writes (retrying unavailable services, waiting out rate limits, re-reading after a timeout),
finish. Transcripts are tokenized turn by turn exactly as TRL's tool loop assembles a rollout (prompt ids
+ generated ids + tool-suffix ids), so the warm-started model meets the same token sequences in GRPO.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

from paired_rollouts.settings import ModelSettings
from paired_rollouts.training import chat

log = logging.getLogger(__name__)

FINAL_WORDS = "All requested changes are made."
# Atom kinds that are consistently relabelled in warm-start batches (see ``AtomRelabeller``).
# Every kind whose value a tool call copies from the instruction or a tool response; not the refund reasons,
# which the templates fix (a cancellation is always "customer request"), so they are not copied.
RELABEL_KINDS = (
    "id:C",
    "id:O",
    "id:SKU-",
    "id:S",
    "id:T",
    "first_name",
    "last_name",
    "street",
    "city",
    "carrier",
    "category",
    "priority",
    "summary",
    "day",
)
MAX_ATTEMPTS = 3
CHECK_TRANSCRIPTS = 32  # transcripts for the teacher-forced check written to warm_start.json
ATOM_LOSS_WEIGHT = 10.0


# ---------------------------------------------------------------------------------------------------
# transcripts
# ---------------------------------------------------------------------------------------------------
def scripted_transcript(
    task: dict[str, Any], noise: Any = None, schedule_seed: int | None = None
) -> list[dict]:
    """The messages of one scripted episode: prompt, then one tool call per assistant turn."""
    from paired_rollouts.agents.scripted import lookup_calls
    from paired_rollouts.backoffice.world import World
    from paired_rollouts.episode import EpisodeSession

    session = EpisodeSession()
    session.reset(task=task, schedule_seed=schedule_seed, noise=noise, phase="warmstart")
    messages: list[dict[str, Any]] = list(chat.prompt_messages(task))
    plan = lookup_calls(task, World.generate(int(task["world_seed"]))) + list(task["oracle_plan"])

    def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        response = session.call(tool, **args)
        messages.append(chat.tool_call_message([(tool, args)]))
        messages.append(chat.tool_message(tool, response))
        return json.loads(response)

    over = False
    for step in plan:
        for _ in range(MAX_ATTEMPTS):
            reply = call(step["tool"], step["args"])
            error = reply.get("error") if isinstance(reply.get("error"), dict) else None
            code = error.get("code") if error else None
            if code in ("BUDGET_EXCEEDED", "EPISODE_FINISHED"):
                over = True
                break
            if code == "RATE_LIMITED":
                reply = call("wait", {"seconds": int(error.get("retry_after_seconds", 30))})
                continue
            if code == "SERVICE_UNAVAILABLE":
                continue
            if code == "TIMEOUT" and step["args"].get("order_id"):
                call("get_order", {"order_id": step["args"]["order_id"]})
            break
        if over:
            break
    if not over:
        call("finish", {"summary": "done"})
    messages.append({"role": "assistant", "content": FINAL_WORDS})
    return messages


def transcript_tasks(tasks: list[dict[str, Any]], n: int, seed: int) -> list[tuple[dict, Any, int | None]]:
    """(task, noise, seed) triples: half clean, half under C2 transition noise, so retries are seen."""
    from paired_rollouts.noise.config import NoiseConfig

    rng = random.Random(f"warmstart-{seed}")
    chosen: list[dict[str, Any]] = []
    while len(chosen) < n:  # cycle through the pool in shuffled order (a task reappears with other noise)
        chosen += [tasks[i] for i in rng.sample(range(len(tasks)), len(tasks))]
    chosen = chosen[:n]
    out = []
    for i, task in enumerate(chosen):
        if i % 2 == 0:
            out.append((task, None, None))
        else:
            out.append((task, NoiseConfig.transition(0.25), rng.randrange(2**31)))
    return out


class AtomRelabeller:
    """Fresh, consistent relabelling of every copied value (``RELABEL_KINDS``), one random bijection per kind
    and batch.

    Applied to token ids (every atom is one token), so a transcript stays self-consistent (instruction, tool
    responses and tool calls agree) while its ids no longer identify the task. The model can neither memorise
    "task -> ids" nor "transcript -> ids" (each batch draws new bijections), so the only way to predict an id
    is to copy it from the context; without this the tiny stand-in memorises and copies almost nothing.
    """

    def __init__(self, tokenizer: Any, seed: int) -> None:
        import torch

        from paired_rollouts.training.tokenizer import atom_groups

        vocab = tokenizer.get_vocab()
        groups = atom_groups()
        self.kinds = [
            torch.tensor([vocab[a] for a in groups[k] if a in vocab], dtype=torch.long) for k in RELABEL_KINDS
        ]
        self.kinds = [ids for ids in self.kinds if len(ids) > 1]
        self.size = len(tokenizer)
        self.generator = torch.Generator().manual_seed(seed)

    def table(self) -> Any:
        """A lookup table (token id -> token id) for the next batch."""
        import torch

        table = torch.arange(self.size)
        for ids in self.kinds:
            table[ids] = ids[torch.randperm(len(ids), generator=self.generator)]
        return table


def tool_functions() -> list[Any]:
    """The tool methods the trainer exposes (their schemas go into every prompt)."""
    from paired_rollouts.training.environment import BackOfficeEnv, tool_methods

    return tool_methods(BackOfficeEnv.__new__(BackOfficeEnv))


def render_texts(tokenizer: Any, transcripts: list[list[dict]]) -> list[str]:
    tools = tool_functions()
    return [chat.render(tokenizer, m, tools) for m in transcripts]


# ---------------------------------------------------------------------------------------------------
# tokenization turn by turn (what TRL's tool loop produces)
# ---------------------------------------------------------------------------------------------------
def _ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def encode_transcript(tokenizer: Any, messages: list[dict], tools: list[Any]) -> tuple[list[int], list[int]]:
    """(input ids, labels mask): 1 on tokens the policy generates, 0 on prompt and tool results."""
    eos = tokenizer.eos_token
    n_prompt = 2
    prompt_text = chat.render(tokenizer, messages[:n_prompt], tools, add_generation_prompt=True)
    ids = _ids(tokenizer, prompt_text)
    mask = [0] * len(ids)
    rendered = prompt_text
    i = n_prompt
    while i < len(messages):
        message = messages[i]
        full = chat.render(tokenizer, messages[: i + 1], tools)
        if not full.startswith(rendered):
            raise RuntimeError("chat template is not prefix-preserving for this transcript")
        generated = full[len(rendered) :]
        cut = generated.rfind(eos)
        generated = generated[: cut + len(eos)]  # the model stops at EOS; the newline is template glue
        piece = _ids(tokenizer, generated)
        ids += piece
        mask += [1] * len(piece)
        rendered += generated
        i += 1
        if message.get("tool_calls"):
            j = i
            while j < len(messages) and messages[j]["role"] == "tool":
                j += 1
            after = chat.render(tokenizer, messages[:j], tools, add_generation_prompt=True)
            if not after.startswith(rendered):
                raise RuntimeError("chat template is not prefix-preserving for tool results")
            suffix = after[len(rendered) :]
            piece = _ids(tokenizer, suffix)
            ids += piece
            mask += [0] * len(piece)
            rendered = after
            i = j
    return ids, mask


# ---------------------------------------------------------------------------------------------------
# building the stand-in
# ---------------------------------------------------------------------------------------------------
def build_tokenizer(tasks: list[dict[str, Any]], n_tasks: int, vocab_size: int, seed: int = 0) -> Any:
    """Train the stand-in tokenizer on rendered scripted transcripts."""
    from paired_rollouts.training.tokenizer import train_tokenizer

    pairs = transcript_tasks(tasks, n_tasks, seed)
    transcripts = [scripted_transcript(t, n, s) for t, n, s in pairs]
    bootstrap = train_tokenizer(["bootstrap"], 300)  # any tokenizer can render text with the template
    texts = render_texts(bootstrap, transcripts)
    return train_tokenizer(texts, vocab_size)


def _init_atom_embeddings(model: Any, tokenizer: Any, seed: int) -> None:
    """Give the atoms of one kind (all order ids, all cities, ...) a shared component in their embeddings.

    A copy then needs one attention pattern per kind ("the order id of the instruction") instead of one per
    id, which a tiny model learns in a few hundred steps. Atoms missing from ``tokenizer`` are skipped.
    """
    import torch

    from paired_rollouts.training.tokenizer import atom_groups

    weight = model.get_input_embeddings().weight
    vocab = tokenizer.get_vocab()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        scale = weight.std()
        for atoms in atom_groups().values():
            ids = [vocab[a] for a in atoms if a in vocab]
            if ids:
                shared = torch.randn(weight.shape[1], generator=generator) * scale
                weight[ids] += shared


def _length_batches(lengths: list[int], batch: int, rng: random.Random, window: int = 16) -> list[list[int]]:
    """One epoch of batches: shuffle, sort windows of ``window`` batches by length, shuffle the batches.

    Batches of similar lengths waste little compute on padding (the model is run on the padded width).
    """
    order = list(range(len(lengths)))
    rng.shuffle(order)
    out: list[list[int]] = []
    span = batch * window
    for start in range(0, len(order), span):
        chunk = sorted(order[start : start + span], key=lambda i: lengths[i])
        out += [
            chunk[k : k + batch] for k in range(0, len(chunk), batch) if len(chunk[k : k + batch]) == batch
        ]
    if not out:  # fewer transcripts than one batch: repeat them
        out = [[order[k % len(order)] for k in range(batch)]]
    rng.shuffle(out)
    return out


def _batch_tensors(picked: list[tuple[list[int], list[int]]], pad: int, table: Any) -> tuple[Any, Any, Any]:
    """Padded (input ids, labels, attention mask) with the batch's relabelling applied."""
    import torch

    width = max(len(ids) for ids, _ in picked)
    input_ids = torch.full((len(picked), width), pad, dtype=torch.long)
    labels = torch.full((len(picked), width), -100, dtype=torch.long)
    attention = torch.zeros((len(picked), width), dtype=torch.long)
    for row, (ids, mask) in enumerate(picked):
        tokens = table[torch.tensor(ids)]
        input_ids[row, : len(ids)] = tokens
        attention[row, : len(ids)] = 1
        labels[row, : len(ids)] = torch.where(torch.tensor(mask) == 1, tokens, -100)
    return input_ids, labels, attention


def warm_start(
    tokenizer: Any,
    tasks: list[dict[str, Any]],
    settings: ModelSettings,
    seed: int = 0,
    progress: bool = True,
) -> tuple[Any, dict[str, Any]]:
    """Build the tiny Qwen3.5 model from config and fine-tune it on scripted transcripts.

    What makes a tiny hybrid model learn to copy within minutes (each measured; docs/training.md): a
    curriculum whose first ``warm_start_short_frac`` of the steps uses the same transcripts rendered without
    the tool schemas (~3x shorter, so attention is not spread over the schema block while the copy forms);
    a learning rate of 1e-3 to 1.5e-3 (at 3e-3 the Gated-DeltaNet stack never forms a copy circuit, even on
    a 60-token synthetic copy task); fresh relabelling per batch (``AtomRelabeller``) and copied tokens
    weighted ``ATOM_LOSS_WEIGHT`` in the loss.
    """
    import torch
    from tqdm import tqdm
    from transformers import set_seed

    from paired_rollouts.training.model import build_random_model, standin_config
    from paired_rollouts.training.tokenizer import atom_tokens

    set_seed(seed)
    overrides = {
        "hidden_size": settings.hidden_size,
        "num_hidden_layers": settings.num_layers,
        "full_attention_interval": settings.full_attention_interval,
    }
    if settings.hidden_size < 96:
        overrides.update(
            intermediate_size=4 * settings.hidden_size,
            head_dim=16,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
        )
    config = standin_config(tokenizer, overrides)
    model = build_random_model(config, seed)
    _init_atom_embeddings(model, tokenizer, seed)
    tools = tool_functions()
    pairs = transcript_tasks(tasks, settings.warm_start_tasks, seed + 1)
    transcripts = [scripted_transcript(t, n, s) for t, n, s in pairs]
    encoded = [encode_transcript(tokenizer, m, tools) for m in transcripts]
    steps = settings.warm_start_steps
    short_steps = int(round(settings.warm_start_short_frac * steps))
    short = [encode_transcript(tokenizer, m, []) for m in transcripts] if short_steps else encoded
    lengths = [len(ids) for ids, _ in encoded]
    batch = settings.warm_start_batch
    # fused, as the GRPO trainer's (adamw_torch_fused): the unfused step's sqrt goes through MKL's vector
    # library, whose last bits follow the CPU even with the kernels pinned (training/kernels.py)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.warm_start_lr, weight_decay=0.0, fused=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 10) * max(0.05, 1 - s / max(1, steps))
    )
    # Copied atoms (ids, names, categories, ...) are a few percent of the assistant tokens but decide
    # success; their loss is weighted up so the copy is learned early rather than after the format.
    atom_mask = torch.zeros(len(tokenizer))
    vocab = tokenizer.get_vocab()
    atom_mask[[vocab[a] for a in atom_tokens() if a in vocab]] = 1.0
    relabeller = AtomRelabeller(tokenizer, seed)
    rng = random.Random(f"warmstart-order-{seed}")
    batches: list[list[int]] = []
    losses = []
    model.train()
    for step in tqdm(range(steps), desc="warm start", disable=not progress):
        if not batches:
            batches = _length_batches(lengths, batch, rng)
        source = short if step < short_steps else encoded
        input_ids, labels, attention = _batch_tensors(
            [source[i] for i in batches.pop()], tokenizer.pad_token_id, relabeller.table()
        )
        logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1]
        target = labels[:, 1:].reshape(-1)
        token_loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), target, ignore_index=-100, reduction="none"
        )
        weight = torch.where(target == -100, 0.0, 1.0)
        weight = weight + (ATOM_LOSS_WEIGHT - 1.0) * atom_mask[target.clamp(min=0)] * (weight > 0)
        loss = (token_loss * weight).sum() / weight.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    model.eval()
    report = {
        "transcripts": len(encoded),
        "tokens_mean": sum(lengths) / len(lengths),
        "tokens_max": max(lengths),
        "steps": steps,
        "short_steps": short_steps,
        "loss_first": losses[0] if losses else None,
        "loss_last": sum(losses[-10:]) / max(1, len(losses[-10:])) if losses else None,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    check = [
        encode_transcript(tokenizer, scripted_transcript(t, n, s), tools)
        for t, n, s in transcript_tasks(tasks, CHECK_TRANSCRIPTS, seed + 2)
    ]
    report.update(copy_accuracy(model, check, tokenizer.pad_token_id, atom_mask, relabeller))
    return model, report


def copy_accuracy(
    model: Any,
    encoded: list[tuple[list[int], list[int]]],
    pad: int,
    atom_mask: Any,
    relabeller: AtomRelabeller,
) -> dict[str, float]:
    """Teacher-forced accuracy on freshly relabelled transcripts: all policy tokens, and copied atoms only.

    The atom figure is what decides task success; it is written to warm_start.json so a stand-in that has
    not learned to copy is visible before any GRPO step is spent on it.
    """
    import torch

    hits = total = atom_hits = atom_total = 0
    with torch.no_grad():
        for start in range(0, len(encoded), 8):
            input_ids, labels, attention = _batch_tensors(encoded[start : start + 8], pad, relabeller.table())
            predicted = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1].argmax(-1)
            target = labels[:, 1:]
            policy = target != -100
            atoms = policy & (atom_mask[target.clamp(min=0)] > 0)
            correct = predicted == target
            hits += int(correct[policy].sum())
            total += int(policy.sum())
            atom_hits += int(correct[atoms].sum())
            atom_total += int(atoms.sum())
    return {
        "check_transcripts": len(encoded),
        "token_accuracy": hits / max(1, total),
        "copied_atom_accuracy": atom_hits / max(1, atom_total),
    }


def save_standin(model: Any, tokenizer: Any, out: str | Path, report: dict[str, Any]) -> None:
    from paired_rollouts.io import atomic_write_folder, atomic_write_json

    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None

    def write(folder: Path) -> None:
        model.save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
        atomic_write_json(folder / "warm_start.json", report)

    atomic_write_folder(out, write)  # all or none: config.json is the workflow's output
