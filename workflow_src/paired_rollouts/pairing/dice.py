"""Event-keyed dice: every random draw of an environment named by what it is for.

A draw is a pure function of (schedule seed, event key, repeat index). The event key is whatever the
environment names (a tool and the resource it acts on, never free text or call order), and the repeat
index counts how often that event happened in the episode. Rollouts that share a seed therefore meet the
same luck at the same logical point, whatever else they did: common random numbers that survive diverging
trajectories. ``Random(derive_seed(seed, "event", *key, repeat))`` is the generator of a draw; a fate takes
its first four draws (u, retry-after, detail, type), as the study's schedules do.

The fate draws have a compiled fast path (``_fate_draws.c``: the same numbers without seeding a whole
Mersenne Twister). It is used only when it is built and agrees with ``random.Random`` on this Python;
``PAIRED_ROLLOUTS_PURE_FATES=1`` switches it off. Either way the numbers are CPython's.
"""

from __future__ import annotations

import _random
import math
import numbers
import os
import random
import struct
import threading
from bisect import bisect as _bisect
from collections.abc import Mapping, Sequence
from hashlib import sha256 as _sha256
from itertools import accumulate
from typing import Any, NamedTuple

from paired_rollouts.pairing.errors import PairingError, seed_value, whole_number
from paired_rollouts.pairing.seeds import derive_seed

#: The waits (seconds) a fate's retry-after draw chooses from.
RETRY_AFTER_CHOICES: tuple[int, ...] = (15, 30, 45, 60)
#: A fate's detail is uniform on range(DETAIL_RANGE).
DETAIL_RANGE = 1_000_000


class Fate(NamedTuple):
    """What happens to one event: a fault of type ``kind``.

    ``retry_after`` (15, 30, 45 or 60) is what a rate limit asks the caller to wait; ``detail`` (uniform
    in [0, 1,000,000)) is for the environment to pick a particular of the fault, e.g. which field a read
    drops (``sorted(fields)[detail % len(fields)]``). Both are drawn for every fault, used or not.
    """

    kind: str
    retry_after: int
    detail: int


class FaultTable(NamedTuple):
    """A fault rate with the fault types one event can draw and their cumulative weights (precomputed)."""

    rate: float
    types: tuple[str, ...]
    cum_weights: list[float]


def _number(name: str, value: Any, upper: float | None) -> float:
    """``value`` as a float in [0, upper] (or >= 0): any real number (numpy scalars, Fraction), never a
    bool, a string, None, NaN or inf."""
    if type(value) is float:  # the common case, without the ABC check
        number = value
    else:
        try:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = math.nan
    if not math.isfinite(number):
        raise PairingError(f"{name} must be a finite number, not {value!r}")
    if number < 0 or (upper is not None and number > upper):
        bound = f"[0, {upper:g}]" if upper is not None else ">= 0"
        raise PairingError(f"{name} must lie in {bound}, not {value}")
    return number


def _probability(prob: Any) -> float:
    """A draw's probability: a float in [0, 1] passes as is (the per-call check is one comparison)."""
    if type(prob) is float and 0.0 <= prob <= 1.0:
        return prob
    return _number("probability", prob, 1.0)


def _repeat(repeat: Any) -> int:
    """A repeat index: an int >= 0 (numpy ints too, as ``operator.index`` takes them; never a bool)."""
    if type(repeat) is int and repeat >= 0:
        return repeat
    value = whole_number(repeat)
    if value < 0:
        raise PairingError(f"repeat must be an integer >= 0 (the event's 0-based occurrence), not {repeat!r}")
    return value


class FaultMixture:
    """Faults at ``rate`` per event, of the types in ``weights`` (type -> weight >= 0).

    Given a fault, its type is drawn with probability proportional to the weights of the types that
    can hit the event (``types`` of :meth:`table`; all of ``weights``, in their order, by default).
    """

    __slots__ = ("_rate", "_weights", "_tables")

    def __init__(self, rate: float, weights: Mapping[str, float]) -> None:
        self._rate = _number("fault rate", rate, 1.0)
        if not isinstance(weights, Mapping):
            raise PairingError("fault weights must be a mapping {fault type: weight}")
        self._weights = {str(k): _number(f"weight of {k}", v, None) for k, v in weights.items()}
        if self._rate > 0 and sum(self._weights.values()) <= 0:
            raise PairingError("a fault rate above 0 needs at least one positive fault weight")
        self._tables: dict[tuple[str, ...] | None, FaultTable | None] = {}

    @property
    def rate(self) -> float:
        """The fault rate per event (read-only: the cached tables hold it; build a new mixture)."""
        return self._rate

    @classmethod
    def from_rates(cls, rates: Mapping[str, float]) -> FaultMixture:
        """Each fault type at its own rate per event (``{"timeout": 0.1, "stale": 0.05}``): the mixture
        with ``rate`` = the sum of the rates (at most 1) and the rates as weights."""
        if not isinstance(rates, Mapping):
            raise PairingError("fault rates must be a mapping {fault type: rate}")
        total = math.fsum(_number(f"rate of {k}", v, 1.0) for k, v in rates.items())
        # rates meant to add up to 1 (0.33 + 0.56 + 0.11) may sum to 1 + 1 ulp
        return cls(1.0 if 1.0 < total <= 1.0 + 1e-12 else total, rates)

    @property
    def weights(self) -> dict[str, float]:
        """The weights as given (a copy)."""
        return dict(self._weights)

    def table(self, types: Sequence[str] | None = None) -> FaultTable | None:
        """The draw table of an event that ``types`` (in this order) can hit; None when it cannot fault.

        ``choices(types, cum_weights=accumulate(weights))`` is exactly ``choices(types, weights)``.
        Tables are cached per ``types``. A type the mixture does not hold weighs 0 (so a misspelt name
        can never be drawn); a single name must still come in a list, as a string is refused.
        """
        if isinstance(types, str):
            raise PairingError(
                f"types must be a list of fault type names, not the string {types!r}; write [{types!r}]"
            )
        key = None if types is None else tuple(types)
        if key in self._tables:
            return self._tables[key]
        names = tuple(self._weights) if key is None else key
        weights = [self._weights.get(t, 0.0) for t in names]
        table = (
            FaultTable(self.rate, names, list(accumulate(weights)))
            if self.rate > 0 and names and sum(weights) > 0
            else None
        )
        self._tables[key] = table
        return table

    def __repr__(self) -> str:
        return f"FaultMixture(rate={self.rate!r}, weights={self._weights!r})"


# -- the draws ----------------------------------------------------------------------------------------
#: ``Random.seed`` of the C base class: what ``Random(n)`` does for an int n, without the Python wrapper
_reseed = _random.Random.seed
#: the first 8 bytes of a digest as a big-endian unsigned int (``int.from_bytes(d[:8], "big")``)
_first_u64 = struct.Struct(">Q").unpack_from
#: one reseedable generator per thread (rollouts may run in several threads)
_THREAD = threading.local()


def _thread_rng(n: int) -> random.Random:
    """This thread's generator reseeded in place to the state ``Random(n)`` would have."""
    try:
        rng = _THREAD.rng
    except AttributeError:
        rng = _THREAD.rng = random.Random(0)
    _reseed(rng, n)
    return rng


def _draws_after_u(rng: random.Random) -> tuple[int, int, float]:
    """(retry index, detail, type draw): what ``choice(RETRY_AFTER_CHOICES)``, ``randrange(0, 1000000)``
    and ``choices(types, cum_weights=...)`` draw after u (CPython's ``random.py``), without their calls:
    rejection sampling on ``getrandbits``, then the ``random()`` that ``choices`` bisects with."""
    getrandbits = rng.getrandbits
    r = getrandbits(3)  # _randbelow(4): 4 .bit_length() == 3
    while r >= 4:
        r = getrandbits(3)
    detail = getrandbits(20)  # _randbelow(1000000): 1000000 .bit_length() == 20
    while detail >= 1000000:
        detail = getrandbits(20)
    return r, detail, rng.random()


def _fault(draws: tuple[int, int, float], table: FaultTable) -> Fate:
    retry_index, detail, v = draws
    cum = table.cum_weights
    kind = table.types[_bisect(cum, v * (cum[-1] + 0.0), 0, len(cum) - 1)]
    return Fate(kind, RETRY_AFTER_CHOICES[retry_index], detail)


def _inline_draws_agree() -> bool:
    """Do ``_draws_after_u`` and ``_fault`` give what the ``random`` methods give on this Python?"""
    table = FaultTable(1.0, ("a", "b", "c", "d", "e"), [0.45, 0.6, 0.7, 0.85, 1.0])
    for seed in range(64):
        rng = random.Random(seed)
        expect = Fate("", rng.choice(RETRY_AFTER_CHOICES), rng.randrange(0, DETAIL_RANGE))
        expect = expect._replace(kind=rng.choices(table.types, cum_weights=table.cum_weights)[0])
        if _fault(_draws_after_u(random.Random(seed)), table) != expect:
            return False
    return True


_INLINE_DRAWS = _inline_draws_agree()


def _pure_draws(n: int, p: float) -> tuple[int, int, float] | None:
    """What ``_fate_draws.fault_draws(n, p)`` returns, drawn with ``random.Random``: None when
    ``Random(n).random() >= p``, else the draws after u."""
    rng = _thread_rng(n)
    return None if rng.random() >= p else _draws_after_u(rng)


def _fate_by_methods(n: int, table: FaultTable) -> Fate | None:
    """The fate drawn with ``random``'s own methods: the path of a Python where the inlined draws differ."""
    rng = random.Random(n)
    if rng.random() >= table.rate:
        return None
    retry_after = rng.choice(RETRY_AFTER_CHOICES)
    detail = rng.randrange(0, DETAIL_RANGE)
    return Fate(rng.choices(table.types, cum_weights=table.cum_weights)[0], retry_after, detail)


def _compiled_draws_agree(fault_draws: Any) -> bool:
    """Does the compiled helper draw what ``random.Random`` draws on this Python? (checked once, on
    one- and two-word keys, both sides of p, and every retry index)"""
    seeds = (0, 1, 2**32 - 1, 2**32, 2**64 - 1, *range(2, 34), *(derive_seed("check", i) for i in range(96)))
    return all(fault_draws(n, p) == _pure_draws(n, p) for n in seeds for p in (0.25, 1.0))


def _load_compiled_draws() -> Any:
    """``_fate_draws.fault_draws`` when it is built and agrees with CPython, else None (the pure path)."""
    if os.environ.get("PAIRED_ROLLOUTS_PURE_FATES", "") not in ("", "0") or not _INLINE_DRAWS:
        return None
    try:
        from paired_rollouts.pairing._fate_draws import fault_draws
    except ImportError:  # installed where no C compiler was found: the pure path
        return None
    return fault_draws if _compiled_draws_agree(fault_draws) else None


_COMPILED_DRAWS = _load_compiled_draws()
#: Which path draws the fates in this process (for benchmarks and logs).
FATE_DRAWS = "compiled (pairing/_fate_draws.c)" if _COMPILED_DRAWS is not None else "random.Random"


def _seed_of_text(text: str) -> int:
    """``derive_seed`` of parts already joined by "|"."""
    return _first_u64(_sha256(text.encode()).digest())[0]


def _below(n: int, prob: float) -> bool:
    """``Random(n).random() < prob``."""
    draws = _COMPILED_DRAWS(n, prob) if _COMPILED_DRAWS is not None else NotImplemented
    # the helper returns None exactly when Random(n).random() >= prob
    return _thread_rng(n).random() < prob if draws is NotImplemented else draws is not None


#: what a ``faults`` argument that is neither a FaultMixture nor a FaultTable is told
_NOT_FAULTS = (
    "faults must be a FaultMixture, e.g. FaultMixture(0.3, {{'timeout': 1.0}}), or a FaultTable{}, not {!r}"
)


class Dice:
    """The event-keyed draws of one schedule seed (stateless: the caller names the repeat index).

    ``key`` parts are any values with a stable ``str`` (tool names, resource ids); they are joined with
    "|" into the hashed text: ``Dice(659565755).fate(faults, "get_order", '{"order_id":"O0011"}',
    repeat=2)`` hashes ``659565755|event|get_order|{"order_id":"O0011"}|2``. ``repeat`` is an int >= 0.
    """

    __slots__ = ("seed", "_prefix")

    def __init__(self, seed: int) -> None:
        self.seed = seed_value(seed, "a schedule seed")
        self._prefix = f"{self.seed}|event|"  # derive_seed(seed, "event", *key, repeat) hashes prefix + rest

    def __repr__(self) -> str:
        return f"Dice({self.seed})"

    def event_seed(self, *key: object, repeat: int) -> int:
        """``derive_seed(seed, "event", *key, repeat)``: the generator seed of one draw."""
        return _seed_of_text(f"{self._prefix}{'|'.join(map(str, key))}|{_repeat(repeat)}")

    def rng(self, *key: object, repeat: int) -> random.Random:
        """A fresh ``random.Random`` seeded with :meth:`event_seed`, for draws an environment defines."""
        return random.Random(self.event_seed(*key, repeat=repeat))

    def uniform(self, *key: object, repeat: int) -> float:
        """The first draw of the event's generator: uniform on [0, 1)."""
        return _thread_rng(self.event_seed(*key, repeat=repeat)).random()

    def chance(self, prob: float, *key: object, repeat: int) -> bool:
        """``uniform(*key, repeat=repeat) < prob``: does the event happen? (``prob`` in [0, 1])"""
        return _below(self.event_seed(*key, repeat=repeat), _probability(prob))

    def fate(
        self,
        faults: FaultMixture | FaultTable,
        *key: object,
        repeat: int,
        types: Sequence[str] | None = None,
    ) -> Fate | None:
        """The fault of the ``repeat``-th occurrence (0-based) of event ``key``, or None.

        The event's generator draws u, the retry-after choice, the detail and, when u < rate, the type
        (weighted over ``types``: the fault types that can hit this event). When u >= rate the later
        draws cannot matter and are skipped. ``faults`` may be a precomputed ``FaultTable``
        (``types`` is then ignored).
        """
        if isinstance(faults, FaultMixture):
            table = faults.table(types)
        elif isinstance(faults, FaultTable):
            table = faults
        else:
            raise PairingError(_NOT_FAULTS.format("", faults))
        if type(repeat) is not int or repeat < 0:
            repeat = _repeat(repeat)
        if table is None:
            return None
        try:  # the hot path of every rollout: keys of str parts joined without str() calls
            text = f"{self._prefix}{'|'.join(key)}|{repeat}"
        except TypeError:
            text = f"{self._prefix}{'|'.join(map(str, key))}|{repeat}"
        n = _first_u64(_sha256(text.encode()).digest())[0]
        draws = _COMPILED_DRAWS(n, table.rate) if _COMPILED_DRAWS is not None else NotImplemented
        if draws is NotImplemented:
            if not _INLINE_DRAWS:
                return _fate_by_methods(n, table)
            draws = _pure_draws(n, table.rate)
        return None if draws is None else _fault(draws, table)

    def flip(self, prob: float, name: str = "outcome") -> bool:
        """An episode-level draw: ``Random(derive_seed(seed, name)).random() < prob``.

        One draw per episode and name, shared by every rollout with this seed. The study's grader flip
        is ``flip(q)``: a paired group's rollouts are all flipped or none is. ``prob`` must lie in [0, 1].
        """
        return _below(derive_seed(self.seed, name), _probability(prob))


class Schedule:
    """One rollout's noise for one episode: its :class:`Dice`, the fault mixture, the grader's flip rate
    and the repeat counter, so ``fate(*key)`` is the fate of the k-th occurrence of ``key`` this episode.

    ``seed=None`` is a clean schedule: nothing faults and nothing flips. Build a new one per episode.
    """

    __slots__ = ("dice", "faults", "flip_rate", "_repeats")

    def __init__(
        self, seed: int | None, faults: FaultMixture | FaultTable | None = None, flip_rate: float = 0.0
    ) -> None:
        self.dice = None if seed is None else Dice(seed)
        if faults is not None and not isinstance(faults, (FaultMixture, FaultTable)):
            raise PairingError(_NOT_FAULTS.format(" or None", faults))
        self.faults = faults
        self.flip_rate = _number("flip rate", flip_rate, 1.0)
        self._repeats: dict[tuple[object, ...], int] = {}

    @property
    def seed(self) -> int | None:
        """The seed this rollout draws from (None when clean)."""
        return None if self.dice is None else self.dice.seed

    def repeats(self, *key: object) -> int:
        """How often ``key`` has drawn its fate so far this episode (its next repeat index)."""
        return self._repeats.get(key, 0)

    def fate(self, *key: object, types: Sequence[str] | None = None) -> Fate | None:
        """The fate of this occurrence of event ``key`` (counted, then drawn: see :meth:`Dice.fate`)."""
        k = self._repeats.get(key, 0)
        self._repeats[key] = k + 1
        if self.dice is None or self.faults is None:
            return None
        return self.dice.fate(self.faults, *key, repeat=k, types=types)

    def flipped(self, name: str = "outcome") -> bool:
        """Does the noisy grader flip this episode's verdict? (:meth:`Dice.flip` at ``flip_rate``)"""
        if self.dice is None or self.flip_rate <= 0:
            return False
        return self.dice.flip(self.flip_rate, name)
