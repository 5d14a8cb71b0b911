"""Task pools (docs/simulator.md#tasks, #check-numbers): hashes, count tables, records, budgets, loading and refusing bad pools."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from paired_rollouts.backoffice import tasks as tasks_mod
from paired_rollouts.backoffice.grader import grade, replay_plan
from paired_rollouts.backoffice.tasks import (
    budget_for,
    generate_tasks,
    load_pool,
    write_pools,
)
from paired_rollouts.cli import main as cli_main
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file

PAPER_SHA256 = {
    "train": "2bbec1c596afc8495933a59a35cc69fec0b75c22caa7ab42759f4f7a296828ae",
    "validation": "9cceb1013563ebe47c6bde1f510ae12784724884aa10e47080800a89590121c7",
    "diagnostic": "43f82bdf1c6e5fc74beb3c05c8ac0ebb21fc60ee34787fd109ad64400430ef78",
    "test": "ce49f8bf9fe0ad8679106f92ce33ff7f0fa2b1c9ebc609b41754f2d727e7bb10",
}
REQUESTS = {
    "train": {1: 395, 2: 763, 3: 842},
    "validation": {1: 48, 2: 137, 3: 115},
    "test": {1: 53, 2: 135, 3: 112},
    "diagnostic": {1: 1, 2: 8, 3: 7},
}
WRITES = {
    "train": {1: 318, 2: 569, 3: 609, 4: 308, 5: 111, 6: 69, 7: 15, 8: 1},
    "validation": {1: 37, 2: 99, 3: 95, 4: 37, 5: 20, 6: 8, 7: 4},
    "test": {1: 40, 2: 105, 3: 91, 4: 36, 5: 15, 6: 11, 7: 2},
    "diagnostic": {2: 8, 3: 6, 4: 2},
}
TEMPLATES = {  # template: (train, validation, test)
    "address_change": (1030, 143, 160),
    "cancel_paid_refund": (480, 60, 61),
    "cancel_pending": (468, 75, 63),
    "open_ticket": (846, 135, 131),
    "open_ticket_no_order": (434, 63, 50),
    "partial_refund_delivered": (558, 93, 93),
    "reserve_and_ship": (332, 59, 49),
    "ship_reserved": (299, 39, 52),
}


def test_pool_hashes_equal_the_paper(sim_tasks_dir: Path) -> None:
    for name, digest in PAPER_SHA256.items():
        assert sha256_file(sim_tasks_dir / f"{name}.jsonl") == digest, name
    manifest = json.loads((sim_tasks_dir / "MANIFEST.json").read_text())
    assert manifest["generator_seed"] == 20260904
    assert {n: (e["count"], e["sha256"]) for n, e in manifest["pools"].items()} == {
        n: ({"train": 2000, "validation": 300, "test": 300, "diagnostic": 16}[n], d)
        for n, d in PAPER_SHA256.items()
    }
    assert tasks_mod.PAPER_POOL_SHA256 == PAPER_SHA256


def test_count_tables(sim_pools: dict) -> None:
    for name, pool in sim_pools.items():
        assert dict(Counter(len(t["templates"]) for t in pool)) == REQUESTS[name], name
        assert dict(Counter(t["n_subgoals"] for t in pool)) == WRITES[name], name
    for column, name in enumerate(("train", "validation", "test")):
        counts = Counter(tpl for t in sim_pools[name] for tpl in t["templates"])
        assert dict(counts) == {tpl: row[column] for tpl, row in TEMPLATES.items()}, name


def test_record_shape_and_ids(sim_pools: dict) -> None:
    first = sim_pools["test"][0]
    assert first["task_id"] == "test-00000" and first["split"] == "test"
    assert (first["customer_id"], first["world_seed"], first["reference"]) == ("C0017", 126704, "id")
    assert first["templates"] == ["cancel_pending", "address_change", "ship_reserved"]
    assert first["order_ids"] == ["O0009", "O0011", "O0038"] and first["n_subgoals"] == 3
    assert first["oracle_plan"] == [
        {"tool": "cancel_order", "args": {"order_id": "O0011", "reason": "customer request"}},
        {
            "tool": "update_shipping_address",
            "args": {
                "order_id": "O0038",
                "street": "102 Market Street",
                "city": "Dhaka",
                "postal_code": "2748",
            },
        },
        {"tool": "schedule_shipment", "args": {"order_id": "O0009", "carrier": "standard", "day": 107}},
    ]
    assert first["instruction"].startswith("Today is day 100. Customer ")
    assert first["instruction"].endswith(
        " Use the tools to look up what you need and make exactly these changes, then call finish."
    )
    assert sim_pools["validation"][0]["task_id"] == "heldout-00000"
    assert {t["split"] for t in sim_pools["validation"]} == {"heldout"}
    seeds = [t["world_seed"] for p in sim_pools.values() for t in p]
    assert len(seeds) == len(set(seeds))  # every task has its own world
    assert all(
        100000 <= t["world_seed"] < 200000 for n in ("validation", "test", "diagnostic") for t in sim_pools[n]
    )
    assert all(0 <= t["world_seed"] < 100000 for t in sim_pools["train"])


def test_generation_is_reproducible(sim_pools: dict) -> None:
    fresh = generate_tasks(3, "heldout")
    for new, frozen in zip(fresh, sim_pools["validation"][:3], strict=True):
        assert {**new, "task_id": frozen["task_id"]} == frozen


def test_oracle_plans_replay_and_grade(sim_pools: dict) -> None:
    for task in sim_pools["test"][:100] + sim_pools["diagnostic"]:
        world = replay_plan(task["world_seed"], task["oracle_plan"])
        result = grade(task, world)
        assert result.success and result.diffs == []


def test_budgets(sim_pools: dict) -> None:
    assert budget_for({"n_subgoals": 1}) == 9 and budget_for({"n_subgoals": 3}) == 13
    assert budget_for({"n_subgoals": 7}) == 21 and budget_for({"n_subgoals": 8}) == 21
    budgets = [budget_for(t) for p in sim_pools.values() for t in p]
    assert min(budgets) >= 9 and max(budgets) <= 21
    assert dict(Counter(budget_for(t) for t in sim_pools["test"])) == {
        9: 40,
        11: 105,
        13: 91,
        15: 36,
        17: 15,
        19: 11,
        21: 2,
    }


def _copy_pools(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("MANIFEST.json", "validation.jsonl", "diagnostic.jsonl"):
        shutil.copy(src / name, dst / name)
    return dst


def test_load_pool_refuses_a_modified_pool(sim_tasks_dir: Path, tmp_path: Path) -> None:
    folder = _copy_pools(sim_tasks_dir, tmp_path / "pools")
    assert len(load_pool(folder / "diagnostic.jsonl")) == 16
    path = folder / "diagnostic.jsonl"
    path.write_bytes(path.read_bytes().replace(b"Today is day 100.", b"Today is day 101.", 1))
    with pytest.raises(UserError) as info:
        load_pool(path)
    message = str(info.value)
    assert str(path) in message and "MANIFEST.json" in message and "paired-rollouts tasks" in message
    assert len(load_pool(path, manifest=False)) == 16  # explicit opt-out for custom pools


def test_load_pool_rejects_malformed_lines(tmp_path: Path, sim_pools: dict) -> None:
    good = [json.dumps(t, sort_keys=True) for t in sim_pools["diagnostic"][:3]]
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text("\n".join([good[0], good[1], "{not json", good[2]]) + "\n")
    with pytest.raises(UserError, match=r"bad\.jsonl:3: not valid JSON"):
        load_pool(bad_json, manifest=False)
    missing = dict(sim_pools["diagnostic"][0])
    del missing["oracle_plan"]
    bad_field = tmp_path / "field.jsonl"
    bad_field.write_text(good[0] + "\n" + json.dumps(missing) + "\n")
    with pytest.raises(UserError, match=r"field\.jsonl:2: task is missing the field 'oracle_plan'"):
        load_pool(bad_field, manifest=False)
    wrong_type = dict(sim_pools["diagnostic"][0], world_seed="126704")
    bad_type = tmp_path / "type.jsonl"
    bad_type.write_text(json.dumps(wrong_type) + "\n")
    with pytest.raises(UserError, match=r"type\.jsonl:1: field 'world_seed'"):
        load_pool(bad_type, manifest=False)
    with pytest.raises(UserError, match="not found"):
        load_pool(tmp_path / "nope.jsonl")
    with pytest.raises(UserError, match="MANIFEST"):
        load_pool(bad_json)  # no manifest next to it


def test_write_pools_refuses_when_hashes_differ(
    monkeypatch: pytest.MonkeyPatch, sim_pools: dict, tmp_path: Path
) -> None:
    tampered = {name: [dict(t) for t in pool] for name, pool in sim_pools.items()}
    tampered["test"][5]["instruction"] += " Please hurry."
    from paired_rollouts.backoffice import pools

    monkeypatch.setattr(pools, "build_pools", lambda seed, progress=False: tampered)
    out = tmp_path / "out"
    with pytest.raises(UserError, match="test .*nothing was written"):
        write_pools(out)
    assert not out.exists() or not any(out.iterdir())
    assert cli_main(["tasks", "--out", str(out)]) == 1
    assert not out.exists() or not any(out.iterdir())
    # with --no-check the (non-paper) pools are written, and they are internally consistent
    write_pools(out, check=False)
    assert len(load_pool(out / "test.jsonl")) == 300


def test_verify_cli(sim_tasks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["tasks", "--verify", "--out", str(sim_tasks_dir)]) == 0
    assert "validation: 9cceb101" in capsys.readouterr().out
    assert cli_main(["tasks", "--verify", "--out", str(tmp_path)]) == 1


def test_verify_reads_the_manifest_too(
    sim_tasks_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A pool edited together with a re-hashed MANIFEST (what --no-check writes) is not the paper's;
    and `tasks --verify` used to ignore MANIFEST.json altogether."""
    import hashlib
    import shutil

    from paired_rollouts.backoffice.tasks import paper_pools

    copy = tmp_path / "tasks"
    shutil.copytree(sim_tasks_dir, copy)
    manifest = json.loads((copy / "MANIFEST.json").read_text())
    assert paper_pools(manifest)
    manifest["pools"]["test"]["sha256"] = "0" * 64
    (copy / "MANIFEST.json").write_text(json.dumps(manifest))
    assert cli_main(["tasks", "--verify", "--out", str(copy)]) == 1
    assert "MANIFEST.json: pools.test.sha256" in capsys.readouterr().err
    # edit a pool and re-hash the manifest consistently: load_pool accepts it, the paper check does not
    pool = copy / "test.jsonl"
    data = pool.read_bytes()
    edited = data.replace(b'"instruction": "', b'"instruction": "Now: ', 1)
    assert edited != data
    pool.write_bytes(edited)
    manifest["pools"]["test"]["sha256"] = hashlib.sha256(pool.read_bytes()).hexdigest()
    assert not paper_pools(manifest)


def test_non_utf8_pool_is_refused(sim_tasks_dir: Path, tmp_path: Path) -> None:
    import hashlib

    data = (sim_tasks_dir / "diagnostic.jsonl").read_bytes()
    lines = data.split(b"\n")
    lines[2] = (
        lines[2].replace(b"Please", b"Pl\xe9ase", 1) if b"Please" in lines[2] else lines[2][:-2] + b'\xff"}'
    )
    bad = b"\n".join(lines)
    path = tmp_path / "diagnostic.jsonl"
    path.write_bytes(bad)
    manifest = {"pools": {"diagnostic": {"sha256": hashlib.sha256(bad).hexdigest()}}}
    with pytest.raises(UserError, match=r"diagnostic\.jsonl:3: not UTF-8"):
        load_pool(path, manifest)


def test_tasks_out_at_a_file_fails_before_work(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import time

    target = tmp_path / "file.txt"
    target.write_text("x")
    start = time.monotonic()
    assert cli_main(["tasks", "--out", str(target)]) == 1
    assert time.monotonic() - start < 2 and "is a file" in capsys.readouterr().err
