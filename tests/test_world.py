"""World generation (docs/simulator.md#world-generation) against the paper's fingerprints, and snapshot / history semantics."""

from __future__ import annotations

import random

import pytest
from paired_rollouts.backoffice import world
from paired_rollouts.backoffice.tools import ToolAPI
from paired_rollouts.backoffice.world import World, build_initial_state

FINGERPRINTS = {
    0: "22c0daed0966ae9a491174daeedc23f41c50f6fdb30cd9637a678c881fe17ecf",
    1: "9f8008bdd159082a8373e16648167b60c7c1b40201343d0d3d5ed55ee142b1b2",
    126704: "d001c4c34e3a5b0d848358465fad1b931bb43dea5c68360c5116f1b1d54cd65d",
}


@pytest.mark.parametrize("seed", sorted(FINGERPRINTS))
def test_world_fingerprints(seed: int) -> None:
    assert World.generate(seed).fingerprint() == FINGERPRINTS[seed]
    assert build_initial_state(seed).fingerprint() == FINGERPRINTS[seed]  # uncached path too


def test_compiled_worlds_equal_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worlds come from the C helper (backoffice/_world_draws.c) where the install built it, and each equals the
    Python reference's record for record (keys in order, values and their types), whether the reference
    draws through ``WorldDraws`` or with ``random.Random``'s own methods; seeds beyond the helper's 64
    bits take the reference."""
    assert world.WORLD_DRAWS.startswith("compiled"), "run bash scripts/setup.sh (pip install -e .)"
    rng = random.Random(20261202)
    seeds = [0, 1, 126704, 2**31 - 1, 2**32, 2**40 + 7, 2**64 - 1] + [rng.getrandbits(31) for _ in range(400)]
    compiled = [world._collections(build_initial_state(seed)) for seed in seeds]
    assert [world._collections(world.reference_initial_state(seed)) for seed in seeds] == compiled
    assert [build_initial_state(seed).fingerprint() for seed in (0, 1, 126704)] == [
        FINGERPRINTS[0],
        FINGERPRINTS[1],
        FINGERPRINTS[126704],
    ]
    monkeypatch.setattr(world, "_DRAWS", random.Random)
    assert [world._collections(world.reference_initial_state(seed)) for seed in seeds[:60]] == compiled[:60]
    beyond = build_initial_state(2**64 + 3)
    assert world._collections(beyond) == world._collections(world.reference_initial_state(2**64 + 3))


def test_compiled_world_draws_equal_random_random() -> None:
    """The world helper's whole generator (``MersenneDraws`` of backoffice/_world_draws.c) is seeded like
    ``random.Random(seed)`` and draws what its methods draw, output after output (twists included)."""
    from paired_rollouts.backoffice._world_draws import MersenneDraws

    rng = random.Random(20261202)
    seeds = [0, 1, 2**32 - 1, 2**32, 2**64 - 1] + [rng.getrandbits(64) for _ in range(40)]
    for seed in seeds:
        ours, theirs = MersenneDraws(seed), random.Random(seed)
        for n in (1, 2, 7, 10, 250, 9001, 2**31, 2**32 - 1):  # 2,000 outputs: several twists
            assert [ours.randint(3, n + 2) for _ in range(50)] == [
                theirs.randint(3, n + 2) for _ in range(50)
            ]
            assert [ours.below(n) for _ in range(50)] == [theirs._randbelow(n) for _ in range(50)]
            assert [ours.random() for _ in range(50)] == [theirs.random() for _ in range(50)]
        assert ours.randrange(500, 50001, 50) == theirs.randrange(500, 50001, 50)
        assert ours.choice("abcdefghijk") == theirs.choice("abcdefghijk")
    for bad in (-1, 2**64):
        with pytest.raises(OverflowError):
            MersenneDraws(bad)
    with pytest.raises(IndexError):
        MersenneDraws(1).choice(())
    with pytest.raises(ValueError):
        MersenneDraws(1).randint(0, 2**32)


def test_world_0_details() -> None:
    snap = World.generate(0).snapshot()
    assert snap["today_day"] == 100 and snap["clock_seconds"] == 0 and snap["version"] == 0
    assert snap["customers"]["C0001"] == {
        "customer_id": "C0001",
        "name": "Omar Brown",
        "email": "omar.brown1@example.com",
        "phone": "+8806048764759",
        "address": {"street": "229 Mill Lane", "city": "Comilla", "postal_code": "3281"},
        "tier": "gold",
    }
    assert snap["products"]["SKU-0001"] == {
        "sku": "SKU-0001",
        "name": "HDMI Cable 2m",
        "price_cents": 41050,
        "stock": 2,
    }
    o1 = snap["orders"]["O0001"]
    assert o1["customer_id"] == "C0033" and o1["status"] == "paid" and o1["placed_on_day"] == 99
    assert [(i["sku"], i["quantity"], i["unit_price_cents"]) for i in o1["items"]] == [
        ("SKU-0016", 1, 46750),
        ("SKU-0021", 2, 6800),
    ]
    assert o1["shipping_address"] == {"street": "188 Green Road", "city": "Mymensingh", "postal_code": "8062"}
    assert o1["reservations"] == []
    statuses = [o["status"] for o in snap["orders"].values()]
    assert {s: statuses.count(s) for s in set(statuses)} == {
        "pending": 24,
        "paid": 19,
        "shipped": 15,
        "delivered": 12,
        "cancelled": 10,
    }
    assert len(snap["shipments"]) == 27
    t1 = snap["tickets"]["T0001"]
    assert (
        t1["customer_id"],
        t1["order_id"],
        t1["category"],
        t1["priority"],
        t1["summary"],
        t1["status"],
    ) == ("C0024", "O0074", "billing", "high", "Request invoice copy", "open")
    assert list(snap["orders"]) == sorted(snap["orders"]) and len(snap["orders"]) == 80
    assert len(snap["customers"]) == 40 and len(snap["products"]) == 30 and len(snap["tickets"]) == 10


def test_world_invariants_over_seeds() -> None:
    for seed in range(20):
        snap = World.generate(seed).snapshot()
        names = [c["name"] for c in snap["customers"].values()]
        assert len(set(names)) == 40
        for product in snap["products"].values():
            assert product["price_cents"] % 50 == 0 and 500 <= product["price_cents"] <= 50000
        reserved: dict[str, int] = {}
        for order in snap["orders"].values():
            for res in order["reservations"]:
                reserved[res["sku"]] = reserved.get(res["sku"], 0) + res["quantity"]
            assert (order["shipment_id"] is not None) == (order["status"] in ("shipped", "delivered"))
        for sku, qty in reserved.items():
            assert snap["products"][sku]["stock"] >= qty  # stock floor


def test_writes_never_touch_the_cached_initial_world() -> None:
    world = World.generate(126704)
    api = ToolAPI(world)
    api.invoke("cancel_order", {"order_id": "O0011", "reason": "x"})
    api.invoke("schedule_shipment", {"order_id": "O0009", "carrier": "express", "day": 101})
    assert world.version == 2
    assert World.generate(126704).fingerprint() == FINGERPRINTS[126704]
    assert world.fingerprint() != FINGERPRINTS[126704]


def test_history_and_as_of() -> None:
    world = World.generate(126704)
    api = ToolAPI(world)
    api.invoke("cancel_order", {"order_id": "O0011", "reason": "x"})
    api.invoke(
        "update_shipping_address", {"order_id": "O0038", "street": "1 A", "city": "B", "postal_code": "C"}
    )
    assert len(world.history) == 3
    assert world.as_of(0)["orders"]["O0011"]["status"] == "pending"
    assert world.as_of(1)["orders"]["O0011"]["status"] == "cancelled"
    assert world.as_of(1)["orders"]["O0038"]["shipping_address"]["street"] != "1 A"
    assert world.as_of(2)["orders"]["O0038"]["shipping_address"]["street"] == "1 A"
    assert world.as_of(-5) == world.as_of(0) and world.as_of(99) == world.as_of(2)
    assert world.as_of(0)["version"] == 0 and world.as_of(2)["version"] == 2
    # a snapshot is a deep copy: editing it changes nothing
    snap = world.as_of(2)
    snap["orders"]["O0038"]["shipping_address"]["street"] = "mutated"
    assert world.snapshot()["orders"]["O0038"]["shipping_address"]["street"] == "1 A"
