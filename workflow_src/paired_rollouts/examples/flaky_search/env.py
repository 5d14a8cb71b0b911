"""A multiple-choice question, a flaky search tool, an honest but flaky verifier and a noisy grader.

The environment is written against ``paired_rollouts.pairing`` alone, in the shape TRL's
``environment_factory`` expects: public methods are the tools (``search``, ``verify``, ``answer``),
``reset(**row)`` starts an episode from a dataset row and ``get_reward()`` scores it. It never hears of
groups: ``reset`` receives its rollout's own ``schedule_seed`` (from ``PairedEnvironmentFactory``) and
builds a ``Schedule`` from it.

Luck here is recoverable. A search can fail (``unavailable``: an error; ``empty``: no result) or return a
*stale* answer, one of the question's distractors, which looks like any other answer; a verification can
fail (``unavailable``). An agent that verifies before answering, searches again after a refutation and
retries after a failure succeeds whatever the dice say; one that answers the first result it sees is at
the mercy of the first search. Each draw is keyed by the tool and the resource it acts on (the question,
and for ``verify`` the candidate), never by the query text, so rollouts sharing a seed meet the same luck
at the same logical point. The grader reports a correct answer as wrong with probability ``flip_rate``
(one draw per episode).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from paired_rollouts.pairing import FaultMixture, Schedule, derive_seed

SEARCH_FAULTS: tuple[str, ...] = ("unavailable", "empty", "stale")
VERIFY_FAULTS: tuple[str, ...] = ("unavailable",)
WORDS: tuple[str, ...] = (
    "amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kestrel", "lagoon", "meadow", "nimbus", "onyx", "prairie", "quartz", "raven", "sierra", "tundra",
    "umber", "valley", "willow", "xenon", "yarrow", "zephyr",
)  # fmt: skip


@dataclass(frozen=True)
class Task:
    """One question: the answer and its distractors (``options`` is every choice, in shown order)."""

    task_id: str
    question: str
    answer: str
    options: tuple[str, ...]

    @property
    def distractors(self) -> tuple[str, ...]:
        return tuple(o for o in self.options if o != self.answer)


def make_tasks(split: str, count: int) -> list[Task]:
    """``count`` questions of ``split``, a pure function of both: 2 to 4 options each."""
    tasks = []
    for i in range(count):
        rng = random.Random(derive_seed("flaky-search-task", split, i))
        options = tuple(rng.sample(WORDS, rng.randint(2, 4)))
        answer = options[rng.randrange(len(options))]
        task_id = f"{split}-{i:04d}"
        question = f"Question {task_id}: which of {', '.join(options)} is the code word?"
        tasks.append(Task(task_id, question, answer, options))
    return tasks


def _reply(**payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


class FlakySearch:
    """One rollout's episode: answer the question within ``budget`` tool calls (``answer`` is free)."""

    def __init__(
        self, tasks: Mapping[str, Task], faults: FaultMixture, flip_rate: float = 0.0, budget: int = 6
    ) -> None:
        self._tasks = tasks
        self._faults = faults
        self._flip_rate = flip_rate
        self._budget = budget
        self.task: Task | None = None
        self.schedule = Schedule(None)
        self.done = True
        self.calls = 0
        self.true_success = False
        self.flipped = False
        self.faults_met: list[str] = []

    # -- TRL's hooks ------------------------------------------------------------------------------------
    def reset(self, task_id: str, schedule_seed: int | None = None, **row: Any) -> str:
        """Start an episode on the task of ``task_id`` under the rollout's seed (None: clean)."""
        self.task = self._tasks[task_id]
        self.schedule = Schedule(schedule_seed, self._faults, self._flip_rate)
        self.done = False
        self.calls = 0
        self.true_success = False
        self.flipped = False
        self.faults_met = []
        return self.task.question

    def get_reward(self) -> float:
        """The grader's verdict: 1.0 for a correct answer unless the noisy grader flipped it."""
        return 1.0 if self.true_success and not self.flipped else 0.0

    # -- tools --------------------------------------------------------------------------------------------
    def search(self, query: str) -> str:
        """Search the knowledge base for the answer to the question.

        Args:
            query: What to search for.

        Returns:
            JSON with the best-matching option as "result" (null when nothing was found), or an "error".
        """
        task = self._count_call()
        if task is None:
            return _reply(error="episode over")
        fate = self.schedule.fate("search", task.task_id, types=SEARCH_FAULTS)
        if fate is None:
            return _reply(result=task.answer)
        self.faults_met.append(fate.kind)
        if fate.kind == "unavailable":
            return _reply(error="search is unavailable; retry")
        if fate.kind == "empty":
            return _reply(result=None)
        stale = task.distractors  # an outdated index: a plausible wrong option
        return _reply(result=stale[fate.detail % len(stale)])

    def verify(self, candidate: str) -> str:
        """Check a candidate answer against the source.

        Args:
            candidate: The option to check.

        Returns:
            JSON with "confirmed" true or false, or an "error".
        """
        task = self._count_call()
        if task is None:
            return _reply(error="episode over")
        fate = self.schedule.fate("verify", task.task_id, candidate, types=VERIFY_FAULTS)
        if fate is not None:
            self.faults_met.append(fate.kind)
            return _reply(error="verifier is unavailable; retry")
        return _reply(confirmed=candidate == task.answer)

    def answer(self, candidate: str) -> str:
        """Give the final answer and end the episode.

        Args:
            candidate: The option you answer.

        Returns:
            JSON acknowledging the answer.
        """
        if self.done or self.task is None:
            return _reply(error="episode over")
        self.done = True
        self.true_success = candidate == self.task.answer
        self.flipped = self.true_success and self.schedule.flipped()
        return _reply(answered=candidate)

    def _count_call(self) -> Task | None:
        """Count a tool call against the budget; the call past the budget ends the episode (a failure)."""
        if self.done or self.task is None:
            return None
        self.calls += 1
        if self.calls > self._budget:
            self.done = True
            return None
        return self.task


def options_of(tasks: Sequence[Task]) -> dict[str, Task]:
    """Tasks by id (what ``FlakySearch`` looks rows up in)."""
    return {task.task_id: task for task in tasks}
