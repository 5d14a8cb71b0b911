"""The 13 back-office tools (docs/simulator.md#tools): validation order, messages, effects and responses.

Every tool returns a compact JSON string (sorted keys, no spaces). ``ToolAPI.invoke(name, kwargs)`` is
the one entry point that the noise layer and the episode session use.

Each tool is declared once, on its implementation ``ToolAPI._name(self, state, ...)``: the ``@tool``
decorator gives the prose the model sees (a summary and one line per argument) and each argument's type;
names, order and defaults are the implementation's. ``TOOL_DECLARATIONS`` collects them, and everything
else is derived: ``TOOL_SIGNATURES``, the public ``ToolAPI`` methods (spec signatures, delegating to
``invoke``) and the training environment's tool methods (``tool_function``), whose docstrings TRL and
transformers turn into the tool schemas of every prompt.

The prose is kept short on purpose: every rollout's prompt carries all 13 schemas, so their length is
paid on every forward pass. It names no concrete ids, carriers, categories or priorities: every request
states its values, and values listed in the schemas were distractors the stand-in copied instead of the
request's (the simulator still rejects an unknown value with an error that lists the allowed ones).

Deliberately no ``from __future__ import annotations`` here: the signatures must carry real types.
"""

import inspect
import json
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

from paired_rollouts.backoffice import words
from paired_rollouts.backoffice.world import (
    PAGE_SIZE,
    SHIPPING_WINDOW_DAYS,
    TODAY_DAY,
    State,
    World,
    fully_reserved,
    order_balance,
    order_refunded,
    order_total,
    reserved_on_order,
)

READ_TOOLS: tuple[str, ...] = (
    "search_customers",
    "get_customer",
    "list_orders",
    "get_order",
    "check_inventory",
)
WRITE_TOOLS: tuple[str, ...] = (
    "update_shipping_address",
    "cancel_order",
    "issue_refund",
    "reserve_stock",
    "schedule_shipment",
    "create_ticket",
)
CONTROL_TOOLS: tuple[str, ...] = ("wait", "finish")
LIST_TOOLS: tuple[str, ...] = ("search_customers", "list_orders")
TOOL_NAMES: tuple[str, ...] = READ_TOOLS + WRITE_TOOLS + CONTROL_TOOLS

MSG_EPISODE_FINISHED = "the episode is over; do not call any more tools; reply with one short sentence"
MAX_WAIT_SECONDS = 600

_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
# The C encoder that ``_ENCODER.encode`` builds on every call, built once (no circular-reference markers:
# responses are trees). Same bytes as ``_ENCODER.encode``; falls back to it where ``_json`` is missing.
_C_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODE = (
    None
    if _C_MAKE_ENCODER is None
    else _C_MAKE_ENCODER(
        None, _ENCODER.default, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True
    )
)


def dumps_compact(obj: Any) -> str:
    """The tool-response JSON style: sorted keys, separators ',' and ':'."""
    if _C_ENCODE is None:
        return _ENCODER.encode(obj)
    return "".join(_C_ENCODE(obj, 0))


def dumps_sorted(obj: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(obj, sort_keys=True, default=default)`` (default separators, circular references
    checked) with the C encoder made directly: the grader's diff lines and the episode record's failed
    calls dump small values, where building ``JSONEncoder`` in Python cost more than the encoding."""
    if _C_MAKE_ENCODER is None:
        return json.dumps(obj, sort_keys=True, default=default)
    encode = _C_MAKE_ENCODER(
        {},
        default or _ENCODER.default,
        json.encoder.encode_basestring_ascii,
        None,
        ": ",
        ", ",
        True,
        False,
        True,
    )
    return "".join(encode(obj, 0))


def error_payload(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def error_response(code: str, message: str, **extra: Any) -> str:
    return dumps_compact(error_payload(code, message, **extra))


class ToolFailure(Exception):
    """Raised inside a tool implementation; turned into an error response by ``ToolAPI``."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra

    def payload(self) -> dict[str, Any]:
        return error_payload(self.code, self.message, **self.extra)


class UnknownToolError(ValueError):
    """A tool name that is not one of the 13 tools."""


def tool(summary: str, /, **args: tuple[type, str]) -> Callable[[Callable], Callable]:
    """Declare the tool that the decorated ``_name(self, state, ...)`` implements: ``summary`` and, per
    argument in the implementation's order, ``(type, prose)``; the model sees exactly this prose.
    (``summary`` is positional-only: two tools take an argument of that name.)"""

    def declare(impl: Callable) -> Callable:
        impl.tool_declaration = (summary, args)  # type: ignore[attr-defined]
        return impl

    return declare


class ToolDeclaration(NamedTuple):
    """One tool as the model sees it: name, spec signature (without ``self``, returns str) and prose."""

    name: str
    signature: inspect.Signature
    summary: str
    args: dict[str, str]

    def docstring(self) -> str:
        """The Google-style docstring (summary, ``Args:``) that transformers turns into the tool schema."""
        lines = [self.summary, "", "Args:"]
        lines += [f"    {arg}: {text}" for arg, text in self.args.items()]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# argument coercion (docs/simulator.md#argument-coercion)
# --------------------------------------------------------------------------------------------------
def as_text(name: str, value: Any) -> str:
    """Text argument: ints and integral floats become their integer string; else a non-empty str."""
    if type(value) is str:  # the common case, first
        stripped = value.strip()
        if stripped:
            return stripped
        raise ToolFailure("INVALID_ARGUMENT", f"{name} must be a non-empty string")
    if isinstance(value, bool):
        raise ToolFailure("INVALID_ARGUMENT", f"{name} must be a non-empty string")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        stripped = value.strip()
        if stripped:
            return stripped
    raise ToolFailure("INVALID_ARGUMENT", f"{name} must be a non-empty string")


def as_int(name: str, value: Any, minimum: int | None = None) -> int:
    """Integer argument: ints, or strings of (optionally negative) ASCII digits; never bools/floats."""
    if type(value) is int:  # the common case, first (bool is not int here)
        number = value
    elif isinstance(value, bool):
        raise ToolFailure("INVALID_ARGUMENT", f"{name} must be an integer")
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text.startswith("-") else text
        if not (digits.isascii() and digits.isdigit()):
            raise ToolFailure("INVALID_ARGUMENT", f"{name} must be an integer")
        number = int(text)
    else:
        raise ToolFailure("INVALID_ARGUMENT", f"{name} must be an integer")
    if minimum is not None and number < minimum:
        raise ToolFailure("INVALID_ARGUMENT", f"{name} must be at least {minimum}")
    return number


def _lookup(collection: dict, key: Any) -> Any:
    return collection.get(key) if isinstance(key, str) else None


def _page(items: list, offset: int, total: int | None = None) -> dict[str, Any]:
    """One page of ``items``; with ``total`` given, ``items`` is already that page."""
    if total is None:
        total = len(items)
        items = items[offset : offset + PAGE_SIZE]
    return {
        "results": items,
        "total": total,
        "offset": offset,
        "next_offset": offset + PAGE_SIZE if offset + PAGE_SIZE < total else None,
    }


#: entries per origin state in its response cache (queries are free text: bounded)
READ_CACHE_LIMIT = 512


def _same_records(a: dict, b: dict) -> bool:
    """Do two collections hold the very same record objects, in the same order?"""
    return a is b or (len(a) == len(b) and all(map(operator.is_, a.values(), b.values())))


def _search_hits(customers: dict, needle: str) -> list[dict[str, Any]]:
    return [
        {"customer_id": c["customer_id"], "name": c["name"], "email": c["email"], "phone": c["phone"]}
        for c in customers.values()
        if needle in c["name"].lower() or needle in c["email"].lower() or needle in c["phone"]
    ]


def _order_view(order: dict) -> dict[str, Any]:
    """The get_order response: the record plus its total and refunded cents."""
    out = dict(order)
    out["total_cents"] = order_total(order)
    out["refunded_cents"] = order_refunded(order)
    return out


def _order_or_fail(state: State, order_id: Any) -> dict:
    order = state.orders.get(order_id) if isinstance(order_id, str) else None  # _lookup, inlined
    if order is None:
        raise ToolFailure("NOT_FOUND", f"order {order_id} does not exist")
    return order


def _customer_or_fail(state: State, customer_id: Any) -> dict:
    customer = state.customers.get(customer_id) if isinstance(customer_id, str) else None  # _lookup, inlined
    if customer is None:
        raise ToolFailure("NOT_FOUND", f"customer {customer_id} does not exist")
    return customer


# --------------------------------------------------------------------------------------------------
# the API
# --------------------------------------------------------------------------------------------------
class ToolAPI:
    """The plain (noise-free) tool API over one live world, with a call log and the finish flag.

    The public tool methods (``search_customers(query, offset=0)``, ...) are added after the class, from
    the declarations on the implementations."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.call_log: list[dict[str, Any]] = []
        self.finished = False
        # (payload, its compact JSON) when a read tool found the response text in the origin's cache;
        # ``encode`` uses the text only for that very payload object (any altered copy is re-encoded).
        self._known: tuple[dict, str] | None = None

    # -- entry point -------------------------------------------------------------------------------
    def invoke(self, tool: str, args: dict[str, Any]) -> str:
        """Call ``tool`` with keyword ``args``; TypeError for missing/unknown arguments (like Python)."""
        names = _PARAM_NAMES.get(tool)
        if names is None or not names.issuperset(args) or not args.keys() >= _REQUIRED_SET[tool]:
            check_arguments(tool, args)  # raises the precise error
        if self.finished:
            self.call_log.append({"tool": tool, "args": args, "ok": False, "code": "EPISODE_FINISHED"})
            return error_response("EPISODE_FINISHED", MSG_EPISODE_FINISHED)
        return self._dispatch(tool, args)

    def _dispatch(self, tool: str, args: dict[str, Any]) -> str:
        payload, code = self.execute(tool, args)
        self.call_log.append({"tool": tool, "args": args, "ok": code is None, "code": code})
        return self.encode(payload)

    def encode(self, payload: dict[str, Any]) -> str:
        """``dumps_compact(payload)``, from the read cache when the last read produced this payload."""
        known = self._known
        if known is not None:
            self._known = None
            if known[0] is payload:
                return known[1]
        return dumps_compact(payload)

    def execute(self, tool: str, args: dict[str, Any], view: State | None = None) -> tuple[dict, str | None]:
        """Run a tool without logging; return (response object, error code or None).

        ``view`` replaces the live world for read tools (the noise layer's stale reads).
        """
        impl = _IMPLS[tool]
        try:
            if tool in _READ_SET:
                return impl(self, view if view is not None else self.world, **args), None
            return impl(self, self.world, **args), None
        except ToolFailure as failure:
            return failure.payload(), failure.code

    # -- implementations -----------------------------------------------------------------------------
    @tool(
        "Find customers whose name, email or phone contains the query (5 results per page).",
        query=(str, "Text to match."),
        offset=(int, "First result to return (0 = first page)."),
    )
    def _search_customers(self, st: State, query: Any, offset: Any = 0) -> dict:
        needle = as_text("query", query).lower()
        start = as_int("offset", offset, 0)
        origin = st.origin
        if not _same_records(st.customers, origin.customers):
            return _page(_search_hits(st.customers, needle), start)
        # The customers are the origin's very records (no tool writes customers): cache by query.
        cache = st.read_cache()
        key = ("search_customers", needle)
        hits = cache.get(key)
        if hits is None:
            hits = _search_hits(origin.customers, needle)
            if len(cache) < READ_CACHE_LIMIT:
                cache[key] = hits
        payload = _page([dict(hit) for hit in hits[start : start + PAGE_SIZE]], start, len(hits))
        text_key = ("search_customers", needle, start)
        text = cache.get(text_key)
        if text is None:
            text = dumps_compact(payload)
            if len(cache) < READ_CACHE_LIMIT:
                cache[text_key] = text
        self._known = (payload, text)
        return payload

    @tool("Read a customer record.", customer_id=(str, "Customer id (C and four digits)."))
    def _get_customer(self, st: State, customer_id: Any) -> dict:
        return _customer_or_fail(st, customer_id)

    @tool(
        "List the orders of a customer, highest id first (5 per page).",
        customer_id=(str, "Customer id (C and four digits)."),
        offset=(int, "First result to return (0 = first page)."),
    )
    def _list_orders(self, st: State, customer_id: Any, offset: Any = 0) -> dict:
        _customer_or_fail(st, customer_id)
        start = as_int("offset", offset, 0)
        rows = [
            {
                "order_id": o["order_id"],
                "status": o["status"],
                "total_cents": order_total(o),
                "placed_on_day": o["placed_on_day"],
                "item_count": len(o["items"]),
            }
            for o in st.orders.values()
            if o["customer_id"] == customer_id
        ]
        rows.sort(key=lambda r: r["order_id"], reverse=True)
        return _page(rows, start)

    @tool(
        "Read an order: items, status, address, refunds, reservations.",
        order_id=(str, "Order id (O and four digits)."),
    )
    def _get_order(self, st: State, order_id: Any) -> dict:
        order = _order_or_fail(st, order_id)
        if st.origin.orders.get(order_id) is not order:
            return _order_view(order)
        # an untouched record of the origin: its response never changes; cache it and its text
        cache = st.read_cache()
        key = ("get_order", order_id)
        entry = cache.get(key)
        if entry is None:
            view = _order_view(order)
            entry = (view, dumps_compact(view))
            if len(cache) < READ_CACHE_LIMIT:
                cache[key] = entry
        out = dict(entry[0])  # a fresh payload; the cached one is never handed out
        self._known = (out, entry[1])
        return out

    @tool(
        "Read stock, reserved and available units of a product.",
        sku=(str, "Product id (SKU- and four digits)."),
    )
    def _check_inventory(self, st: State, sku: Any) -> dict:
        product = _lookup(st.products, sku)
        if product is None:
            raise ToolFailure("NOT_FOUND", f"sku {sku} does not exist")
        reserved = st.world_reserved(sku)
        return {
            "sku": product["sku"],
            "name": product["name"],
            "price_cents": product["price_cents"],
            "stock": product["stock"],
            "reserved": reserved,
            "available": product["stock"] - reserved,
        }

    @tool(
        "Set a new shipping address on an order that has not shipped.",
        order_id=(str, "Order id."),
        street=(str, "Street line."),
        city=(str, "City."),
        postal_code=(str, "Postal code."),
    )
    def _update_shipping_address(
        self, w: World, order_id: Any, street: Any, city: Any, postal_code: Any
    ) -> dict:
        order = _order_or_fail(w, order_id)
        address = {
            "street": as_text("street", street),
            "city": as_text("city", city),
            "postal_code": as_text("postal_code", postal_code),
        }
        if order["status"] not in ("pending", "paid"):
            raise ToolFailure(
                "INVALID_STATE",
                f"order {order_id} is {order['status']}; the address can only change before shipment",
            )
        order = w.own_order(order_id)
        order["shipping_address"] = address
        w.commit()
        return {"order_id": order_id, "shipping_address": dict(address)}

    @tool(
        "Cancel a pending or paid order.", order_id=(str, "Order id."), reason=(str, "Reason for cancelling.")
    )
    def _cancel_order(self, w: World, order_id: Any, reason: Any) -> dict:
        order = _order_or_fail(w, order_id)
        as_text("reason", reason)
        if order["status"] not in ("pending", "paid"):
            raise ToolFailure(
                "INVALID_STATE", f"order {order_id} is {order['status']} and cannot be cancelled"
            )
        was_paid = order["status"] == "paid"
        order = w.own_order(order_id)
        order["status"] = "cancelled"
        order["paid_before_cancel"] = was_paid
        order["reservations"] = []
        w.commit()
        return {
            "order_id": order_id,
            "status": "cancelled",
            "refund_due_cents": order_balance(order) if was_paid else 0,
        }

    @tool(
        "Refund an amount on an order that was charged.",
        order_id=(str, "Order id."),
        amount_cents=(int, "Amount in cents."),
        reason=(str, "Reason for the refund."),
    )
    def _issue_refund(self, w: World, order_id: Any, amount_cents: Any, reason: Any) -> dict:
        order = _order_or_fail(w, order_id)
        amount = as_int("amount_cents", amount_cents, 1)
        text = as_text("reason", reason)
        status = order["status"]
        if status == "pending":
            raise ToolFailure("RULE_VIOLATION", "nothing has been charged on a pending order")
        if status == "shipped":
            raise ToolFailure(
                "RULE_VIOLATION", "refunds are not allowed while the order is in transit; wait for delivery"
            )
        if status == "cancelled" and not order["paid_before_cancel"]:
            raise ToolFailure("RULE_VIOLATION", "the order was cancelled before payment; nothing to refund")
        balance = order_balance(order)
        if amount > balance:
            raise ToolFailure(
                "RULE_VIOLATION",
                f"amount {amount} exceeds the refundable balance {balance}",
                refundable_balance_cents=balance,
            )
        order = w.own_order(order_id)
        order["refunds"] = [*order["refunds"], {"amount_cents": amount, "reason": text}]
        w.commit()
        return {
            "order_id": order_id,
            "refund_cents": amount,
            "refunded_total_cents": order_refunded(order),
            "refundable_balance_cents": order_balance(order),
        }

    @tool(
        "Reserve units of a product for an order.",
        sku=(str, "Product id."),
        quantity=(int, "Units to reserve."),
        order_id=(str, "Order id."),
    )
    def _reserve_stock(self, w: World, sku: Any, quantity: Any, order_id: Any) -> dict:
        if _lookup(w.products, sku) is None:
            raise ToolFailure("NOT_FOUND", f"sku {sku} does not exist")
        order = _order_or_fail(w, order_id)
        qty = as_int("quantity", quantity, 1)
        if order["status"] not in ("pending", "paid"):
            raise ToolFailure(
                "INVALID_STATE", f"order {order_id} is {order['status']}; stock cannot be reserved"
            )
        needed = sum(item["quantity"] for item in order["items"] if item["sku"] == sku)
        if not any(item["sku"] == sku for item in order["items"]):
            raise ToolFailure("RULE_VIOLATION", f"sku {sku} is not on order {order_id}")
        already = reserved_on_order(order, sku)
        if already + qty > needed:
            raise ToolFailure(
                "RULE_VIOLATION", f"order {order_id} needs {needed} of {sku}; {already} already reserved"
            )
        available = w.available(sku)
        if qty > available:
            raise ToolFailure("RULE_VIOLATION", f"only {available} of {sku} available", available=available)
        order = w.own_order(order_id)
        order["reservations"] = [*order["reservations"], {"sku": sku, "quantity": qty}]
        w.commit()
        return {
            "order_id": order_id,
            "sku": sku,
            "reserved_quantity": already + qty,
            "available_after": available - qty,
        }

    @tool(
        "Ship a paid, fully reserved order.",
        order_id=(str, "Order id."),
        carrier=(str, "Carrier, as named in the request."),
        day=(int, "Shipping day (today to today + 7)."),
    )
    def _schedule_shipment(self, w: World, order_id: Any, carrier: Any, day: Any) -> dict:
        order = _order_or_fail(w, order_id)
        carrier_name = as_text("carrier", carrier).lower()
        ship_day = as_int("day", day)
        if carrier_name not in words.CARRIERS:
            raise ToolFailure("INVALID_ARGUMENT", f"carrier must be one of {list(words.CARRIERS)}")
        if not TODAY_DAY <= ship_day <= TODAY_DAY + SHIPPING_WINDOW_DAYS:
            raise ToolFailure(
                "RULE_VIOLATION",
                f"day must be between {TODAY_DAY} and {TODAY_DAY + SHIPPING_WINDOW_DAYS}",
                today_day=w.today_day,
            )
        if order["status"] == "pending":
            raise ToolFailure("INVALID_STATE", f"order {order_id} is unpaid and cannot ship")
        if order["status"] != "paid":
            raise ToolFailure(
                "INVALID_STATE", f"order {order_id} is {order['status']} and cannot be scheduled"
            )
        if not fully_reserved(order):
            raise ToolFailure("RULE_VIOLATION", "reserve stock for every item on the order first")
        shipment_id = w.next_shipment_id()
        w.add_shipment(
            {
                "shipment_id": shipment_id,
                "order_id": order_id,
                "carrier": carrier_name,
                "scheduled_day": ship_day,
                "status": "scheduled",
            }
        )
        for item in order["items"]:
            w.mut_product(item["sku"])["stock"] -= item["quantity"]
        order = w.own_order(order_id)
        order["reservations"] = []
        order["status"] = "shipped"
        order["shipment_id"] = shipment_id
        w.commit()
        return {
            "shipment_id": shipment_id,
            "order_id": order_id,
            "carrier": carrier_name,
            "scheduled_day": ship_day,
            "status": "scheduled",
        }

    @tool(
        "Open a support ticket for a customer.",
        customer_id=(str, "Customer id."),
        order_id=(str, "Linked order id, or an empty string for none."),
        category=(str, "Ticket category, as named in the request."),
        priority=(str, "Ticket priority, as named in the request."),
        summary=(str, "Ticket summary."),
    )
    def _create_ticket(
        self, w: World, customer_id: Any, order_id: Any, category: Any, priority: Any, summary: Any
    ) -> dict:
        _customer_or_fail(w, customer_id)
        cat = as_text("category", category).lower()
        prio = as_text("priority", priority).lower()
        text = as_text("summary", summary)
        if cat not in words.TICKET_CATEGORIES:
            raise ToolFailure("INVALID_ARGUMENT", f"category must be one of {list(words.TICKET_CATEGORIES)}")
        if prio not in words.TICKET_PRIORITIES:
            raise ToolFailure("INVALID_ARGUMENT", f"priority must be one of {list(words.TICKET_PRIORITIES)}")
        linked = None
        if isinstance(order_id, str) and order_id.strip():
            linked = order_id.strip()
            order = _order_or_fail(w, linked)
            if order["customer_id"] != customer_id:
                raise ToolFailure("RULE_VIOLATION", f"order {linked} belongs to another customer")
        ticket_id = w.next_ticket_id()
        w.add_ticket(
            {
                "ticket_id": ticket_id,
                "customer_id": customer_id,
                "order_id": linked,
                "category": cat,
                "priority": prio,
                "summary": text,
                "status": "open",
            }
        )
        w.commit()
        return {
            "ticket_id": ticket_id,
            "customer_id": customer_id,
            "order_id": linked,
            "category": cat,
            "priority": prio,
            "status": "open",
        }

    @tool("Let time pass, e.g. after being rate limited.", seconds=(int, "Seconds to wait (1 to 600)."))
    def _wait(self, w: World, seconds: Any) -> dict:
        secs = as_int("seconds", seconds, 1)
        if secs > MAX_WAIT_SECONDS:
            raise ToolFailure("INVALID_ARGUMENT", f"seconds must be at most {MAX_WAIT_SECONDS}")
        w.clock_seconds += secs
        return {"waited_seconds": secs, "clock_seconds": w.clock_seconds}

    @tool(
        "End the episode after making all requested changes.",
        summary=(str, "What was done, in one sentence."),
    )
    def _finish(self, w: World, summary: Any) -> dict:
        as_text("summary", summary)
        self.finished = True
        return {"status": "finished"}


_READ_SET = frozenset(READ_TOOLS)
_IMPLS = {name: getattr(ToolAPI, f"_{name}") for name in TOOL_NAMES}


def _declaration(name: str) -> ToolDeclaration:
    impl = _IMPLS[name]
    summary, args = impl.tool_declaration
    params = list(inspect.signature(impl).parameters.values())[2:]  # after self and the state
    if [p.name for p in params] != list(args):
        raise TypeError(
            f"@tool of _{name}: declares {list(args)}, the implementation takes {[p.name for p in params]}"
        )
    public = [p.replace(annotation=args[p.name][0]) for p in params]
    return ToolDeclaration(
        name,
        inspect.Signature(public, return_annotation=str),
        summary,
        {arg: prose for arg, (_, prose) in args.items()},
    )


#: name -> the tool's one declaration (signature and the prose the model sees), in ``TOOL_NAMES`` order.
TOOL_DECLARATIONS: dict[str, ToolDeclaration] = {name: _declaration(name) for name in TOOL_NAMES}
#: name -> inspect.Signature (without ``self``): argument names, order, types and defaults of docs/simulator.md#tool-rules.
TOOL_SIGNATURES: dict[str, inspect.Signature] = {name: d.signature for name, d in TOOL_DECLARATIONS.items()}


def tool_function(name: str, owner: str, call: Callable[[Any, str, tuple, dict], str]) -> Callable[..., str]:
    """A method ``owner.name(self, ...)`` with the tool's declared signature and docstring that hands its
    raw arguments to ``call(self, name, args, kwargs)`` (frameworks build tool schemas from it)."""
    declaration = TOOL_DECLARATIONS[name]

    def method(self: Any, *args: Any, **kwargs: Any) -> str:
        return call(self, name, args, kwargs)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += list(declaration.signature.parameters.values())
    method.__name__ = name
    method.__qualname__ = f"{owner}.{name}"
    method.__doc__ = declaration.docstring()
    method.__signature__ = declaration.signature.replace(parameters=params)  # type: ignore[attr-defined]
    method.__annotations__ = {
        **{p.name: p.annotation for p in declaration.signature.parameters.values()},
        "return": str,
    }
    return method


def _invoke_bound(api: "ToolAPI", name: str, args: tuple, kwargs: dict) -> str:
    """The public methods' call: Python's own binding (TypeError as for a plain method), then ``invoke``
    with every argument, defaults included."""
    bound = TOOL_SIGNATURES[name].bind(*args, **kwargs)
    bound.apply_defaults()
    return api.invoke(name, dict(bound.arguments))


for _name in TOOL_NAMES:
    setattr(ToolAPI, _name, tool_function(_name, "ToolAPI", _invoke_bound))
del _name

_PARAM_NAMES: dict[str, frozenset[str]] = {n: frozenset(s.parameters) for n, s in TOOL_SIGNATURES.items()}
_REQUIRED: dict[str, tuple[str, ...]] = {
    n: tuple(p.name for p in s.parameters.values() if p.default is inspect.Parameter.empty)
    for n, s in TOOL_SIGNATURES.items()
}
_REQUIRED_SET: dict[str, frozenset[str]] = {n: frozenset(r) for n, r in _REQUIRED.items()}


def check_arguments(tool: str, args: dict[str, Any]) -> None:
    """Raise UnknownToolError / TypeError exactly where calling the Python method would fail."""
    names = _PARAM_NAMES.get(tool)
    if names is None:
        raise UnknownToolError(f"unknown tool {tool!r}; the tools are: {', '.join(TOOL_NAMES)}")
    if names.issuperset(args) and args.keys() >= _REQUIRED_SET[tool]:
        return  # the common case; the loops below find the first offending name, as Python would
    for key in args:
        if key not in names:
            raise TypeError(f"{tool}() got an unexpected keyword argument '{key}'")
    missing = [name for name in _REQUIRED[tool] if name not in args]
    if missing:
        quoted = ", ".join(f"'{m}'" for m in missing)
        raise TypeError(f"{tool}() missing {len(missing)} required keyword argument(s): {quoted}")
