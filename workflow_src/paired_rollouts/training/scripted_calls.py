"""A scripted-call policy for the GPU check: generation constrained to the scripted reference agent's calls.

A randomly initialised model never emits a tool call, so a check with one would never run the multi-turn
tool loop, its masks, the rewards of real episodes or vLLM's prefix caching across turns. This policy
forces, token by token, the completion the scripted reference agent (naive policy: each planned call once,
``agents/scripted.py``) makes at this turn of this task: the task is the one whose request the prompt
holds, the turn is the number of tool responses in the prompt; the call is the plan's next one (find the
customer, open each named order, the oracle writes), then ``finish``, then the final words. Everything
else is the real path: TRL renders, parses and runs the calls, the environments answer (noise included),
the completion grows turn by turn, the loss and the probe score the forced tokens under the model.

Two carriers of the same rule: a vLLM v1 logits processor (``vllm_processor``) and a transformers one
(``hf_processor``). Every other token's logit becomes -inf, so vLLM's processed log-probabilities of the
forced tokens are 0 and TRL's importance-sampling ratios mean nothing here (they are computed, as in a
real run). Used only by ``scripts/gpu_check.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.training import chat

FINAL_WORDS = "All requested changes are made."
TOOL_RESPONSE = "<tool_response>"


class ScriptedCalls:
    """The forced completion (token ids, ending with the end-of-turn token) for a prompt's token ids."""

    def __init__(self, tokenizer: Any, tasks_dir: str | Path) -> None:
        from paired_rollouts.backoffice.tasks import load_pool

        self.tokenizer = tokenizer
        self.tasks: dict[str, dict[str, Any]] = {}
        for pool in ("train", "validation", "test", "diagnostic"):
            path = Path(tasks_dir) / f"{pool}.jsonl"
            if path.is_file():
                for task in load_pool(path):
                    self.tasks.setdefault(task["instruction"], task)
        self._plans: dict[str, list[dict[str, Any]]] = {}
        self._pieces: dict[tuple[str, int], list[int]] = {}

    def plan(self, task: dict[str, Any]) -> list[dict[str, Any]]:
        from paired_rollouts.agents.scripted import lookup_calls
        from paired_rollouts.backoffice.world import World

        key = task["task_id"]
        if key not in self._plans:
            world = World.generate(int(task["world_seed"]))
            steps = lookup_calls(task, world) + list(task["oracle_plan"])
            self._plans[key] = steps + [{"tool": "finish", "args": {"summary": "done"}}]
        return self._plans[key]

    def task_of(self, prompt: str) -> dict[str, Any]:
        for instruction, task in self.tasks.items():
            if instruction in prompt:
                return task
        raise RuntimeError("scripted calls: no task's request appears in the prompt")

    def forced(self, prompt_ids: list[int]) -> list[int]:
        prompt = self.tokenizer.decode(list(prompt_ids), skip_special_tokens=False)
        task = self.task_of(prompt)
        turn = prompt.count(TOOL_RESPONSE)
        key = (task["task_id"], turn)
        if key not in self._pieces:
            self._pieces[key] = self._piece(task, turn)
        return self._pieces[key]

    def _piece(self, task: dict[str, Any], turn: int) -> list[int]:
        """What the template renders for the assistant's next message, up to its end-of-turn token."""
        plan = self.plan(task)
        if turn < len(plan):
            message = chat.tool_call_message([(plan[turn]["tool"], plan[turn]["args"])])
        else:
            message = {"role": "assistant", "content": FINAL_WORDS}
        prompt = chat.prompt_messages(task)
        before = chat.render(self.tokenizer, prompt, None, add_generation_prompt=True)
        after = chat.render(self.tokenizer, prompt + [message], None)
        if not after.startswith(before):
            raise RuntimeError("scripted calls: the chat template is not prefix-preserving")
        text = after[len(before) :]
        eos = self.tokenizer.eos_token
        text = text[: text.index(eos) + len(eos)]
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]


def _forcing(logits: Any, row: int, forced: list[int], generated: int, eos: int) -> None:
    """Leave only the forced token's logit (``eos`` once the piece is out)."""
    token = forced[generated] if generated < len(forced) else eos
    value = logits[row, token].clone()
    logits[row].fill_(float("-inf"))
    logits[row, token] = value


def _follow_batch(
    rows: dict[int, tuple[list[int], list[int]]], update: Any, policy: ScriptedCalls, swap: Any
) -> None:
    """Keep ``rows`` (batch index -> (forced ids, the request's output ids)) in step with vLLM's persistent
    batch: requests removed, added (their forced piece looked up from the prompt) and moved or swapped."""
    for index in update.removed:
        rows.pop(index, None)
    for index, _params, prompt_ids, output_ids in update.added:
        rows[index] = (policy.forced(prompt_ids or []), output_ids)
    for a, b, direction in update.moved:
        if direction == swap:
            rows[a], rows[b] = rows[b], rows[a]
        else:
            rows[b] = rows.pop(a)


def vllm_processor(policy: ScriptedCalls) -> type:
    """A vLLM v1 ``LogitsProcessor`` class (``LLM(logits_processors=[cls])``) that applies ``policy``."""
    from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

    eos = policy.tokenizer.eos_token_id

    class ScriptedCallsProcessor(LogitsProcessor):
        def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
            self.rows: dict[int, tuple[list[int], list[int]]] = {}

        def is_argmax_invariant(self) -> bool:
            return False

        def update_state(self, batch_update: BatchUpdate | None) -> None:
            if batch_update is not None:
                _follow_batch(self.rows, batch_update, policy, MoveDirectionality.SWAP)

        def apply(self, logits: Any) -> Any:
            for index, (forced, output_ids) in self.rows.items():
                _forcing(logits, index, forced, len(output_ids), eos)
            return logits

    return ScriptedCallsProcessor


def hf_processor(policy: ScriptedCalls, pad_token_id: int) -> Any:
    """A transformers ``LogitsProcessor`` for one ``generate`` call (prompts are the ids before its first step)."""
    from transformers import LogitsProcessor

    eos = policy.tokenizer.eos_token_id

    class ScriptedCallsHF(LogitsProcessor):
        start: int | None = None
        forced: list[list[int]] = []

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if self.start is None:
                self.start = input_ids.shape[1]
                self.forced = [
                    policy.forced([t for t in row.tolist() if t != pad_token_id]) for row in input_ids
                ]
            for row, forced in enumerate(self.forced):
                _forcing(scores, row, forced, input_ids.shape[1] - self.start, eos)
            return scores

    return ScriptedCallsHF()
