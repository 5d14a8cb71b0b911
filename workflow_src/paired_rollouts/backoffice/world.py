"""The simulated back office: customers, products, orders, shipments and tickets (docs/simulator.md#world).

A world is generated from an integer seed with one ``random.Random`` whose draws follow docs/simulator.md#world-generation's exact
order, so a seed always yields the same world. Worlds are *copy-on-write*: every record is a plain dict
that is never mutated once it is shared with a snapshot; a write first takes a private copy of the record
(``World.mut_order`` and friends). That makes snapshots (one per committed write, for stale reads) and
fresh episode worlds (from a per-seed cache) cheap, which the scripted reference and the training loop
depend on for throughput.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from bisect import bisect
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any

from paired_rollouts.backoffice import words

TODAY_DAY = 100
PAGE_SIZE = 5
SHIPPING_WINDOW_DAYS = 7
N_CUSTOMERS = 40
N_PRODUCTS = 30
N_ORDERS = 80
N_TICKETS = 10
STOCK_CHOICES = (0, 0, 2, 5, 10, 20, 50)
#: initial states (and, in the grader, expected states) kept per process: more than the 2,616 distinct
#: world seeds of the pools, so a process that runs several surrogate runs generates each world once
#: (about 0.16 MB each, ~410 MB if every seed is met; docs/simulator.md#speed, fifth pass)
WORLD_CACHE = 4096
TICKET_STATUSES = ("open", "closed")
COLLECTIONS = ("customers", "products", "orders", "shipments", "tickets")

Record = dict[str, Any]


# --------------------------------------------------------------------------------------------------
# record copies and derived quantities
# --------------------------------------------------------------------------------------------------
def _copy_customer(rec: Record) -> Record:
    out = dict(rec)
    out["address"] = dict(rec["address"])
    return out


def _copy_order(rec: Record) -> Record:
    out = dict(rec)
    out["items"] = [dict(item) for item in rec["items"]]
    out["shipping_address"] = dict(rec["shipping_address"])
    out["refunds"] = [dict(r) for r in rec["refunds"]]
    out["reservations"] = [dict(r) for r in rec["reservations"]]
    return out


_COPIERS = {
    "customers": _copy_customer,
    "products": dict,
    "orders": _copy_order,
    "shipments": dict,
    "tickets": dict,
}


def order_total(order: Record) -> int:
    return sum(item["quantity"] * item["unit_price_cents"] for item in order["items"])


def order_refunded(order: Record) -> int:
    return sum(r["amount_cents"] for r in order["refunds"])


def order_balance(order: Record) -> int:
    """What can still be refunded: total minus refunds so far."""
    return order_total(order) - order_refunded(order)


def reserved_on_order(order: Record, sku: str) -> int:
    return sum(r["quantity"] for r in order["reservations"] if r["sku"] == sku)


def fully_reserved(order: Record) -> bool:
    return all(reserved_on_order(order, item["sku"]) >= item["quantity"] for item in order["items"])


_RESERVED_KEY = ("world_reserved",)


def _sum_reserved(orders: Any, sku: str) -> int:
    total = 0
    for order in orders:
        for res in order["reservations"]:
            if res["sku"] == sku:
                total += res["quantity"]
    return total


def _reserved_totals(orders: Any) -> dict[str, int]:
    totals: dict[str, int] = {}
    for order in orders:
        for res in order["reservations"]:
            totals[res["sku"]] = totals.get(res["sku"], 0) + res["quantity"]
    return totals


# --------------------------------------------------------------------------------------------------
# states
# --------------------------------------------------------------------------------------------------
class State:
    """The world at one version. Records are shared between states and must be treated as read-only."""

    __slots__ = (
        "today_day",
        "clock_seconds",
        "version",
        "customers",
        "products",
        "orders",
        "shipments",
        "tickets",
        "touched",
        "origin",
        "_read_cache",
    )

    def __init__(
        self,
        today_day: int,
        clock_seconds: int,
        version: int,
        customers: dict,
        products: dict,
        orders: dict,
        shipments: dict,
        tickets: dict,
        touched: frozenset[tuple[str, str]] | None = None,
        origin: State | None = None,
    ) -> None:
        self.today_day = today_day
        self.clock_seconds = clock_seconds
        self.version = version
        self.customers = customers
        self.products = products
        self.orders = orders
        self.shipments = shipments
        self.tickets = tickets
        # (collection, key) of every record written since the initial world of the seed; None = unknown.
        # Two states of the same seed can only differ in touched records (the grader relies on it).
        self.touched = touched
        # The state whose (read-only) records this one started from: itself, or the cached initial state
        # of a seed for every world and history state built from it. Responses that depend only on such
        # records are cached there (``read_cache``) and reused by every episode of the seed.
        self.origin: State = self if origin is None else origin
        self._read_cache: dict[Any, Any] | None = None

    def read_cache(self) -> dict[Any, Any]:
        """The response cache of this state's origin (keys are chosen by the tools)."""
        origin = self.origin
        cache = origin._read_cache
        if cache is None:
            cache = origin._read_cache = {}
        return cache

    def world_reserved(self, sku: str) -> int:
        """Units of ``sku`` reserved over all orders (docs/simulator.md#world).

        Untouched orders are the origin's very records, so the sum is the origin's (computed once per
        origin) corrected by the touched orders; states that do not know their touches sum every order.
        """
        origin = self.origin
        touched = self.touched
        if touched is None:
            return _sum_reserved(self.orders.values(), sku)
        cache = origin.read_cache()
        base = cache.get(_RESERVED_KEY)
        if base is None:
            base = cache[_RESERVED_KEY] = _reserved_totals(origin.orders.values())
        total = base.get(sku, 0)
        if self is origin:
            return total
        for coll, key in touched:
            if coll == "orders":
                now, then = self.orders.get(key), origin.orders.get(key)
                if now is not then:
                    total += _sum_reserved((now,) if now is not None else (), sku)
                    total -= _sum_reserved((then,) if then is not None else (), sku)
        return total

    def available(self, sku: str) -> int:
        return self.products[sku]["stock"] - self.world_reserved(sku)

    def frozen(self) -> State:
        """A state that shares every record with this one (O(number of records), no record copies)."""
        touched = None if self.touched is None else frozenset(self.touched)
        return State(
            self.today_day,
            self.clock_seconds,
            self.version,
            dict(self.customers),
            dict(self.products),
            dict(self.orders),
            dict(self.shipments),
            dict(self.tickets),
            touched,
            self.origin,
        )

    def snapshot(self) -> dict[str, Any]:
        """A deep, plain-dict copy: {today_day, clock_seconds, version, customers, ...} (docs/simulator.md#snapshots-and-history)."""
        out: dict[str, Any] = {
            "today_day": self.today_day,
            "clock_seconds": self.clock_seconds,
            "version": self.version,
        }
        for name in COLLECTIONS:
            copier = _COPIERS[name]
            coll = getattr(self, name)
            out[name] = {key: copier(coll[key]) for key in sorted(coll)}
        return out

    def fingerprint(self) -> str:
        """SHA-256 of ``json.dumps(snapshot(), sort_keys=True)`` (default separators), docs/simulator.md#check-numbers."""
        return hashlib.sha256(json.dumps(self.snapshot(), sort_keys=True).encode("utf-8")).hexdigest()


class World(State):
    """The live, mutable world of one episode, with its commit history (docs/simulator.md#snapshots-and-history)."""

    __slots__ = ("seed", "history", "_owned", "_shared")

    def __init__(self, base: State, seed: int | None = None) -> None:
        # The collections start as ``base``'s own (read-only) dicts; ``_writable`` copies one on its
        # first write, so an episode copies only what it writes (most write orders, few products).
        super().__init__(
            base.today_day,
            base.clock_seconds,
            base.version,
            base.customers,
            base.products,
            base.orders,
            base.shipments,
            base.tickets,
            origin=base.origin,
        )
        self.seed = seed
        self.history: list[State] = [base]
        self._owned: set[tuple[str, str]] = set()
        self._shared: set[str] = set(COLLECTIONS)  # collections whose dict is still ``base``'s
        self.touched: set[tuple[str, str]] | None = None if base.touched is None else set(base.touched)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int) -> World:
        """A fresh world for ``seed``; the initial state is generated once per seed and shared."""
        return cls(initial_state(seed), seed)

    # -- copy-on-write mutation --------------------------------------------------------------------
    def _writable(self, collection: str) -> dict[str, Record]:
        """The world's own dict of ``collection`` (copied from the base state on the first write)."""
        coll = getattr(self, collection)
        if collection in self._shared:
            coll = dict(coll)
            setattr(self, collection, coll)
            self._shared.discard(collection)
        return coll

    def _mutable(self, collection: str, key: str) -> Record:
        coll = getattr(self, collection)
        if (collection, key) not in self._owned:
            coll = self._writable(collection)
            coll[key] = _COPIERS[collection](coll[key])
            self._owned.add((collection, key))
            if self.touched is not None:
                self.touched.add((collection, key))
        return coll[key]

    def mut_order(self, order_id: str) -> Record:
        return self._mutable("orders", order_id)

    def own_order(self, order_id: str) -> Record:
        """``mut_order`` for writers that *replace* nested values (lists, the address) and never mutate
        them in place: one shallow copy, the nested values stay shared with the older states."""
        key = ("orders", order_id)
        if key not in self._owned:
            orders = self._writable("orders")
            orders[order_id] = dict(orders[order_id])
            self._owned.add(key)
            if self.touched is not None:
                self.touched.add(key)
        return self.orders[order_id]

    def mut_product(self, sku: str) -> Record:
        return self._mutable("products", sku)

    def add_shipment(self, record: Record) -> None:
        self._writable("shipments")[record["shipment_id"]] = record
        self._owned.add(("shipments", record["shipment_id"]))
        if self.touched is not None:
            self.touched.add(("shipments", record["shipment_id"]))

    def add_ticket(self, record: Record) -> None:
        self._writable("tickets")[record["ticket_id"]] = record
        self._owned.add(("tickets", record["ticket_id"]))
        if self.touched is not None:
            self.touched.add(("tickets", record["ticket_id"]))

    def next_shipment_id(self) -> str:
        return f"S{len(self.shipments) + 1:04d}"

    def next_ticket_id(self) -> str:
        return f"T{len(self.tickets) + 1:04d}"

    def frozen(self) -> State:
        """Like ``State.frozen``, without copying: the state takes the world's current collection dicts
        and the world stops writing into them. Every write goes through ``_writable`` (a collection is
        copied before the world's next write into it) and ``_mutable``/``own_order``/``add_*`` (a record
        is copied before the world's next change to it), so the state never changes afterwards."""
        self._owned.clear()
        self._shared.update(COLLECTIONS)
        touched = None if self.touched is None else frozenset(self.touched)
        return State(
            self.today_day,
            self.clock_seconds,
            self.version,
            self.customers,
            self.products,
            self.orders,
            self.shipments,
            self.tickets,
            touched,
            self.origin,
        )

    def commit(self) -> None:
        """Called by every successful write: bump the version and remember the state."""
        self.version += 1
        self.history.append(self.frozen())

    # -- history -------------------------------------------------------------------------------------
    def state_at(self, version: int) -> State:
        """The (shared, read-only) state right after the ``version``-th write, clamped to the history."""
        return self.history[min(max(version, 0), len(self.history) - 1)]

    def as_of(self, version: int) -> dict[str, Any]:
        """A deep copy of ``history[clamp(version)]`` as a plain dict."""
        return self.state_at(version).snapshot()


# --------------------------------------------------------------------------------------------------
# generation (docs/simulator.md#world-generation); draw order is part of the contract
# --------------------------------------------------------------------------------------------------
class WorldDraws:
    """The draws of ``random.Random(seed)`` that world generation makes, as CPython's ``random.py`` makes
    them (``_randbelow`` is rejection sampling on ``getrandbits``; ``choices`` bisects one ``random()``),
    in one Python call each instead of two or three: the reference generator's draws where the compiled
    generator is not built."""

    __slots__ = ("random", "_bits")

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.random = rng.random
        self._bits = rng.getrandbits

    def below(self, n: int) -> int:
        k, bits = n.bit_length(), self._bits
        r = bits(k)
        while r >= n:
            r = bits(k)
        return r

    def randint(self, a: int, b: int) -> int:  # below() inlined: the most frequent draw
        n = b - a + 1
        k, bits = n.bit_length(), self._bits
        r = bits(k)
        while r >= n:
            r = bits(k)
        return a + r

    def randrange(self, start: int, stop: int, step: int) -> int:
        return start + step * self.below((stop - start + step - 1) // step)  # step > 0

    def choice(self, seq: Sequence[Any]) -> Any:  # below() inlined
        n = len(seq)
        k, bits = n.bit_length(), self._bits
        r = bits(k)
        while r >= n:
            r = bits(k)
        return seq[r]

    def shuffle(self, x: list[Any]) -> None:
        below = self.below
        for i in range(len(x) - 1, 0, -1):
            j = below(i + 1)
            x[i], x[j] = x[j], x[i]

    def sample(self, population: Sequence[Any], k: int) -> list[Any]:
        """``Random.sample`` where it keeps a set of the picks (k <= 5 < population size - 21)."""
        n = len(population)
        if not (0 <= k <= 5 and n > 21):
            raise ValueError("WorldDraws.sample covers k <= 5 picks from more than 21 items")
        below = self.below
        picked: list[int] = []
        for _ in range(k):
            j = below(n)
            while j in picked:
                j = below(n)
            picked.append(j)
        return [population[j] for j in picked]

    def choices(self, population: Sequence[Any], weights: Sequence[float]) -> list[Any]:
        cum = list(accumulate(weights))
        return [population[bisect(cum, self.random() * (cum[-1] + 0.0), 0, len(cum) - 1)]]


def _draw_sequence(rng: Any) -> list[Any]:
    """Every kind of draw world generation makes, in one order, from ``WorldDraws`` or ``random.Random``."""
    population = [f"x{i}" for i in range(30)]
    below = rng.below if isinstance(rng, WorldDraws) else rng._randbelow
    out: list[Any] = []
    for n in (1, 2, 3, 7, 10, 30, 250, 9000):
        out += [rng.randint(1, n), below(n), rng.choice(population[: min(n, 30)])]
    out.append(rng.randrange(500, 50001, 50))
    shuffled = list(population)
    rng.shuffle(shuffled)
    out += [shuffled, *(rng.sample(population, k) for k in (1, 2, 3, 5))]
    out += [rng.choices(population[:5], weights=(25, 30, 20, 15, 10)), rng.random()]
    return out


def _world_draws_agree() -> bool:
    """Does ``WorldDraws(seed)`` draw what ``random.Random(seed)`` draws on this Python, as world
    generation calls it (one- and two-word seeds)?"""
    seeds = (*range(12), 2**32 - 1, 2**32 + 5, 2**63 + 12345)
    return all(_draw_sequence(WorldDraws(seed)) == _draw_sequence(random.Random(seed)) for seed in seeds)


#: the Python generator's draw source: the same numbers as random.Random's methods
_DRAWS: Callable[[int], Any] = WorldDraws if _world_draws_agree() else random.Random


def _random_address(rng: random.Random) -> dict[str, str]:
    number = rng.randint(1, 250)
    street = f"{number} {rng.choice(words.STREETS)}"
    city = rng.choice(words.CITIES)
    postal = str(rng.randint(1000, 9999))
    return {"street": street, "city": city, "postal_code": postal}


def reference_initial_state(seed: int) -> State:  # noqa: C901 - docs/simulator.md#world-generation step by step: its draw order is the world's identity
    """Generate the initial world of ``seed`` exactly as docs/simulator.md#world-generation prescribes
    (the reference; ``build_initial_state`` uses the compiled generator where it agrees with this one)."""
    rng = _DRAWS(seed)
    randint = rng.randint
    customers: dict[str, Record] = {}
    used_names: set[str] = set()
    for i in range(1, N_CUSTOMERS + 1):
        if i > 1 and rng.random() < 0.3:
            j = rng.randint(1, i - 1)
            last = customers[f"C{j:04d}"]["name"].split(" ", 1)[1]
            first = rng.choice(words.FIRST_NAMES)
        else:
            first = rng.choice(words.FIRST_NAMES)
            last = rng.choice(words.LAST_NAMES)
        while f"{first} {last}" in used_names:
            first = rng.choice(words.FIRST_NAMES)
        name = f"{first} {last}"
        used_names.add(name)
        phone = "+880" + "".join([str(randint(0, 9)) for _ in range(10)])
        address = _random_address(rng)
        cid = f"C{i:04d}"
        customers[cid] = {
            "customer_id": cid,
            "name": name,
            "email": f"{first.lower()}.{last.lower()}{i}@example.com",
            "phone": phone,
            "address": address,
            "tier": rng.choice(words.CUSTOMER_TIERS),
        }

    names = list(words.PRODUCT_NAMES)
    rng.shuffle(names)
    products: dict[str, Record] = {}
    for i in range(1, N_PRODUCTS + 1):
        sku = f"SKU-{i:04d}"
        price = rng.randrange(500, 50001, 50)
        stock = rng.choice(STOCK_CHOICES)
        products[sku] = {"sku": sku, "name": names[i - 1], "price_cents": price, "stock": stock}

    skus = sorted(products)
    cids = sorted(customers)
    orders: dict[str, Record] = {}
    shipments: dict[str, Record] = {}
    for i in range(1, N_ORDERS + 1):
        oid = f"O{i:04d}"
        cid = rng.choice(cids)
        items = []
        for sku in rng.sample(skus, rng.randint(1, 3)):
            items.append(
                {"sku": sku, "quantity": rng.randint(1, 3), "unit_price_cents": products[sku]["price_cents"]}
            )
        status = rng.choices(words.ORDER_STATUSES, weights=words.ORDER_STATUS_WEIGHTS)[0]
        ship_to = dict(customers[cid]["address"]) if rng.random() < 0.8 else _random_address(rng)
        placed = TODAY_DAY - rng.randint(0, 30)
        order: Record = {
            "order_id": oid,
            "customer_id": cid,
            "items": items,
            "status": status,
            "shipping_address": ship_to,
            "placed_on_day": placed,
            "paid_before_cancel": False,
            "refunds": [],
            "reservations": [],
            "shipment_id": None,
        }
        if status in ("shipped", "delivered"):
            sid = f"S{len(shipments) + 1:04d}"
            shipments[sid] = {
                "shipment_id": sid,
                "order_id": oid,
                "carrier": rng.choice(words.CARRIERS),
                "scheduled_day": placed + rng.randint(1, 5),
                "status": "delivered" if status == "delivered" else "in_transit",
            }
            order["shipment_id"] = sid
            if status == "delivered" and rng.random() < 0.3:
                item = rng.choice(items)
                order["refunds"].append(
                    {"amount_cents": item["unit_price_cents"], "reason": rng.choice(words.REFUND_REASONS)}
                )
        elif status == "paid" and rng.random() < 0.5:
            order["reservations"] = [{"sku": it["sku"], "quantity": it["quantity"]} for it in items]
        elif status == "cancelled":
            order["paid_before_cancel"] = rng.random() < 0.5
            if order["paid_before_cancel"] and rng.random() < 0.6:
                order["refunds"].append({"amount_cents": order_total(order), "reason": "cancelled order"})
        orders[oid] = order

    state = State(TODAY_DAY, 0, 0, customers, products, orders, shipments, {}, frozenset())
    # 4. stock floor: never less stock than is reserved
    for sku, product in products.items():
        product["stock"] = max(product["stock"], state.world_reserved(sku))
    # 5. stock top-up for paid orders that are not fully reserved (draw only for those: short-circuit)
    for order in orders.values():
        if order["status"] == "paid" and not fully_reserved(order) and rng.random() < 0.7:
            for item in order["items"]:
                missing = item["quantity"] - reserved_on_order(order, item["sku"])
                shortfall = missing - state.available(item["sku"])
                if shortfall > 0:
                    products[item["sku"]]["stock"] += shortfall

    tickets: dict[str, Record] = {}
    oids = sorted(orders)
    for i in range(1, N_TICKETS + 1):
        oid = rng.choice(oids)
        linked = oid if rng.random() < 0.7 else None
        tid = f"T{i:04d}"
        tickets[tid] = {
            "ticket_id": tid,
            "customer_id": orders[oid]["customer_id"],
            "order_id": linked,
            "category": rng.choice(words.TICKET_CATEGORIES),
            "priority": rng.choice(words.TICKET_PRIORITIES),
            "summary": rng.choice(words.TICKET_SUMMARIES),
            "status": rng.choice(TICKET_STATUSES),
        }
    state.tickets = tickets
    return state


#: world generation's word lists and sizes in the order backoffice/_world_draws.c's initial_world takes them
WORLD_WORDS = (
    words.FIRST_NAMES,
    words.LAST_NAMES,
    words.STREETS,
    words.CITIES,
    words.CUSTOMER_TIERS,
    words.PRODUCT_NAMES,
    STOCK_CHOICES,
    words.ORDER_STATUSES,
    words.ORDER_STATUS_WEIGHTS,
    words.CARRIERS,
    words.REFUND_REASONS,
    words.TICKET_CATEGORIES,
    words.TICKET_PRIORITIES,
    words.TICKET_SUMMARIES,
    TICKET_STATUSES,
)
WORLD_SIZES = (N_CUSTOMERS, N_PRODUCTS, N_ORDERS, N_TICKETS, TODAY_DAY)


def _collections(state: State) -> str:
    """Every record of a state with its keys in order and its value types (``repr``)."""
    return repr([getattr(state, name) for name in COLLECTIONS])


def _compiled_generator() -> Callable[..., tuple[dict, ...]] | None:
    """backoffice/_world_draws.c's ``initial_world`` where it is built and builds the reference's worlds
    on this Python (checked on one- and two-word seeds), else None. ``PAIRED_ROLLOUTS_PURE_FATES=1``
    switches the compiled helper off (to audit or time the pure path)."""
    if os.environ.get("PAIRED_ROLLOUTS_PURE_FATES", "") not in ("", "0"):
        return None
    try:
        from paired_rollouts.backoffice._world_draws import initial_world
    except ImportError:
        return None
    for seed in (0, 126704, 2**32 + 7):
        built = _state_of(initial_world(seed, WORLD_WORDS, WORLD_SIZES))
        if _collections(built) != _collections(reference_initial_state(seed)):
            return None
    return initial_world


def _state_of(collections: tuple[dict, ...]) -> State:
    """The initial state of compiled collections, its read cache as the reference's stock floor leaves it."""
    customers, products, orders, shipments, tickets = collections
    state = State(TODAY_DAY, 0, 0, customers, products, orders, shipments, tickets, frozenset())
    state.read_cache()[_RESERVED_KEY] = _reserved_totals(orders.values())
    return state


_COMPILED_WORLD = _compiled_generator()
#: which path generates the worlds in this process, for benchmarks and tests
WORLD_DRAWS = "compiled (backoffice/_world_draws.c)" if _COMPILED_WORLD is not None else _DRAWS.__name__


def build_initial_state(seed: int) -> State:
    """The initial world of ``seed`` (docs/simulator.md#world-generation): compiled where it agrees with
    ``reference_initial_state``, else the reference itself."""
    if _COMPILED_WORLD is not None and 0 <= seed < 2**64:
        return _state_of(_COMPILED_WORLD(seed, WORLD_WORDS, WORLD_SIZES))
    return reference_initial_state(seed)


@lru_cache(maxsize=WORLD_CACHE)
def initial_state(seed: int) -> State:
    """The cached initial state of ``seed``; shared by every world built from it (never mutate it)."""
    return build_initial_state(int(seed))
