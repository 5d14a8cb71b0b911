"""The 13 tools (docs/simulator.md#tools): signatures, validation order, messages, effects, pagination, finish."""

from __future__ import annotations

import inspect
import json

import pytest
from paired_rollouts.backoffice.tools import (
    CONTROL_TOOLS,
    READ_TOOLS,
    TOOL_NAMES,
    TOOL_SIGNATURES,
    WRITE_TOOLS,
    ToolAPI,
    UnknownToolError,
    dumps_sorted,
)
from paired_rollouts.backoffice.world import World

EMPTY = inspect.Parameter.empty
EXPECTED_SIGNATURES = {
    "search_customers": [("query", str, EMPTY), ("offset", int, 0)],
    "get_customer": [("customer_id", str, EMPTY)],
    "list_orders": [("customer_id", str, EMPTY), ("offset", int, 0)],
    "get_order": [("order_id", str, EMPTY)],
    "check_inventory": [("sku", str, EMPTY)],
    "update_shipping_address": [
        ("order_id", str, EMPTY),
        ("street", str, EMPTY),
        ("city", str, EMPTY),
        ("postal_code", str, EMPTY),
    ],
    "cancel_order": [("order_id", str, EMPTY), ("reason", str, EMPTY)],
    "issue_refund": [("order_id", str, EMPTY), ("amount_cents", int, EMPTY), ("reason", str, EMPTY)],
    "reserve_stock": [("sku", str, EMPTY), ("quantity", int, EMPTY), ("order_id", str, EMPTY)],
    "schedule_shipment": [("order_id", str, EMPTY), ("carrier", str, EMPTY), ("day", int, EMPTY)],
    "create_ticket": [
        ("customer_id", str, EMPTY),
        ("order_id", str, EMPTY),
        ("category", str, EMPTY),
        ("priority", str, EMPTY),
        ("summary", str, EMPTY),
    ],
    "wait": [("seconds", int, EMPTY)],
    "finish": [("summary", str, EMPTY)],
}


def api_for(seed: int = 126704) -> ToolAPI:
    return ToolAPI(World.generate(seed))


def call(api: ToolAPI, tool: str, **kwargs) -> dict:
    text = api.invoke(tool, kwargs)
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    return json.loads(text)


def err(response: dict) -> tuple[str, str]:
    return response["error"]["code"], response["error"]["message"]


def first_order(world: World, status: str, customer: str | None = None) -> dict:
    return next(
        o
        for o in world.orders.values()
        if o["status"] == status and (customer is None or o["customer_id"] == customer)
    )


def test_tool_groups_and_signatures() -> None:
    assert len(TOOL_NAMES) == 13 and set(TOOL_NAMES) == set(READ_TOOLS) | set(WRITE_TOOLS) | set(
        CONTROL_TOOLS
    )
    assert set(TOOL_SIGNATURES) == set(EXPECTED_SIGNATURES)
    for name, expected in EXPECTED_SIGNATURES.items():
        params = list(TOOL_SIGNATURES[name].parameters.values())
        assert [(p.name, p.annotation, p.default) for p in params] == expected, name
        method = getattr(ToolAPI, name)
        assert method.__doc__ and "Args:" in method.__doc__
        assert TOOL_SIGNATURES[name].return_annotation is str


def test_responses_are_compact_sorted_json() -> None:
    api = api_for()
    text = api.invoke("cancel_order", {"order_id": "O0011", "reason": "customer request"})
    assert text == '{"order_id":"O0011","refund_due_cents":0,"status":"cancelled"}'
    text = api.invoke(
        "update_shipping_address",
        {"order_id": "O0038", "street": " 102 Market Street ", "city": "Dhaka", "postal_code": 2748},
    )
    assert text == (
        '{"order_id":"O0038","shipping_address":{"city":"Dhaka","postal_code":"2748",'
        '"street":"102 Market Street"}}'
    )
    text = api.invoke("schedule_shipment", {"order_id": "O0009", "carrier": "Standard", "day": "107"})
    assert text == (
        '{"carrier":"standard","order_id":"O0009","scheduled_day":107,"shipment_id":"S0028",'
        '"status":"scheduled"}'
    )
    assert api.world.version == 3
    order = call(api, "get_order", order_id="O0009")
    assert len(order) == 12 and order["status"] == "shipped" and order["reservations"] == []
    assert order["total_cents"] == 135600 and order["refunded_cents"] == 0


def test_text_and_integer_coercion() -> None:
    api = api_for()
    base = {"order_id": "O0038", "street": "1 Elm Street", "city": "Dhaka"}
    assert (
        call(api, "update_shipping_address", **base, postal_code=7497.0)["shipping_address"]["postal_code"]
        == "7497"
    )
    for bad in (7497.5, True, "   ", None, ["1"]):
        assert err(call(api, "update_shipping_address", **base, postal_code=bad)) == (
            "INVALID_ARGUMENT",
            "postal_code must be a non-empty string",
        )
    assert call(api, "search_customers", query="a", offset="5")["offset"] == 5
    for bad in (5.0, True, "5.0", "five", None):
        assert err(call(api, "search_customers", query="a", offset=bad)) == (
            "INVALID_ARGUMENT",
            "offset must be an integer",
        )
    assert err(call(api, "search_customers", query="a", offset=" -3 ")) == (
        "INVALID_ARGUMENT",
        "offset must be at least 0",
    )
    assert err(call(api, "wait", seconds=0)) == ("INVALID_ARGUMENT", "seconds must be at least 1")
    assert err(call(api, "wait", seconds=601)) == ("INVALID_ARGUMENT", "seconds must be at most 600")


def test_pagination_and_search() -> None:
    api = api_for(0)
    page = call(api, "search_customers", query="@EXAMPLE.com")
    assert page["total"] == 40 and page["offset"] == 0 and page["next_offset"] == 5
    assert [r["customer_id"] for r in page["results"]] == ["C0001", "C0002", "C0003", "C0004", "C0005"]
    assert set(page["results"][0]) == {"customer_id", "name", "email", "phone"}
    last = call(api, "search_customers", query="example", offset=35)
    assert len(last["results"]) == 5 and last["next_offset"] is None
    past = call(api, "search_customers", query="example", offset=100)
    assert past["results"] == [] and past["total"] == 40 and past["next_offset"] is None
    assert call(api, "search_customers", query="+8806048764759")["results"][0]["name"] == "Omar Brown"
    assert call(api, "search_customers", query="omar brown")["total"] >= 1
    orders = call(api, "list_orders", customer_id="C0033")
    ids = [r["order_id"] for r in orders["results"]]
    own = sorted(
        (o["order_id"] for o in api.world.orders.values() if o["customer_id"] == "C0033"), reverse=True
    )
    assert "O0001" in own and ids == own[:5] and orders["total"] == len(own)
    assert set(orders["results"][0]) == {"order_id", "status", "total_cents", "placed_on_day", "item_count"}
    assert err(call(api, "list_orders", customer_id="C9999")) == (
        "NOT_FOUND",
        "customer C9999 does not exist",
    )
    assert err(call(api, "get_customer", customer_id=17)) == ("NOT_FOUND", "customer 17 does not exist")
    assert err(call(api, "check_inventory", sku="SKU-9")) == ("NOT_FOUND", "sku SKU-9 does not exist")
    inv = call(api, "check_inventory", sku="SKU-0001")
    assert inv["name"] == "HDMI Cable 2m" and inv["available"] == inv["stock"] - inv["reserved"]


def test_validation_order_update_address() -> None:
    api = api_for(0)
    shipped = first_order(api.world, "shipped")["order_id"]
    assert err(
        call(api, "update_shipping_address", order_id="O9999", street="", city="", postal_code="")
    ) == ("NOT_FOUND", "order O9999 does not exist")
    assert err(
        call(api, "update_shipping_address", order_id=shipped, street="", city="", postal_code="")
    ) == ("INVALID_ARGUMENT", "street must be a non-empty string")
    assert err(
        call(api, "update_shipping_address", order_id=shipped, street="1 A", city="B", postal_code="C")
    ) == ("INVALID_STATE", f"order {shipped} is shipped; the address can only change before shipment")
    assert api.world.version == 0
    assert [e["ok"] for e in api.call_log] == [False, False, False]


def test_cancel_and_refund_rules() -> None:
    api = api_for(0)
    w = api.world
    pending = first_order(w, "pending")["order_id"]
    shipped = first_order(w, "shipped")["order_id"]
    paid = first_order(w, "paid")
    delivered = first_order(w, "delivered")["order_id"]
    assert err(call(api, "cancel_order", order_id=shipped, reason="x")) == (
        "INVALID_STATE",
        f"order {shipped} is shipped and cannot be cancelled",
    )
    assert err(call(api, "issue_refund", order_id=pending, amount_cents=100, reason="x")) == (
        "RULE_VIOLATION",
        "nothing has been charged on a pending order",
    )
    assert err(call(api, "issue_refund", order_id=shipped, amount_cents=100, reason="x")) == (
        "RULE_VIOLATION",
        "refunds are not allowed while the order is in transit; wait for delivery",
    )
    assert err(call(api, "issue_refund", order_id=delivered, amount_cents=0, reason="x")) == (
        "INVALID_ARGUMENT",
        "amount_cents must be at least 1",
    )
    # cancelling an unpaid order: nothing to refund afterwards
    assert call(api, "cancel_order", order_id=pending, reason="x")["refund_due_cents"] == 0
    assert err(call(api, "issue_refund", order_id=pending, amount_cents=1, reason="x")) == (
        "RULE_VIOLATION",
        "the order was cancelled before payment; nothing to refund",
    )
    # cancelling a paid order: the balance is due and refundable, but not more
    total = sum(i["quantity"] * i["unit_price_cents"] for i in paid["items"])
    assert call(api, "cancel_order", order_id=paid["order_id"], reason="x")["refund_due_cents"] == total
    over = call(api, "issue_refund", order_id=paid["order_id"], amount_cents=total + 1, reason="x")
    assert err(over) == ("RULE_VIOLATION", f"amount {total + 1} exceeds the refundable balance {total}")
    assert over["error"]["refundable_balance_cents"] == total
    ok = call(api, "issue_refund", order_id=paid["order_id"], amount_cents=total - 50, reason="x")
    assert ok == {
        "order_id": paid["order_id"],
        "refund_cents": total - 50,
        "refunded_total_cents": total - 50,
        "refundable_balance_cents": 50,
    }
    assert w.orders[paid["order_id"]]["paid_before_cancel"] is True


def test_reserve_and_ship_rules() -> None:
    api = api_for(0)
    w = api.world
    paid = next(o for o in w.orders.values() if o["status"] == "paid" and not o["reservations"])
    oid, item = paid["order_id"], paid["items"][0]
    shipped = first_order(w, "shipped")["order_id"]
    other_sku = next(s for s in w.products if all(i["sku"] != s for i in paid["items"]))
    assert err(call(api, "reserve_stock", sku="SKU-0999", quantity=1, order_id="O9999"))[0] == "NOT_FOUND"
    assert err(call(api, "reserve_stock", sku=item["sku"], quantity=1, order_id="O9999")) == (
        "NOT_FOUND",
        "order O9999 does not exist",
    )
    assert err(call(api, "reserve_stock", sku=item["sku"], quantity=0, order_id=oid)) == (
        "INVALID_ARGUMENT",
        "quantity must be at least 1",
    )
    assert err(call(api, "reserve_stock", sku=item["sku"], quantity=1, order_id=shipped)) == (
        "INVALID_STATE",
        f"order {shipped} is shipped; stock cannot be reserved",
    )
    assert err(call(api, "reserve_stock", sku=other_sku, quantity=1, order_id=oid)) == (
        "RULE_VIOLATION",
        f"sku {other_sku} is not on order {oid}",
    )
    assert err(call(api, "reserve_stock", sku=item["sku"], quantity=item["quantity"] + 1, order_id=oid)) == (
        "RULE_VIOLATION",
        f"order {oid} needs {item['quantity']} of {item['sku']}; 0 already reserved",
    )
    assert err(call(api, "schedule_shipment", order_id=oid, carrier="drone", day=101)) == (
        "INVALID_ARGUMENT",
        "carrier must be one of ['standard', 'express']",
    )
    late = call(api, "schedule_shipment", order_id=oid, carrier="express", day=108)
    assert (
        err(late) == ("RULE_VIOLATION", "day must be between 100 and 107")
        and late["error"]["today_day"] == 100
    )
    assert err(call(api, "schedule_shipment", order_id=oid, carrier="express", day=101.0)) == (
        "INVALID_ARGUMENT",
        "day must be an integer",
    )
    pending = first_order(w, "pending")["order_id"]
    assert err(call(api, "schedule_shipment", order_id=pending, carrier="express", day=101)) == (
        "INVALID_STATE",
        f"order {pending} is unpaid and cannot ship",
    )
    assert err(call(api, "schedule_shipment", order_id=shipped, carrier="express", day=101)) == (
        "INVALID_STATE",
        f"order {shipped} is shipped and cannot be scheduled",
    )
    if len(paid["items"]) > 0:
        assert err(call(api, "schedule_shipment", order_id=oid, carrier="express", day=101)) == (
            "RULE_VIOLATION",
            "reserve stock for every item on the order first",
        )
    # an unavailable quantity
    scarce_sku = item["sku"]
    w.mut_product(scarce_sku)["stock"] = w.world_reserved(scarce_sku)  # nothing available
    short = call(api, "reserve_stock", sku=scarce_sku, quantity=1, order_id=oid)
    assert (
        err(short) == ("RULE_VIOLATION", f"only 0 of {scarce_sku} available")
        and short["error"]["available"] == 0
    )


def test_full_reserve_then_ship_consumes_stock() -> None:
    api = api_for(126704)
    w = api.world
    order = next(
        o
        for o in w.orders.values()
        if o["status"] == "paid"
        and not o["reservations"]
        and all(w.available(i["sku"]) >= i["quantity"] for i in o["items"])
    )
    stock_before = {i["sku"]: w.products[i["sku"]]["stock"] for i in order["items"]}
    for item in order["items"]:
        res = call(
            api, "reserve_stock", sku=item["sku"], quantity=item["quantity"], order_id=order["order_id"]
        )
        assert res["reserved_quantity"] == item["quantity"]
    n_ship = len(w.shipments)
    out = call(api, "schedule_shipment", order_id=order["order_id"], carrier="express", day=100)
    assert out["shipment_id"] == f"S{n_ship + 1:04d}" and out["status"] == "scheduled"
    for item in order["items"]:
        assert w.products[item["sku"]]["stock"] == stock_before[item["sku"]] - item["quantity"]
    assert (
        w.orders[order["order_id"]]["reservations"] == []
        and w.orders[order["order_id"]]["status"] == "shipped"
    )


def test_create_ticket() -> None:
    api = api_for(0)
    w = api.world
    own = first_order(w, "paid")
    foreign = next(o for o in w.orders.values() if o["customer_id"] != own["customer_id"])
    cid = own["customer_id"]
    base = {"customer_id": cid, "category": "Billing", "priority": "HIGH", "summary": "s"}
    assert (
        err(call(api, "create_ticket", **{**base, "customer_id": "C0999", "category": "bad"}, order_id=""))[0]
        == "NOT_FOUND"
    )
    assert err(call(api, "create_ticket", **{**base, "category": "bad", "priority": "bad"}, order_id="")) == (
        "INVALID_ARGUMENT",
        "category must be one of ['billing', 'shipping', 'product', 'account', 'other']",
    )
    assert err(call(api, "create_ticket", **{**base, "priority": "urgent"}, order_id="")) == (
        "INVALID_ARGUMENT",
        "priority must be one of ['low', 'normal', 'high']",
    )
    assert err(call(api, "create_ticket", **base, order_id=foreign["order_id"])) == (
        "RULE_VIOLATION",
        f"order {foreign['order_id']} belongs to another customer",
    )
    assert err(call(api, "create_ticket", **base, order_id="O9999"))[0] == "NOT_FOUND"
    linked = call(api, "create_ticket", **base, order_id=own["order_id"])
    assert linked == {
        "ticket_id": "T0011",
        "customer_id": cid,
        "order_id": own["order_id"],
        "category": "billing",
        "priority": "high",
        "status": "open",
    }
    assert call(api, "create_ticket", **base, order_id="")["order_id"] is None
    assert call(api, "create_ticket", **base, order_id=42)["order_id"] is None
    assert w.tickets["T0013"]["summary"] == "s" and w.version == 3


def test_wait_and_finish() -> None:
    api = api_for()
    assert call(api, "wait", seconds="30") == {"waited_seconds": 30, "clock_seconds": 30}
    assert call(api, "wait", seconds=15) == {"waited_seconds": 15, "clock_seconds": 45}
    assert api.world.version == 0
    assert err(call(api, "finish", summary="  ")) == (
        "INVALID_ARGUMENT",
        "summary must be a non-empty string",
    )
    assert not api.finished
    assert call(api, "finish", summary="done") == {"status": "finished"}
    assert api.finished
    message = "the episode is over; do not call any more tools; reply with one short sentence"
    for tool, kwargs in (
        ("get_order", {"order_id": "O0001"}),
        ("finish", {"summary": "again"}),
        ("cancel_order", {"order_id": "O0011", "reason": "x"}),
    ):
        assert err(call(api, tool, **kwargs)) == ("EPISODE_FINISHED", message)
    assert api.world.orders["O0011"]["status"] == "pending"
    assert [(e["tool"], e["ok"], e["code"]) for e in api.call_log[-3:]] == [
        ("get_order", False, "EPISODE_FINISHED"),
        ("finish", False, "EPISODE_FINISHED"),
        ("cancel_order", False, "EPISODE_FINISHED"),
    ]


def test_bad_calls_raise_like_python() -> None:
    api = api_for()
    with pytest.raises(UnknownToolError):
        api.invoke("delete_everything", {})
    with pytest.raises(TypeError, match="unexpected keyword argument 'id'"):
        api.invoke("get_order", {"id": "O0001"})
    with pytest.raises(TypeError, match="missing"):
        api.invoke("cancel_order", {"order_id": "O0001"})
    with pytest.raises(TypeError):
        api.get_order()  # type: ignore[call-arg]
    assert api.call_log == []
    # the public methods delegate to invoke; the log keeps the arguments as given
    api.search_customers(query="omar")
    api.invoke("search_customers", {"query": "omar"})
    assert api.call_log[0]["args"] == {"query": "omar", "offset": 0}
    assert api.call_log[1]["args"] == {"query": "omar"}


def test_dumps_sorted_is_json_dumps_with_sorted_keys() -> None:
    """The grader's and the episode record's encoder: the bytes, the errors and the ``default`` of
    ``json.dumps(obj, sort_keys=True, default=...)``."""
    circular: list = []
    circular.append(circular)
    values = ['a"b\u00e9\n', 0.1, 1e300, -0.0, float("nan"), 7, None, True, [], {}, {"k": object()}, circular]
    values.append({"b": [1, {"z": None, "a": 2.5}], "a": "x", "é": ("t", 1)})
    for value in values:
        for default in (None, str):
            outcomes = []
            for dump in (lambda v, d: json.dumps(v, sort_keys=True, default=d), dumps_sorted):
                try:
                    outcomes.append(dump(value, default))
                except (TypeError, ValueError) as exc:
                    outcomes.append(repr(exc))
            assert outcomes[0] == outcomes[1]
