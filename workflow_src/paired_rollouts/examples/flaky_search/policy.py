"""A tabular log-linear softmax agent for ``FlakySearch``: one logit per (context, action).

The context is what the last tool said (nothing yet, an option found, nothing found, confirmed,
refuted); the policy picks an action from the context's menu with probability softmax(theta[context]).
The score of a decision is exact: d log pi(a | c) / d theta[c, b] = 1[b = a] - pi(b | c), so a rollout's
score is a sum over its decisions and tool outputs never enter it (they only choose the next context).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: context -> its actions (the menu the policy chooses from).
CONTEXTS: dict[str, tuple[str, ...]] = {
    "start": ("search", "guess"),
    "found": ("answer", "verify", "search"),
    "nothing": ("search", "guess", "give_up"),
    "confirmed": ("answer", "search"),
    "refuted": ("search", "answer"),
}
#: The flat parameter layout: (context, action) in CONTEXTS order.
PARAMETERS: tuple[tuple[str, str], ...] = tuple((c, a) for c, acts in CONTEXTS.items() for a in acts)
_OFFSET: dict[str, int] = {}
for _i, (_c, _a) in enumerate(PARAMETERS):
    _OFFSET.setdefault(_c, _i)

#: The starting policy: it searches, but answers what it finds without checking (p = 0.76), gives up
#: or guesses after a failed search half the time, and answers a refuted option half the time.
INITIAL_LOGITS: dict[str, tuple[float, ...]] = {
    "start": (1.5, 0.0),
    "found": (1.0, -0.5, -1.5),
    "nothing": (0.0, 0.0, -0.5),
    "confirmed": (1.5, 0.0),
    "refuted": (0.0, 0.0),
}


def initial_theta() -> np.ndarray:
    return np.array([v for c in CONTEXTS for v in INITIAL_LOGITS[c]], dtype=float)


def probabilities(theta: np.ndarray, context: str) -> list[float]:
    """softmax(theta[context]) over the context's menu."""
    start = _OFFSET[context]
    logits = [float(x) for x in theta[start : start + len(CONTEXTS[context])]]
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    return [w / total for w in weights]


@dataclass
class Rollout:
    """One episode: the decisions (context, action index, probabilities) and the outcome."""

    decisions: list[tuple[str, int, list[float]]] = field(default_factory=list)
    true_success: bool = False
    observed_reward: float = 0.0
    faults: list[str] = field(default_factory=list)

    def score(self, size: int) -> np.ndarray:
        """Sum over decisions of d log pi(a | c) / d theta."""
        grad = np.zeros(size)
        for context, action, probs in self.decisions:
            start = _OFFSET[context]
            grad[start : start + len(probs)] -= probs
            grad[start + action] += 1.0
        return grad


def _context(reply: dict[str, Any]) -> str:
    if "confirmed" in reply:
        return "confirmed" if reply["confirmed"] else "refuted"
    if reply.get("result"):
        return "found"
    return "nothing"


def play(env: Any, row: dict[str, Any], theta: np.ndarray, rng: random.Random) -> Rollout:
    """Run one episode of ``env`` (a ``FlakySearch``, reset with ``row``) with the policy ``theta``."""
    question = env.reset(**row)
    options = env.task.options
    rollout = Rollout()
    context, candidate = "start", None
    while not env.done:
        probs = probabilities(theta, context)
        action_index = _sample(probs, rng)
        action = CONTEXTS[context][action_index]
        rollout.decisions.append((context, action_index, probs))
        if action == "search":
            reply = json.loads(env.search(question))
            if reply.get("result"):
                candidate = reply["result"]
        elif action == "verify":
            reply = json.loads(env.verify(candidate))
            if "error" in reply:  # the candidate is still unverified
                reply = {"result": candidate}
        elif action == "answer":
            env.answer(candidate)
            break
        elif action == "guess":
            env.answer(options[rng.randrange(len(options))])
            break
        else:  # give_up
            env.answer("")
            break
        context = _context(reply)
    rollout.true_success = bool(env.true_success)
    rollout.observed_reward = env.get_reward()
    rollout.faults = list(env.faults_met)
    return rollout


def _sample(probs: list[float], rng: random.Random) -> int:
    u = rng.random()
    total = 0.0
    for i, p in enumerate(probs[:-1]):
        total += p
        if u < total:
            return i
    return len(probs) - 1
