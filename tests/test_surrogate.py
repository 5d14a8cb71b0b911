"""The surrogate policy: exact score, reproducible calibration, paired seeds, learning."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts.backoffice.tasks import load_pool
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.errors import UserError
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import eval_schedule_seed
from paired_rollouts.surrogate import calibration as cal
from paired_rollouts.surrogate.menu import play
from paired_rollouts.surrogate.policy import P, Policy, log_probability, score

TASKS = Path(__file__).resolve().parents[1] / "data/tasks"


@pytest.fixture(scope="module")
def validation() -> list[dict]:
    return load_pool(TASKS / "validation.jsonl")


def _episodes(theta: list[float], tasks: list[dict], noise: NoiseConfig, n: int = 40) -> list[list]:
    session, policy, out = EpisodeSession(), Policy(theta), []
    rng = random.Random(7)
    for j in range(n):
        task = tasks[j % len(tasks)]
        session.reset(task, schedule_seed=eval_schedule_seed(task["task_id"], 1 + j % 2), noise=noise)
        out.append(play(session, task, policy, rng))
        session.finish_and_grade()
    return out


def test_analytic_score_equals_finite_difference_gradient(validation: list[dict]) -> None:
    rng = np.random.default_rng(3)
    theta = (np.asarray(cal.theta_from_knobs(cal.START)) + rng.normal(0, 0.5, P)).tolist()
    episodes = _episodes(theta, validation[:20], NoiseConfig.transition(0.25))
    assert sum(len(d) for d in episodes) > 100
    h = 1e-6
    for decisions in episodes[:12]:
        analytic = score(theta, decisions)
        numeric = np.zeros(P)
        for k in range(P):
            up, down = list(theta), list(theta)
            up[k] += h
            down[k] -= h
            numeric[k] = (log_probability(up, decisions) - log_probability(down, decisions)) / (2 * h)
        np.testing.assert_allclose(analytic, numeric, atol=1e-6, rtol=1e-6)
    # and the score is not trivially zero: the test can fail
    assert max(np.abs(score(theta, d)).max() for d in episodes) > 0.1


def test_score_matches_autograd(validation: list[dict]) -> None:
    torch = pytest.importorskip("torch")
    from paired_rollouts.surrogate.policy import PARAM_INDEX

    theta = cal.theta_from_knobs(cal.START)
    decisions = [d for ep in _episodes(theta, validation[:10], NoiseConfig.transition(0.25), 10) for d in ep]
    t = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    total = torch.zeros((), dtype=torch.float64)
    for ctx, avail, chosen in decisions:
        logits = torch.stack(
            [
                t[PARAM_INDEX[ctx][j]] if PARAM_INDEX[ctx][j] >= 0 else torch.zeros((), dtype=torch.float64)
                for j in avail
            ]
        )
        total = total + torch.log_softmax(logits, 0)[avail.index(chosen)]
    total.backward()
    np.testing.assert_allclose(score(theta, decisions), t.grad.numpy(), atol=1e-10)
    assert math.isclose(float(total), log_probability(theta, decisions), rel_tol=1e-12)


def _small_estimator() -> cal.Estimator:
    return cal.Estimator(
        str(TASKS),
        eval_tasks=12,
        samples=2,
        diag_pool="diagnostic",
        diag_tasks=3,
        diag_schedules=4,
        diag_samples=4,
    )


def test_calibration_is_reproducible_to_the_last_digit() -> None:
    first = json.dumps(cal.calibrate(_small_estimator(), iterations=2), sort_keys=True)
    second = json.dumps(cal.calibrate(_small_estimator(), iterations=2), sort_keys=True)
    assert first == second
    register = json.loads(first)
    assert {r["target_name"] for r in register["targets"]} == set(cal.TARGETS)
    assert all({"target", "achieved", "tolerance", "passes"} <= set(r) for r in register["targets"])


def test_a_missed_calibration_target_fails_loudly() -> None:
    register = {
        "targets": [
            {
                "target_name": "c2_noisy_validation",
                "target": 0.53,
                "tolerance": 0.02,
                "achieved": 0.61,
                "passes": False,
            }
        ],
        "passes": False,
    }
    with pytest.raises(UserError, match="c2_noisy_validation achieved 0.61"):
        cal.check_register(register, "calibration.json")


def _rows(arm: str, steps: int = 2, prompts: int = 4) -> list[dict]:
    from paired_rollouts.training.rows import build_rows

    train = load_pool(TASKS / "train.jsonl")
    return build_rows(train, "C2", arm, 0, steps, prompts)


def test_paired_groups_share_one_resolved_seed_and_independent_rollouts_do_not() -> None:
    from paired_rollouts.surrogate.rollout import SurrogateRunner
    from paired_rollouts.surrogate.trainer import train_step

    tasks = {t["task_id"]: t for t in load_pool(TASKS / "train.jsonl")}
    theta = cal.theta_from_knobs(cal.START)
    for arm in ("paired", "independent"):
        rows = _rows(arm)
        _, groups, records = train_step(SurrogateRunner(theta, tasks), rows[:4], step=0, G=8, arm=arm, seed=0)
        for row, group, recs in zip(rows[:4], groups, records, strict=True):
            resolved = {r["resolved_seed"] for r in recs}
            if arm == "paired":
                assert resolved == {row["schedule_seed"]} and set(group["schedule_seeds"]) == resolved
            else:
                assert len(resolved) == 8 and row["schedule_seed"] not in resolved
                assert group["schedule_seeds"] == [r["resolved_seed"] for r in recs]


def _played_with(tree: object) -> tuple[list, int]:
    """A paired training step and two evaluation passes (clean and noisy schedules, each row three times);
    the outputs, and how many episodes the session repeated instead of playing."""
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.rollout import SurrogateRunner
    from paired_rollouts.surrogate.trainer import train_step

    tasks = {t["task_id"]: t for name in ("train", "validation") for t in load_pool(TASKS / f"{name}.jsonl")}
    settings = Settings.from_manifest({"eval_tasks": 6, "task_filter": "all"})
    rows = [
        r
        for regime in ("clean", "at_training")
        for r in evaluation_rows(str(TASKS), "periodic", regime, "C2", settings)
    ]
    runner = SurrogateRunner(cal.theta_from_knobs(cal.START), tasks, tree)  # type: ignore[arg-type]
    repeated = []
    repeat = runner.session.repeat
    runner.session.repeat = lambda *a, **k: repeated.append(1) or repeat(*a, **k)  # type: ignore[method-assign]
    grad, groups, records = train_step(runner, _rows("paired")[:4], step=0, G=8, arm="paired", seed=0)
    evaluated = [runner.rollout(rows * 3, "periodic:step0", seed) for seed in (5, 6)]
    return [grad.tolist(), groups, records, evaluated, runner.session.episode_index], len(repeated)


def test_shared_schedules_repeat_known_episodes_to_the_byte(validation: list[dict]) -> None:
    """Rollouts that share a schedule walk the trajectory tree (surrogate/rollout.py): episodes it knows are
    not played again (``EpisodeSession.repeat``), and every record, decision list, group and gradient
    equals what playing every episode gives (paired training groups; evaluation schedules, the clean
    ones shared across schedule seeds)."""
    from paired_rollouts.surrogate.rollout import Trajectories

    plain, none_repeated = _played_with(None)
    shared, repeated = _played_with(Trajectories())
    assert shared == plain and none_repeated == 0 and repeated > 20
    session = EpisodeSession()
    session.reset(validation[0], schedule_seed=1, noise=NoiseConfig.transition(0.25))
    record = session.finish_and_grade()
    assert set(record) - set(EpisodeSession.course_of(record)) == set(session._meta)  # course = all but meta


def test_a_trained_policy_beats_its_initial_one_on_the_challenge_set(validation: list[dict]) -> None:
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.rollout import SurrogateRunner
    from paired_rollouts.surrogate.trainer import Adam, train_step

    tasks = {t["task_id"]: t for name in ("train", "validation") for t in load_pool(TASKS / f"{name}.jsonl")}
    theta0 = np.asarray(cal.theta_from_knobs(cal.START))
    rows = _rows("paired", steps=40, prompts=8)
    theta, adam = theta0.copy(), Adam(lr=0.05)
    for step in range(40):
        grad, _, _ = train_step(
            SurrogateRunner(theta.tolist(), tasks),
            rows[step * 8 : (step + 1) * 8],
            step=step,
            G=8,
            arm="paired",
            seed=0,
        )
        theta = adam.step(theta, grad)
    settings = Settings.from_manifest({"eval_tasks": 32, "task_filter": "all"})
    challenge = evaluation_rows(str(TASKS), "periodic", "challenge", "C2", settings)

    def success(vector: np.ndarray) -> float:
        records, _ = SurrogateRunner(vector.tolist(), tasks).rollout(challenge * 4, "periodic:test", 11)
        return float(np.mean([r["true_success"] for r in records]))

    before, after = success(theta0), success(theta)
    assert after > before + 0.1, (before, after)


def test_power_and_calibration_tables_show_their_registers_numbers() -> None:
    from paired_rollouts.render import tables

    fixtures = Path(__file__).parent / "fixtures/render/results"
    power = json.loads((fixtures / "decisions/power.json").read_text())
    text = tables.render_table(13, {"power": [fixtures / "decisions/power.json"]}, "tiny surrogate")
    for name, row in power["hypotheses"].items():
        assert name in text
        assert f"{row['power']['3']:.3f}" in text
    calibration = json.loads((fixtures / "models/surrogate/calibration.json").read_text())
    text = tables.render_table(14, {"calibration": [fixtures / "models/surrogate/calibration.json"]}, "x")
    for row in calibration["targets"]:
        assert f"{row['achieved']:.3f}" in text


def test_the_arm_job_reads_its_calibration_through_the_typed_reader(tmp_path) -> None:
    """A full passing register gives its theta; the two-key shape the surrogate benchmark once wrote, and a
    register that missed a target, are refused with one line naming the file."""
    from paired_rollouts.surrogate.run import load_calibration

    fixture = Path(__file__).parent / "fixtures/render/results/models/surrogate/calibration.json"
    register = json.loads(fixture.read_text())
    assert load_calibration(fixture) == register["theta"]
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"passes": True, "theta": register["theta"]}))
    with pytest.raises(UserError) as info:
        load_calibration(short)
    assert str(info.value).startswith(f"{short}: missing key 'knobs'") and "\n" not in str(info.value)
    missed = tmp_path / "missed.json"
    missed.write_text(json.dumps({**register, "passes": False}))
    with pytest.raises(UserError, match=r"missed\.json: the calibration missed a target"):
        load_calibration(missed)


def test_a_surrogate_checkpoint_is_read_through_its_typed_reader(tmp_path) -> None:
    """The probe reads the arm job's checkpoints through records.read_surrogate_checkpoint: the written
    theta comes back; an edited theta.json, or one of another shape, is one line naming the file."""
    from paired_rollouts.surrogate.run import read_checkpoint, write_checkpoint

    theta = np.asarray(cal.theta_from_knobs(cal.START))
    write_checkpoint(tmp_path, 20, theta, {"t": 20, "m": [0.0], "v": [0.0]})
    assert read_checkpoint(tmp_path, 20) == theta.tolist()
    path = tmp_path / "checkpoints/step0020/theta.json"
    body = json.loads(path.read_text())
    path.write_text(json.dumps({**body, "theta": body["theta"][:-1]}))
    with pytest.raises(UserError, match=r"step0020/theta\.json: does not match its COMPLETE marker"):
        read_checkpoint(tmp_path, 20)
    marker = tmp_path / "checkpoints/step0020/COMPLETE"
    from paired_rollouts.io import sha256_file

    marker.write_text(json.dumps({"step": 20, "files": {"theta.json": sha256_file(path)}}))
    with pytest.raises(UserError) as info:
        read_checkpoint(tmp_path, 20)
    assert str(info.value).startswith(f"{path}: step 20 with {len(theta) - 1} values for {len(theta)} par")
    body["theta"][0] = "0.5"
    path.write_text(json.dumps(body))
    marker.write_text(json.dumps({"step": 20, "files": {"theta.json": sha256_file(path)}}))
    with pytest.raises(UserError, match=r"theta\.json: surrogate checkpoint key 'theta' is \['0\.5'"):
        read_checkpoint(tmp_path, 20)
