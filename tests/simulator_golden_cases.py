"""Golden simulator outputs: every episode record and tool response of a covering set of episodes.

Used by ``tests/test_simulator_golden.py`` (a compact subset, digests committed in
``tests/fixtures/simulator_golden.json``) and, as a script, to dump or compare the full set before and
after a speed change::

    python tests/simulator_golden_cases.py dump /tmp/golden_before      # all tasks, schedules 1-4
    python tests/simulator_golden_cases.py compare /tmp/golden_before   # exit 1 on any difference
    python tests/simulator_golden_cases.py digest                       # the committed compact digests

The agents here drive the simulator only through its public entry points (``run_scripted``,
``EpisodeSession``) and keep their own policy code, so a change inside the simulator cannot change the
harness along with the results. Lines are serialised as the pipeline writes episode records
(``paired_rollouts.io.jsonl_line``).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from paired_rollouts.agents.reference import reference_conditions
from paired_rollouts.agents.scripted import run_scripted
from paired_rollouts.backoffice.tools import UnknownToolError
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.io import jsonl_line
from paired_rollouts.noise.config import FAULT_TYPES, NoiseConfig
from paired_rollouts.noise.seeds import eval_schedule_seed, independent_seed

REPO_ROOT = Path(__file__).resolve().parents[1]
POOLS = ("validation", "test")
AGENTS = ("scripted_naive", "scripted_recovering", "session_naive", "session_recovering", "session_fuzz")
#: the compact subset the unit test recomputes: first tasks of each pool, schedules 1-2
COMPACT_TASKS = 16
COMPACT_INDICES = (1, 2)


def conditions() -> dict[str, NoiseConfig]:
    """Every regime the study runs, plus two stress settings that reach the rarer fault paths."""
    return {
        **reference_conditions(),
        "c3_q0.05": NoiseConfig.outcome(0.05),
        "c4_q0.10": NoiseConfig.outcome(0.10),
        "challenge": NoiseConfig.challenge_writes(),
        "stress_p0.60": NoiseConfig.transition(0.60),
        "all_types_p0.50_q0.30": NoiseConfig(p=0.5, q=0.3, weights={t: 1.0 for t in FAULT_TYPES}),
    }


def scenarios() -> list[tuple[str, str, str]]:
    """(condition, mode, agent); clean has no independent arm (no schedule)."""
    out = []
    for cond in conditions():
        for mode in ("paired",) if cond == "clean" else ("paired", "independent"):
            for agent in AGENTS:
                out.append((cond, mode, agent))
    return out


def load_pools(tasks_dir: Path) -> dict[str, list[dict[str, Any]]]:
    from paired_rollouts.backoffice.tasks import load_pool

    return {pool: load_pool(tasks_dir / f"{pool}.jsonl") for pool in POOLS}


# --------------------------------------------------------------------------------------------------
# agents driving an EpisodeSession (own policy code, independent of agents/scripted.py)
# --------------------------------------------------------------------------------------------------
class _Transcript:
    """A session plus every response text, in order."""

    def __init__(self, session: EpisodeSession) -> None:
        self.session = session
        self.responses: list[str] = []

    def call(self, tool: str, *args: Any, **kwargs: Any) -> str:
        try:
            text = self.session.call(tool, *args, **kwargs)
        except (TypeError, UnknownToolError) as exc:
            text = f"!{type(exc).__name__}: {exc}"
        self.responses.append(text)
        return text

    @property
    def spent(self) -> bool:
        return self.session.calls >= self.session.budget or self.session.finished


def _lookups(t: _Transcript, task: dict[str, Any]) -> None:
    world = t.session.world
    t.call("search_customers", query=world.customers[task["customer_id"]]["name"])
    seen: list[str] = []
    for step in task["oracle_plan"]:
        oid = step["args"].get("order_id")
        if oid and oid not in seen:
            seen.append(oid)
            t.call("get_order", order_id=oid)


def _error(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    obj = json.loads(text)
    err = obj.get("error")
    return err if isinstance(err, dict) else None


def _session_naive(t: _Transcript, task: dict[str, Any], rng: random.Random) -> None:
    _lookups(t, task)
    for step in task["oracle_plan"]:
        t.call(step["tool"], **step["args"])
    t.call("finish", summary="done")


def _session_recovering(t: _Transcript, task: dict[str, Any], rng: random.Random) -> None:
    _lookups(t, task)
    for step in task["oracle_plan"]:
        for _ in range(5):
            if t.spent:
                break
            err = _error(t.call(step["tool"], **step["args"]))
            if err is None:
                break
            code = err.get("code")
            if code == "RATE_LIMITED":
                t.call("wait", seconds=err.get("retry_after_seconds", 30))
            elif code == "TIMEOUT":
                if "order_id" in step["args"]:
                    t.call("get_order", order_id=step["args"]["order_id"])
                break  # trust the timed-out write (differs from the reference on purpose)
            elif code != "SERVICE_UNAVAILABLE":
                break
    t.call("finish", summary="done")


def _fuzz_calls(task: dict[str, Any], world: Any, rng: random.Random) -> list[tuple[str, tuple, dict]]:
    """A menu of plausible, wrong and malformed calls for this task."""
    cid = task["customer_id"]
    customer = world.customers[cid]
    oids = list(task.get("order_ids") or ["O0001"])
    oid = rng.choice(oids)
    other = rng.choice(sorted(world.orders))
    sku = rng.choice(sorted(world.products))
    plan = task["oracle_plan"]
    step = rng.choice(plan)
    bad_args = dict(step["args"])
    if "amount_cents" in bad_args:
        bad_args["amount_cents"] = rng.choice([str(bad_args["amount_cents"]), "12a", True, 10**9, -5, 1.5])
    if "day" in bad_args:
        bad_args["day"] = rng.choice([99, 108, "103", " 104 ", 3.0])
    if "carrier" in bad_args:
        bad_args["carrier"] = rng.choice(["EXPRESS", "drone", " standard "])
    if "quantity" in bad_args:
        bad_args["quantity"] = rng.choice([0, 99, "1", bad_args["quantity"]])
    if "street" in bad_args:
        bad_args["street"] = rng.choice(["  ", 12, bad_args["street"] + "  ", None])
    if "category" in bad_args:
        bad_args["category"] = rng.choice(["BILLING", "weather", bad_args["category"]])
    if "order_id" in bad_args:
        bad_args["order_id"] = rng.choice(
            [bad_args["order_id"], other, "O9999", 11, " " + bad_args["order_id"]]
        )
    menu = [
        (step["tool"], (), dict(step["args"])),
        (step["tool"], (), bad_args),
        ("search_customers", (), {"query": customer["name"].split(" ")[rng.randrange(2)]}),
        (
            "search_customers",
            (),
            {
                "query": rng.choice(["a", "e", "@example.com", "+880"]),
                "offset": rng.choice([0, 5, "5", 10, -1, "x"]),
            },
        ),
        ("search_customers", (), {"query": rng.choice(["", 7, 7.0, "zzzz"])}),
        ("get_customer", (), {"customer_id": rng.choice([cid, "C0001", "C9999", 3])}),
        ("list_orders", (), {"customer_id": cid, "offset": rng.choice([0, 0, 5, "0", True])}),
        ("list_orders", (), {"customer_id": rng.choice(["C0002", "nobody"])}),
        ("get_order", (), {"order_id": rng.choice([oid, other, "O0000", None])}),
        ("check_inventory", (), {"sku": rng.choice([sku, "SKU-9999", sku.lower()])}),
        ("reserve_stock", (), {"sku": sku, "quantity": rng.randint(1, 3), "order_id": oid}),
        (
            "issue_refund",
            (),
            {"order_id": oid, "amount_cents": rng.choice([100, 5000, "300"]), "reason": "r"},
        ),
        ("cancel_order", (), {"order_id": rng.choice([oid, other]), "reason": rng.choice(["why", ""])}),
        ("schedule_shipment", (), {"order_id": oid, "carrier": "express", "day": rng.randint(99, 108)}),
        (
            "update_shipping_address",
            (),
            {
                "order_id": other,
                "street": "1 A Road",
                "city": "Khulna",
                "postal_code": rng.choice(["1234", 1234]),
            },
        ),
        (
            "create_ticket",
            (),
            {
                "customer_id": cid,
                "order_id": rng.choice(["", oid, other, "  "]),
                "category": rng.choice(["billing", "other", "x"]),
                "priority": rng.choice(["low", "HIGH", "urgent"]),
                "summary": "s",
            },
        ),
        ("wait", (), {"seconds": rng.choice([1, 15, 45, 0, 601, "30", 2.0])}),
        ("get_order", (oid,), {}),
        ("get_order", (), {"id": oid}),
        ("cancel_order", (), {"order_id": oid}),
        ("drop_tables", (), {}),
        ("finish", (), {"summary": rng.choice(["done", "", 5])}),
    ]
    return menu


def _session_fuzz(t: _Transcript, task: dict[str, Any], rng: random.Random) -> None:
    world = t.session.world
    if rng.random() < 0.7:
        _lookups(t, task)
    plan = list(task["oracle_plan"])
    n = rng.randint(3, 26)
    for _ in range(n):
        if plan and rng.random() < 0.45:
            step = plan.pop(0) if rng.random() < 0.8 else plan[0]
            t.call(step["tool"], **step["args"])
            continue
        menu = _fuzz_calls(task, world, rng)
        tool, args, kwargs = menu[rng.randrange(len(menu))]
        t.call(tool, *args, **kwargs)
    if rng.random() < 0.8:
        t.call("finish", summary="done")
        t.call("get_order", order_id="O0001")  # after the end


_SESSION_AGENTS = {
    "session_naive": _session_naive,
    "session_recovering": _session_recovering,
    "session_fuzz": _session_fuzz,
}


def episode_lines(
    task: dict[str, Any], cond: str, config: NoiseConfig, mode: str, agent: str, k: int
) -> Iterator[str]:
    """The serialised outputs of one episode."""
    cfg = config.with_mode(mode) if mode != config.mode and not config.is_clean else config
    seed = eval_schedule_seed(task["task_id"], k)
    resolved = independent_seed(seed, k % 3, k, "eval") if mode == "independent" else None
    if agent.startswith("scripted_"):
        out = run_scripted(
            task, cfg, resolved if resolved is not None else seed, agent.split("_", 1)[1], keep_log=True
        )
        yield jsonl_line(out)
        return
    session = EpisodeSession()
    budget = 5 if k == 2 else None  # schedule 2 runs on a tight budget (BUDGET_EXCEEDED paths)
    session.reset(
        task=task,
        schedule_seed=seed,
        noise=cfg,
        budget=budget,
        resolved_seed=resolved,
        slot=k % 3,
        phase="eval",
        condition=cond,
    )
    t = _Transcript(session)
    rng = random.Random(f"{task['task_id']}|{cond}|{mode}|{agent}|{k}")
    _SESSION_AGENTS[agent](t, task, rng)
    record = session.finish_and_grade()
    yield jsonl_line({"responses": t.responses})
    yield jsonl_line(record)
    if agent == "session_fuzz":
        world = session.world
        yield jsonl_line(
            {
                "fingerprint": world.fingerprint(),
                "version": world.version,
                "stale": world.state_at(world.version - 1).fingerprint(),
                "reward": session.reward,
            }
        )


def scenario_lines(
    pools: dict[str, list[dict]],
    cond: str,
    mode: str,
    agent: str,
    n_tasks: int | None,
    indices: tuple[int, ...],
) -> Iterator[str]:
    config = conditions()[cond]
    for pool in POOLS:
        tasks = pools[pool] if n_tasks is None else pools[pool][:n_tasks]
        for task in tasks:
            for k in indices:
                yield from episode_lines(task, cond, config, mode, agent, k)


def scenario_name(cond: str, mode: str, agent: str) -> str:
    return f"{cond}/{mode}/{agent}"


def digests(
    pools: dict[str, list[dict]],
    n_tasks: int | None = COMPACT_TASKS,
    indices: tuple[int, ...] = COMPACT_INDICES,
) -> dict[str, str]:
    """SHA-256 of every scenario's serialised lines."""
    out = {}
    for cond, mode, agent in scenarios():
        h = hashlib.sha256()
        for line in scenario_lines(pools, cond, mode, agent, n_tasks, indices):
            h.update(line.encode("utf-8"))
        out[scenario_name(cond, mode, agent)] = h.hexdigest()
    return out


def _dump(folder: Path, pools: dict[str, list[dict]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for cond, mode, agent in scenarios():
        path = folder / (scenario_name(cond, mode, agent).replace("/", "__") + ".jsonl")
        with path.open("w", encoding="utf-8") as handle:
            for line in scenario_lines(pools, cond, mode, agent, None, (1, 2, 3, 4)):
                handle.write(line)


def _compare(folder: Path, pools: dict[str, list[dict]]) -> int:
    bad = 0
    for cond, mode, agent in scenarios():
        path = folder / (scenario_name(cond, mode, agent).replace("/", "__") + ".jsonl")
        want = path.read_text(encoding="utf-8").splitlines(keepends=True)
        got = list(scenario_lines(pools, cond, mode, agent, None, (1, 2, 3, 4)))
        if got != want:
            bad += 1
            first = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            print(f"DIFFERS {path.name}: line {first + 1} of {len(want)}")
    print(f"{len(scenarios()) - bad}/{len(scenarios())} scenarios identical")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    pools = load_pools(REPO_ROOT / "data" / "tasks")
    if argv[:1] == ["dump"]:
        _dump(Path(argv[1]), pools)
        return 0
    if argv[:1] == ["compare"]:
        return _compare(Path(argv[1]), pools)
    if argv[:1] == ["digest"]:
        print(
            json.dumps(
                {
                    "tasks_per_pool": COMPACT_TASKS,
                    "indices": list(COMPACT_INDICES),
                    "digests": digests(pools),
                },
                indent=2,
                sort_keys=True,
            )
        )
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
