"""The simulator's outputs are frozen: speed work must leave every draw, response and record unchanged.

Recomputes a compact but covering set of episodes (the first tasks of validation and test, schedules 1-2,
every noise regime in paired and independent mode, scripted and session-driven agents including a fuzzing
one, a tight budget on schedule 2) and compares each scenario's SHA-256 with the digests committed in
``tests/fixtures/simulator_golden.json``, which were taken before any optimisation. The full set (all
600 tasks, schedules 1-4) is checked with ``python tests/simulator_golden_cases.py compare DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

import simulator_golden_cases as cases

FIXTURE = Path(__file__).parent / "fixtures" / "simulator_golden.json"


def test_fixture_covers_every_scenario() -> None:
    frozen = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert frozen["tasks_per_pool"] == cases.COMPACT_TASKS
    assert tuple(frozen["indices"]) == cases.COMPACT_INDICES
    assert sorted(frozen["digests"]) == sorted(cases.scenario_name(*s) for s in cases.scenarios())


def test_episodes_match_the_golden_digests(sim_tasks_dir: Path) -> None:
    frozen = json.loads(FIXTURE.read_text(encoding="utf-8"))["digests"]
    got = cases.digests(cases.load_pools(sim_tasks_dir))
    changed = sorted(name for name in frozen if got.get(name) != frozen[name])
    assert not changed, f"{len(changed)} scenario(s) changed: {changed[:8]}"
