"""The scripted-call policy's vLLM carrier without vLLM: the rows it keeps follow vLLM's persistent batch
(requests removed, added, swapped, moved), and forcing leaves exactly one finite logit per row."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from paired_rollouts.training.scripted_calls import _follow_batch, _forcing

SWAP, MOVE = "swap", "move"  # vLLM's MoveDirectionality members stand in here


class _Policy:
    def forced(self, prompt_ids: list[int]) -> list[int]:
        return [prompt_ids[0] + 1, prompt_ids[0] + 2]  # a piece that depends on the prompt


def test_rows_follow_the_batch_and_forcing_picks_the_next_token() -> None:
    rows: dict = {}
    update = SimpleNamespace(removed=[], added=[(0, None, [3], []), (1, None, [5], [9])], moved=[])
    _follow_batch(rows, update, _Policy(), SWAP)
    _follow_batch(rows, SimpleNamespace(removed=[], added=[], moved=[(0, 1, SWAP)]), _Policy(), SWAP)
    assert rows == {0: ([6, 7], [9]), 1: ([4, 5], [])}
    _follow_batch(rows, SimpleNamespace(removed=[0], added=[], moved=[(1, 0, MOVE)]), _Policy(), SWAP)
    assert rows == {0: ([4, 5], [])}

    logits = torch.randn(2, 10)
    _forcing(logits, 0, [4, 5], 1, eos=9)  # one token out: the piece's second
    _forcing(logits, 1, [4, 5], 2, eos=9)  # the piece is out: end of turn
    assert torch.isfinite(logits).sum() == 2
    assert int(logits[0].argmax()) == 5 and int(logits[1].argmax()) == 9
