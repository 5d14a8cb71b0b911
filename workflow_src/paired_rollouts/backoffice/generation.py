"""Task generation (docs/simulator.md#tasks, #task-generation): one ``random.Random(f"{split}-{seed}")`` per
split whose draws follow docs/simulator.md#task-generation's order exactly, so the pools are byte-identical
to the paper's (``pools.write_pools`` checks their hashes).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from paired_rollouts.backoffice import words
from paired_rollouts.backoffice.tools import ToolAPI
from paired_rollouts.backoffice.world import (
    State,
    World,
    build_initial_state,
    fully_reserved,
    order_balance,
    order_total,
    reserved_on_order,
)

GENERATOR_SEED = 20260904
GENERATOR_VERSION = "backoffice-env-v3"

TEMPLATE_ORDER: tuple[str, ...] = (
    "address_change",
    "cancel_pending",
    "cancel_paid_refund",
    "partial_refund_delivered",
    "reserve_and_ship",
    "ship_reserved",
    "open_ticket",
    "open_ticket_no_order",
)
TEMPLATE_WEIGHTS: dict[str, float] = {
    "address_change": 3.0,
    "cancel_pending": 2.0,
    "cancel_paid_refund": 3.0,
    "partial_refund_delivered": 3.0,
    "reserve_and_ship": 5.0,
    "ship_reserved": 3.0,
    "open_ticket": 1.2,
    "open_ticket_no_order": 0.6,
}
TICKET_TEMPLATES = frozenset({"open_ticket", "open_ticket_no_order"})
REQUEST_COUNTS = (1, 2, 3)
REQUEST_WEIGHTS = (20, 40, 40)
SEED_RANGES: dict[str, tuple[int, int]] = {"train": (0, 100000), "heldout": (100000, 200000)}


# --------------------------------------------------------------------------------------------------
# one task
# --------------------------------------------------------------------------------------------------
def _eligible(template: str, order: dict, state: State) -> bool:
    status = order["status"]
    if template == "address_change":
        return status in ("pending", "paid")
    if template == "cancel_pending":
        return status == "pending"
    if template == "cancel_paid_refund":
        return status == "paid" and not order["refunds"]
    if template == "partial_refund_delivered":
        balance = order_balance(order)
        return status == "delivered" and any(
            it["quantity"] * it["unit_price_cents"] <= balance for it in order["items"]
        )
    if template == "reserve_and_ship":
        return (
            status == "paid"
            and not fully_reserved(order)
            and all(
                state.available(it["sku"]) >= it["quantity"] - reserved_on_order(order, it["sku"])
                for it in order["items"]
            )
        )
    if template == "ship_reserved":
        return status == "paid" and fully_reserved(order)
    raise ValueError(template)


def _sku_clashes(order: dict, sku: str, customer_orders: list[dict]) -> bool:
    """Does another order of the customer, placed the same day, contain ``sku``?"""
    return any(
        other["order_id"] != order["order_id"]
        and other["placed_on_day"] == order["placed_on_day"]
        and any(it["sku"] == sku for it in other["items"])
        for other in customer_orders
    )


def _order_ref(order: dict, reference: str, customer_orders: list[dict], state: State) -> str:
    if reference == "description":
        for item in order["items"]:
            if not _sku_clashes(order, item["sku"], customer_orders):
                name = state.products[item["sku"]]["name"]
                return f"the order placed on day {order['placed_on_day']} that contains {name}"
    return f"order {order['order_id']}"


def _make_subtask(  # noqa: C901 - the spec's draw order, step by step: it fixes the pools' bytes
    rng: random.Random,
    template: str,
    order: dict,
    state: State,
    customer_id: str,
    reference: str,
    customer_orders: list[dict],
) -> dict[str, Any]:
    """Draw a subtask's free parameters (docs/simulator.md#tasks) and build its calls and sentence."""
    oid = order["order_id"]
    ref = _order_ref(order, reference, customer_orders, state)
    calls: list[dict[str, Any]]
    if template == "address_change":
        current = order["shipping_address"]
        while True:
            street = f"{rng.randint(1, 250)} {rng.choice(words.TASK_STREETS)}"
            city = rng.choice(words.TASK_CITIES)
            postal = str(rng.randint(1000, 9999))
            if (street, city, postal) != (current["street"], current["city"], current["postal_code"]):
                break
        calls = [
            {
                "tool": "update_shipping_address",
                "args": {"order_id": oid, "street": street, "city": city, "postal_code": postal},
            }
        ]
        sentence = f"change the shipping address of {ref} to {street}, {city} {postal}"
    elif template == "cancel_pending":
        calls = [{"tool": "cancel_order", "args": {"order_id": oid, "reason": "customer request"}}]
        sentence = f"cancel {ref}, which is still unpaid"
    elif template == "cancel_paid_refund":
        calls = [
            {"tool": "cancel_order", "args": {"order_id": oid, "reason": "customer request"}},
            {
                "tool": "issue_refund",
                "args": {"order_id": oid, "amount_cents": order_total(order), "reason": "cancelled order"},
            },
        ]
        sentence = f"cancel {ref}, which was already paid, and refund the full amount"
    elif template == "partial_refund_delivered":
        balance = order_balance(order)
        item = rng.choice([it for it in order["items"] if it["quantity"] * it["unit_price_cents"] <= balance])
        amount = item["quantity"] * item["unit_price_cents"]
        calls = [
            {
                "tool": "issue_refund",
                "args": {"order_id": oid, "amount_cents": amount, "reason": "damaged item"},
            }
        ]
        if reference == "id" or _sku_clashes(order, item["sku"], customer_orders):
            where = f"order {oid}"
        else:
            where = f"the order placed on day {order['placed_on_day']}"
        qty = item["quantity"]
        unit = "unit" if qty == 1 else "units"
        name = state.products[item["sku"]]["name"]
        sentence = f"refund the full price of the {qty} {unit} of {name} that arrived damaged in {where}"
    elif template in ("reserve_and_ship", "ship_reserved"):
        calls = []
        for it in order["items"]:
            missing = it["quantity"] - reserved_on_order(order, it["sku"])
            if missing > 0:
                calls.append(
                    {
                        "tool": "reserve_stock",
                        "args": {"sku": it["sku"], "quantity": missing, "order_id": oid},
                    }
                )
        carrier = rng.choice(words.CARRIERS)
        day = 100 + rng.randint(0, 7)
        calls.append({"tool": "schedule_shipment", "args": {"order_id": oid, "carrier": carrier, "day": day}})
        if template == "reserve_and_ship":
            sentence = (
                f"reserve stock for every item on {ref}, which is paid, and schedule its shipment "
                f"with the {carrier} carrier on day {day}"
            )
        else:
            sentence = (
                f"schedule the shipment of {ref}, which is paid and fully reserved, with the "
                f"{carrier} carrier on day {day}"
            )
    elif template in TICKET_TEMPLATES:
        category = rng.choice(words.TICKET_CATEGORIES)
        priority = rng.choice(words.TICKET_PRIORITIES)
        summary = rng.choice(words.TICKET_SUMMARIES)
        linked = oid if template == "open_ticket" else ""
        calls = [
            {
                "tool": "create_ticket",
                "args": {
                    "customer_id": customer_id,
                    "order_id": linked,
                    "category": category,
                    "priority": priority,
                    "summary": summary,
                },
            }
        ]
        if template == "open_ticket":
            sentence = (
                f"open a {priority}-priority ticket in the {category} category linked to {ref} with "
                f"the summary '{summary}'"
            )
        else:
            sentence = (
                f"open a {priority}-priority ticket in the {category} category for the customer, not "
                f"linked to any order, with the summary '{summary}'"
            )
    else:
        raise ValueError(template)
    return {
        "template": template,
        "order_id": None if template == "open_ticket_no_order" else oid,
        "calls": calls,
        "sentence": sentence,
    }


_ORDINALS = ("First", "Second", "Third")


def _try_customer(  # noqa: C901 - the spec's draw order, step by step: it fixes the pools' bytes
    rng: random.Random,
    state: State,
    world_seed: int,
    customer_id: str,
    n_sub: int,
    reference: str,
    task_id: str,
    split: str,
) -> dict[str, Any] | None:
    orders = [
        state.orders[oid] for oid in sorted(state.orders) if state.orders[oid]["customer_id"] == customer_id
    ]
    if not orders:
        return None
    used: set[str] = set()
    ticket_used = False
    subtasks: list[dict[str, Any]] = []
    for _ in range(n_sub):
        options: dict[str, list[dict]] = {}
        for template in TEMPLATE_ORDER:
            if template in TICKET_TEMPLATES:
                if not ticket_used:
                    options[template] = [o for o in orders if o["order_id"] not in used] or list(orders)
            else:
                candidates = [
                    o for o in orders if o["order_id"] not in used and _eligible(template, o, state)
                ]
                if candidates:
                    options[template] = candidates
        if not options:
            break
        names = sorted(options)
        template = rng.choices(names, [TEMPLATE_WEIGHTS[n] for n in names])[0]
        order = rng.choice(options[template])
        subtasks.append(_make_subtask(rng, template, order, state, customer_id, reference, orders))
        if template in TICKET_TEMPLATES:
            ticket_used = True
        else:
            used.add(order["order_id"])
    if len(subtasks) < n_sub:
        return None
    rng.shuffle(subtasks)
    plan = [call for sub in subtasks for call in sub["calls"]]
    api = ToolAPI(World(state, world_seed))
    for call in plan:
        _, code = api.execute(call["tool"], dict(call["args"]))
        if code is not None:
            return None
    style = rng.choice(("name", "email", "phone"))
    customer = state.customers[customer_id]
    who = f"customer {customer['name']}"
    if style == "email":
        who += f" ({customer['email']})"
    elif style == "phone":
        who += f" (phone {customer['phone']})"
    who = who[0].upper() + who[1:]
    sentences = [sub["sentence"] for sub in subtasks]
    if len(sentences) == 1:
        body = f"{who} asked us to {sentences[0]}."
    else:
        body = f"{who} has {len(sentences)} requests." + "".join(
            f" {_ORDINALS[i]}, {s}." for i, s in enumerate(sentences)
        )
    instruction = (
        "Today is day 100. "
        + body
        + " Use the tools to look up what you need and make exactly these changes, then call finish."
    )
    return {
        "task_id": task_id,
        "split": split,
        "world_seed": world_seed,
        "customer_id": customer_id,
        "templates": [sub["template"] for sub in subtasks],
        "instruction": instruction,
        "oracle_plan": plan,
        "n_subgoals": len(plan),
        "reference": reference,
        "order_ids": sorted({sub["order_id"] for sub in subtasks if sub["order_id"]}),
    }


def generate_task(rng: random.Random, index: int, split: str) -> dict[str, Any]:
    """Draw worlds until one of its customers yields a valid task (docs/simulator.md#task-generation)."""
    lo, hi = SEED_RANGES["train" if split == "train" else "heldout"]
    task_id = f"{split}-{index:05d}"
    while True:
        world_seed = rng.randrange(lo, hi)
        state = build_initial_state(world_seed)
        n_sub = rng.choices(REQUEST_COUNTS, REQUEST_WEIGHTS)[0]
        reference = rng.choice(("description", "id"))
        customer_ids = sorted(state.customers)
        rng.shuffle(customer_ids)
        for customer_id in customer_ids:
            task = _try_customer(rng, state, world_seed, customer_id, n_sub, reference, task_id, split)
            if task is not None:
                return task


def generate_tasks(n: int, split: str, seed: int = GENERATOR_SEED, progress: bool = False) -> list[dict]:
    """``n`` tasks of ``split`` from the string-seeded ``Random(f"{split}-{seed}")``."""
    rng = random.Random(f"{split}-{seed}")
    indices: Iterable[int] = range(n)
    if progress:
        from tqdm import tqdm

        indices = tqdm(indices, desc=f"{split} tasks", unit="task", disable=None)
    return [generate_task(rng, i, split) for i in indices]


# --------------------------------------------------------------------------------------------------
# pools (docs/simulator.md#pools)
# --------------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------------
# the four pools (docs/simulator.md#pools)
# --------------------------------------------------------------------------------------------------
def _relabel(tasks: list[dict], pool: str) -> list[dict]:
    return [{**t, "task_id": f"{pool}-{i:05d}", "split": pool} for i, t in enumerate(tasks)]


def build_pools(seed: int = GENERATOR_SEED, progress: bool = False) -> dict[str, list[dict]]:
    """All four pools, keyed by file name (train, validation, test, diagnostic)."""
    used: set[int] = set()

    def dedup(tasks: list[dict]) -> list[dict]:
        kept = []
        for task in tasks:
            if task["world_seed"] not in used:
                used.add(task["world_seed"])
                kept.append(task)
        return kept

    heldout_pool = dedup(generate_tasks(700, "heldout", seed, progress))
    train_pool = dedup(generate_tasks(2060, "train", seed, progress))
    diagnostic = [t for t in heldout_pool[300:360] if 2 <= t["n_subgoals"] <= 4][:16]
    diag_seeds = {t["world_seed"] for t in diagnostic}
    test = [t for t in heldout_pool[360:] if t["world_seed"] not in diag_seeds][:300]
    return {
        "train": _relabel(train_pool[:2000], "train"),
        "validation": _relabel(heldout_pool[:300], "heldout"),
        "test": _relabel(test, "test"),
        "diagnostic": _relabel(diagnostic, "diagnostic"),
    }
