"""The surrogate policy: exact score, reproducible calibration, paired seeds, learning."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts.backoffice.tasks import load_pool
from paired_rollouts.episode import EpisodeSession
from paired_rollouts.errors import UserError
from paired_rollouts.noise.config import NoiseConfig
from paired_rollouts.noise.seeds import eval_schedule_seed
from paired_rollouts.settings import Settings
from paired_rollouts.surrogate import calibration as cal
from paired_rollouts.surrogate.menu import play
from paired_rollouts.surrogate.policy import PLAIN, P, Policy, Shape, log_probability, score

SHAPE = Shape(1.2, 4, 12)  # a small phrasing: the tests' rollouts are few

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


def _small_estimator(shape: Shape = PLAIN, **keywords) -> cal.Estimator:
    return cal.Estimator(
        str(TASKS),
        eval_tasks=12,
        samples=2,
        diag_pool="diagnostic",
        diag_tasks=3,
        diag_schedules=4,
        diag_samples=4,
        shape=shape,
        **keywords,
    )


def test_calibration_is_reproducible_to_the_last_digit() -> None:
    first = json.dumps(cal.calibrate(_small_estimator(SHAPE), iterations=2), sort_keys=True)
    second = json.dumps(cal.calibrate(_small_estimator(SHAPE), iterations=2), sort_keys=True)
    assert first == second
    fit = json.loads(first)
    assert set(fit["knobs"]) == set(cal.KNOBS) and len(fit["theta"]) == P
    assert fit["iterations"] and all(len(it["residual"]) == len(cal.FITTED) for it in fit["iterations"])


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
        runner = SurrogateRunner(theta, tasks, SHAPE)
        _, groups, records = train_step(runner, rows[:4], step=0, G=8, arm=arm, seed=0)
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
    runner = SurrogateRunner(cal.theta_from_knobs(cal.START), tasks, SHAPE, tree)  # type: ignore[arg-type]
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


def test_lean_training_rollouts_give_the_full_records_outcome_to_the_byte() -> None:
    """A trainer that writes no training episode record grades leanly (``EpisodeSession.finish_outcome``,
    docs/simulator.md#speed, fifth pass): the same gradient, groups and outcome fields as the full records,
    in both arms (a paired step through its trajectory tree), and only the account fields left out."""
    from paired_rollouts.surrogate.rollout import SurrogateRunner, Trajectories
    from paired_rollouts.surrogate.trainer import train_step

    tasks = {t["task_id"]: t for t in load_pool(TASKS / "train.jsonl")}
    theta = cal.theta_from_knobs(cal.START)
    account = {"faults", "changed_from_initial", "diffs", "tool_sequence", "failed_calls", "noise"}
    outcomes = []
    for arm in ("paired", "independent"):
        rows = _rows(arm, steps=1, prompts=8)
        played = {}
        for lean in (False, True):
            runner = SurrogateRunner(theta, tasks, SHAPE, Trajectories(), lean=lean)
            played[lean] = train_step(runner, rows, step=0, G=8, arm=arm, seed=0)
        (grad, groups, full), (lean_grad, lean_groups, lean) = played[False], played[True]
        assert lean_grad.tolist() == grad.tolist() and lean_groups == groups
        for full_recs, lean_recs in zip(full, lean, strict=True):
            for record, outcome in zip(full_recs, lean_recs, strict=True):
                assert set(record) - set(outcome) == account
                assert json.dumps(outcome) == json.dumps({k: record[k] for k in outcome})
                outcomes.append((record["true_success"], record["flipped"], record["exposed"]))
    # the comparison covers successes, failures and exposed episodes
    assert {success for success, _, _ in outcomes} == {True, False}
    assert any(exposed for _, _, exposed in outcomes)


def test_a_trained_policy_beats_its_initial_one_on_the_challenge_set(validation: list[dict]) -> None:
    """The Trainer (Adam on the mixed coordinates, phrasing noise, task difficulty) still learns."""
    from paired_rollouts.evaluation.evaluate import evaluation_rows
    from paired_rollouts.settings import Settings
    from paired_rollouts.surrogate.rollout import SurrogateRunner, full_vector
    from paired_rollouts.surrogate.trainer import Trainer

    tasks = {t["task_id"]: t for name in ("train", "validation") for t in load_pool(TASKS / f"{name}.jsonl")}
    theta0 = np.asarray(full_vector(cal.theta_from_knobs(cal.START)))
    rows = _rows("paired", steps=40, prompts=8)
    trainer = Trainer(theta0, tasks, SHAPE, lr=0.05)
    for step in range(40):
        trainer.step(rows[step * 8 : (step + 1) * 8], step=step, G=8, arm="paired", seed=0)
    assert np.abs(trainer.theta[P:]).max() > 0  # the phrasing parameters move too
    settings = Settings.from_manifest({"eval_tasks": 32, "task_filter": "all"})
    challenge = evaluation_rows(str(TASKS), "periodic", "challenge", "C2", settings)

    def success(vector: np.ndarray) -> float:
        records, _ = SurrogateRunner(vector.tolist(), tasks, SHAPE).rollout(
            challenge * 4, "periodic:test", 11
        )
        return float(np.mean([r["true_success"] for r in records]))

    before, after = success(theta0), success(trainer.theta)
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
    assert str(info.value).startswith(f"{short}: missing key 'stage'") and "\n" not in str(info.value)
    missed = tmp_path / "missed.json"
    row = next(r for r in register["targets"] if r["target_name"] == "c4_clean_validation")
    row.update(achieved=0.70, difference=0.70 - row["target"], passes=False)
    missed.write_text(json.dumps({**register, "passes": False}))  # a consistent register that missed
    with pytest.raises(UserError, match=r"missed\.json: the calibration missed a target"):
        load_calibration(missed)


def test_a_surrogate_checkpoint_is_read_through_its_typed_reader(tmp_path) -> None:
    """The probe reads the arm job's checkpoints through records.read_surrogate_checkpoint: the written
    theta comes back; an edited theta.json, or one of another shape, is one line naming the file."""
    from paired_rollouts.surrogate.rollout import full_vector
    from paired_rollouts.surrogate.run import read_checkpoint, write_checkpoint

    theta = np.asarray(full_vector(cal.theta_from_knobs(cal.START)))
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


# ---------------------------------------------------------------- what the 32 action parameters lacked


def test_phrasing_scores_are_exact_and_unbiased(validation: list[dict]) -> None:
    """counts - n * pi is the finite-difference gradient of the drawn tokens' log probability, and its mean
    over many draws is zero (the tokens never reach the environment: no bias)."""
    from paired_rollouts.surrogate.phrasing import VOCABULARY, Phrasing, phrasing_rng

    rng = np.random.default_rng(5)
    theta = rng.normal(0, 0.7, VOCABULARY)
    episodes = _episodes(cal.theta_from_knobs(cal.START), validation[:6], NoiseConfig.transition(0.25), 6)
    phrasing = Phrasing(theta, 3, 11)
    tokens = phrasing.draw(episodes, phrasing_rng("test", 1))
    assert [len(t) for t in tokens] == [phrasing.count(d) for d in episodes]
    assert any(phrasing.count(d) > 3 * len(d) for d in episodes)  # more tokens after an error
    analytic = phrasing.score(tokens)
    h = 1e-6
    for k in rng.choice(VOCABULARY, 12, replace=False):
        up, down = theta.copy(), theta.copy()
        up[k] += h
        down[k] -= h
        numeric = [
            (Phrasing(up, 3, 11).log_probability(t) - Phrasing(down, 3, 11).log_probability(t)) / (2 * h)
            for t in tokens
        ]
        np.testing.assert_allclose(analytic[:, k], numeric, atol=1e-5)
    draws = np.stack([phrasing.scores(episodes[:1], phrasing_rng("test", i))[0] for i in range(400)])
    n = phrasing.count(episodes[0])
    assert np.abs(draws.mean(axis=0)).max() < 4 * np.sqrt(n / 400)  # mean zero within sampling error
    assert np.abs(draws).max() >= 1.0  # and the test can fail: individual scores are not zero


@pytest.mark.parametrize("spread", [0.0, 0.7, 6.0, 40.0])
def test_the_bucketed_inverse_cdf_draws_the_tokens_searchsorted_draws(spread: float) -> None:
    """Phrasing.inverse_cdf is np.searchsorted(cdf, u, side="right") exactly: on many uniforms, on the cdf
    values themselves and their neighbours below (the bucket edges' worst cases), from a flat vocabulary
    to one where a few tokens hold nearly all the mass (most buckets then hold no cdf value or many)."""
    from paired_rollouts.surrogate.phrasing import BUCKETS, VOCABULARY, Phrasing

    rng = np.random.default_rng(11)
    phrasing = Phrasing(rng.normal(0, spread, VOCABULARY), 3, 11)
    cdf = phrasing.cdf[phrasing.cdf < 1.0]
    edges = np.arange(BUCKETS, dtype=np.float64) / BUCKETS
    u = np.concatenate(
        [
            rng.random(300_000),
            cdf,
            np.nextafter(cdf, 0.0),
            edges,
            np.nextafter(edges[1:], 0.0),
            [np.nextafter(1, 0)],
        ]
    )
    found = phrasing.inverse_cdf(u)
    expected = np.searchsorted(phrasing.cdf, u, side="right")
    assert found.dtype == expected.dtype and np.array_equal(found, expected)
    assert len(np.unique(expected)) > 1  # the draws span more than one token: the test can fail


def test_the_optimizer_basis_is_orthonormal_and_exactly_invertible() -> None:
    """Traces and Gram matrices (the probe) do not see the basis; Adam does: every coordinate mixes every
    parameter with the same weight."""
    from paired_rollouts.surrogate import basis
    from paired_rollouts.surrogate.phrasing import DIMENSION

    rng = np.random.default_rng(2)
    x = rng.normal(size=DIMENSION)
    assert np.array_equal(basis.to_parameters(basis.to_trained(x)), x) or np.allclose(
        basis.to_parameters(basis.to_trained(x)), x, rtol=0, atol=1e-13
    )
    columns = np.stack([basis.to_trained(e) for e in np.eye(DIMENSION)[:40]])
    np.testing.assert_allclose(columns @ columns.T, np.eye(40), atol=1e-14)
    assert np.all(np.abs(columns) == 1 / 32)
    scores = rng.normal(size=(8, DIMENSION))
    mixed = np.stack([basis.to_trained(v) for v in scores])
    np.testing.assert_allclose(mixed @ mixed.T, scores @ scores.T, rtol=1e-12)


def test_task_difficulty_shifts_the_mistakes_with_an_exact_score(validation) -> None:
    from paired_rollouts.surrogate.policy import DIFFICULTY_DIRECTION, PARAMETERS, task_effect, task_logits

    theta = cal.theta_from_knobs(cal.START)
    assert task_effect("heldout-00001") == task_effect("heldout-00001")
    effects = [task_effect(t["task_id"]) for t in validation[:64]]
    assert 0.6 < np.std(effects) < 1.4 and len(set(effects)) == 64
    shifted = task_logits(theta, "heldout-00001", 2.0)
    for (ctx, action), before, after, d in zip(PARAMETERS, theta, shifted, DIFFICULTY_DIRECTION, strict=True):
        assert d == (1 if action in ("wrong_argument", "skip_step", "finish_early") else 0), (ctx, action)
        assert after == pytest.approx(before + 2.0 * task_effect("heldout-00001") * d)
    # the score under a task's policy is the gradient of that task's log probability w.r.t. theta
    task = validation[3]
    offset = 1.5 * task_effect(task["task_id"])
    policy = Policy(task_logits(theta, task["task_id"], 1.5))
    session = EpisodeSession()
    session.reset(
        task, schedule_seed=eval_schedule_seed(task["task_id"], 1), noise=NoiseConfig.transition(0.25)
    )
    decisions = play(session, task, policy, random.Random(3))
    h = 1e-6
    for k in range(P):
        up, down = list(theta), list(theta)
        up[k] += h
        down[k] -= h
        shift = [offset * d for d in DIFFICULTY_DIRECTION]
        numeric = (
            log_probability([a + b for a, b in zip(up, shift, strict=True)], decisions)
            - log_probability([a + b for a, b in zip(down, shift, strict=True)], decisions)
        ) / (2 * h)
        assert score(theta, decisions, policy)[k] == pytest.approx(numeric, abs=1e-6)


# ---------------------------------------------------------------- the curves: never a paired one


def _curves_file(tmp_path: Path, paired: object) -> Path:
    import yaml

    data = yaml.safe_load((TASKS.parents[1] / "data/published/curves.yaml").read_text())
    for panel in data["panels"].values():
        if paired is None:
            del panel["paired"]
        else:
            panel["paired"] = paired
    out = tmp_path / f"curves-{len(list(tmp_path.iterdir()))}.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def test_the_fit_never_reads_a_paired_curve(tmp_path: Path) -> None:
    """The published targets are the same whatever the paired columns hold, or without them; a paired run
    (or any arm the paper did not run unpaired) is refused by the curve check and by the fit."""
    reference = cal.published_curves(TASKS.parents[1] / "data/published/curves.yaml")
    for paired in (None, [0, 0, 0, 0, 0, 0], "not a curve", [99.0] * 6):
        assert cal.published_curves(_curves_file(tmp_path, paired)) == reference
    assert set(reference) == set(cal.CURVES)
    assert reference["c2_noisy_validation"]["values"][0] == pytest.approx(0.521)
    assert reference["c0_clean_validation"]["values"][-1] == pytest.approx(0.895)
    for run in ("c2-paired-s0", "c4-paired-s3", "c2-blocking_paired-s0", "c4-independent-scale_none-s0"):
        assert not cal.is_curve_run(run)
        with pytest.raises(UserError, match="never a paired curve"):
            cal.curve_runs(["c2-independent-s0", run])
    with pytest.raises(UserError, match="c2-independent-s0 is given twice"):
        cal.curve_runs(["c2-independent-s0", "c2-independent-s1", "c2-independent-s0"])
    assert cal.curve_runs(["c0-clean-s1", "c2-independent-s0", "c4-independent-s2"]) == {
        ("C0", "clean"): ["c0-clean-s1"],
        ("C2", "independent"): ["c2-independent-s0"],
        ("C4", "independent"): ["c4-independent-s2"],
    }


def _eval_file(root: Path, run: str, step: int, regime: str, successes: list[int]) -> None:
    from paired_rollouts.design import parse_run
    from paired_rollouts.io import atomic_write_jsonl
    from paired_rollouts.layout import Layout

    ident = parse_run(run)
    records = [
        {
            "run": run,
            "condition": ident.condition,
            "arm": ident.arm,
            "seed": ident.seed,
            "phase": "periodic",
            "step": step,
            "regime": regime,
            "task_id": f"heldout-{i:05d}",
            "schedule_index": 1,
            "schedule_seed": 7,
            "true_success": bool(s),
            "observed_reward": float(s),
            "flipped": False,
            "exposed": False,
            "calls": 3,
            "budget": 12,
            "finished": True,
            "faults": {},
        }
        for i, s in enumerate(successes)
    ]
    atomic_write_jsonl(Layout(str(root)).eval_file(run, "periodic", step, regime), records)


def test_the_curves_register_equals_a_hand_computation_and_a_miss_is_one_line(tmp_path: Path, capsys) -> None:
    """Two runs per unpaired arm with known successes at every published step: the register's points,
    RMS gaps and verdicts are the hand-computed ones; the command exits with one line naming the file."""
    from paired_rollouts import cli, records
    from paired_rollouts.io import atomic_write_json, sha256_file

    published = TASKS.parents[1] / "data/published/curves.yaml"
    targets = cal.published_curves(published)
    runs = ["c0-clean-s0", "c0-clean-s1", "c2-independent-s0", "c2-independent-s1"]
    runs += ["c4-independent-s0", "c4-independent-s1"]
    # run s0 scores 3 of 4 tasks at every step and regime, s1 2 of 4: the arm mean is 0.625 everywhere
    for run in runs:
        for name, (condition, arm, regime, *_) in cal.CURVES.items():
            if run.startswith(f"{condition.lower()}-{arm}"):
                for step in targets[name]["steps"]:
                    _eval_file(
                        tmp_path, run, step, regime, [1, 1, 1, 0] if run.endswith("s0") else [1, 1, 0, 0]
                    )
    step0 = json.loads(
        (Path(__file__).parent / "fixtures/render/results/models/surrogate/calibration.json").read_text()
    )
    step0 = {k: v for k, v in step0.items() if k not in ("curves", "step0_sha256")}
    step0.update(
        stage="step0", targets=[r for r in step0["targets"] if not r["target_name"].startswith("curve_")]
    )
    atomic_write_json(tmp_path / "step0.json", step0)
    register = cal.curves_register(
        step0, sha256_file(tmp_path / "step0.json"), runs, tmp_path, published, True
    )
    for name in cal.CURVES:
        curve = register["curves"][name]
        gaps = [0.625 - v for v in targets[name]["values"]]
        assert [p["achieved"] for p in curve["points"]] == [0.625] * 6
        assert curve["rms_gap"] == pytest.approx(math.sqrt(np.mean(np.square(gaps))))
        assert curve["points"][0]["se"] == pytest.approx(0.125)  # sd(0.75, 0.5) / sqrt(2)
        row = next(r for r in register["targets"] if r["target_name"] == f"curve_rms_{name}")
        assert row["passes"] == (curve["rms_gap"] <= cal.CURVE_TOLERANCE)
    assert register["passes"] is False  # 0.625 is far from the clean curves (0.81-0.93)
    out = tmp_path / "calibration.json"
    settings = json.dumps({"surrogate": {"check_curves": True}})
    argv = ["surrogate", "curves", "--step0", str(tmp_path / "step0.json"), "--results", str(tmp_path)]
    argv += ["--settings", settings, "--published-curves", str(published), "--runs", *runs]
    assert cli.main([*argv, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"paired-rollouts surrogate: error: {out}: surrogate calibration missed")
        and "\n" not in err
    )
    assert "curve_rms_c0_clean_validation" in err and json.loads(out.read_text())["passes"] is False
    # the written register's curves are the eval files' recomputed, and its reader checks its own sums
    assert records.read_calibration(out).raw["curves"] == register["curves"]
    for edit, says in (
        (lambda c: c["points"][2].update(achieved=0.9), "curves.c2_challenge step 40: gap"),
        (lambda c: c.update(rms_gap=0.01), "curves.c2_challenge.rms_gap is 0.01"),
        (lambda c: c.update(checked=False), "targets curve_rms_c2_challenge: kind 'checked'"),
    ):
        data = json.loads(out.read_text())
        edit(data["curves"]["c2_challenge"])
        (tmp_path / "edited.json").write_text(json.dumps(data))
        with pytest.raises(UserError, match=f"edited.json: {re.escape(says)}"):
            records.read_calibration(tmp_path / "edited.json")
    assert cli.main([*argv, "c2-paired-s0", "--out", str(tmp_path / "other.json")]) == 1
    assert "never a paired curve" in capsys.readouterr().err and not (tmp_path / "other.json").exists()


def test_the_offline_fit_runs_its_grids_on_the_unpaired_arms_only(monkeypatch) -> None:
    """The committed fit at a toy size: the shape grid, then the learning rates, training only C0, C2
    independent and C4 independent runs (every run it trains is recorded), choosing the smallest loss."""
    from paired_rollouts.surrogate import fit as fitting

    trained = []
    real = fitting.run_curves

    def recording(theta0, shape, lr, run, tasks_dir, settings):
        trained.append(run)
        return real(theta0, shape, lr, run, tasks_dir, settings)

    monkeypatch.setattr(fitting, "run_curves", recording)
    small = {"eval_tasks": 6, "samples": 1, "diag_pool": "diagnostic", "diag_tasks": 2, "diag_schedules": 2}
    settings = Settings.from_manifest(
        {
            "steps": 2,
            "prompts_per_step": 2,
            "num_generations": 4,
            "micro_batch": 8,
            "checkpoint_every": 2,
            "eval_tasks": 3,
            "eval_batch": 64,
            "task_filter": "all",
        }
    )
    report = fitting.fit(
        str(TASKS),
        estimator_keywords={**small, "diag_samples": 2, "task_filter": "all"},
        settings=settings,
        published=TASKS.parents[1] / "data/published/paper.yaml",
        published_curves_path=TASKS.parents[1] / "data/published/curves.yaml",
        difficulties=[0.0, 1.2],
        tokens=2,
        error_tokens=[6],
        captures=2,
        learning_rates=[0.01, 0.02],
        seeds=1,
        jobs=1,
    )
    losses = {p["task_difficulty"]: p["loss"] for p in report["shape_grid"]}
    assert report["chosen_shape"]["task_difficulty"] == min(losses, key=losses.get)
    assert sorted(set(trained)) == ["c0-clean-s0", "c2-independent-s0", "c4-independent-s0"]
    assert len(trained) == 6 and not any("paired" in run for run in trained)
    rates = {r["learning_rate"]: r["max_rms_gap"] for r in report["learning_rates"]}
    assert report["chosen_learning_rate"] == min(rates, key=rates.get)
    assert all(g["points"][0]["step"] == 0 for r in report["learning_rates"] for g in r["curves"].values())


# ---------------------------------------------------------------- the register recomputed


def test_the_step0_register_is_what_its_theta_gives_recomputed_and_a_tampered_one_is_refused(
    tmp_path: Path,
) -> None:
    """At toy size: the register's step-0 reductions (the probe at the paper's design, over its captures)
    and behaviour come back when recomputed from its own theta and shape on a fresh estimator; its
    summaries and verdicts follow from its detail; an edited capture, verdict or tolerance is refused by
    the reader with one line naming the file."""
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.records import read_calibration

    published = TASKS.parents[1] / "data/published/paper.yaml"
    register = cal.step0_register(_small_estimator(SHAPE, snr_groups=4), published, captures=2, iterations=1)
    fresh = _small_estimator(SHAPE, snr_groups=4)
    assert fresh.mechanism(register["theta"], 2) == register["mechanism"]
    assert fresh.fitted(register["theta"]) == {
        r["target_name"]: r["achieved"] for r in register["targets"] if r["kind"] == "fitted"
    }
    rows = {r["target_name"]: r for r in register["targets"]}
    for name, (_, key) in cal.MECHANISM.items():
        captures = [c[key] for c in register["mechanism"]["captures"]]
        assert rows[name]["achieved"] == pytest.approx(np.mean(captures), rel=1e-12)
        assert 0.0 < rows[name]["achieved"] < 1.0  # pairing removes part of the trace at this shape
    path = tmp_path / "step0.json"
    atomic_write_json(path, register)
    assert read_calibration(path).mechanism == register["mechanism"]

    def tampered(edit) -> str:
        data = json.loads(path.read_text())
        edit(data)
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(data))
        with pytest.raises(UserError) as info:
            read_calibration(bad)
        assert str(info.value).startswith(f"{bad}: ") and "\n" not in str(info.value)
        return str(info.value)

    def capture(d: dict) -> None:
        d["mechanism"]["captures"][0]["transition"] += 0.1

    def verdict(d: dict) -> None:
        row = next(r for r in d["targets"] if r["target_name"] == "outcome_mc_reduction")
        row["passes"] = not row["passes"]

    def tolerance(d: dict) -> None:
        row = next(r for r in d["targets"] if r["target_name"] == "transition_mc_reduction")
        row["tolerance"] = 1.0

    def luck(d: dict) -> None:
        d["luck_share"]["lam"] = 0.355

    assert "mechanism.mean.transition" in tampered(capture)
    assert "outcome_mc_reduction: passes" in tampered(verdict)
    assert "transition_mc_reduction: tolerance" in tampered(tolerance)
    assert "luck_share.lam" in tampered(luck)


def test_without_phrasing_tokens_the_phrasing_reductions_are_undefined_and_the_register_reads(
    tmp_path: Path,
) -> None:
    """``phrasing_tokens: 0`` and ``error_phrasing_tokens: 0`` are valid settings (the 32 action parameters
    alone). The phrasing block then carries no score noise, so its reductions are None in every capture
    and in the summary (not a crash, not a zero); the whole score is the action block's, so their
    reductions agree exactly. The register reads back, and a phrasing mean stated as a number is refused."""
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.records import read_calibration

    published = TASKS.parents[1] / "data/published/paper.yaml"
    register = cal.step0_register(_small_estimator(PLAIN, snr_groups=4), published, captures=2, iterations=1)
    mechanism = register["mechanism"]
    for noise in ("transition", "outcome"):
        assert all(c[f"{noise}_phrasing"] is None for c in mechanism["captures"])
        assert mechanism["mean"][f"{noise}_phrasing"] is None and mechanism["sd"][f"{noise}_phrasing"] is None
        assert [c[noise] for c in mechanism["captures"]] == [
            c[f"{noise}_actions"] for c in mechanism["captures"]
        ]
        assert isinstance(mechanism["mean"][noise], float) and isinstance(mechanism["sd"][noise], float)
    path = tmp_path / "plain.json"
    atomic_write_json(path, register)
    assert read_calibration(path).mechanism == mechanism

    data = json.loads(path.read_text())
    data["mechanism"]["mean"]["outcome_phrasing"] = 0.2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(UserError) as info:
        read_calibration(bad)
    assert str(info.value).startswith(f"{bad}: ") and "mechanism.mean.outcome_phrasing" in str(info.value)


def test_the_signal_to_noise_is_undefined_where_every_group_gave_the_same_gradient() -> None:
    """Tr Var g = 0 (few ``snr_groups``, none with reward variance) leaves nothing to divide by: the ratio
    and its error are None, not a ZeroDivisionError; with noise, the ratio is signal / (Tr S / batch)."""
    flat = cal.signal_and_noise(np.zeros((2, 5)))
    assert flat["trace_var_group"] == 0.0 and flat["snr_per_step"] is None and flat["snr_per_step_se"] is None
    g = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    noisy = cal.signal_and_noise(g, batch=24)
    trace = float(np.trace(np.cov(g.T, ddof=1)))
    assert noisy["trace_var_group"] == pytest.approx(trace, rel=1e-12)
    assert noisy["snr_per_step"] == pytest.approx(noisy["signal"] / (trace / 24), rel=1e-12)


def test_the_summary_gives_each_auc_gap_with_its_standard_error_over_seed_pairs() -> None:
    """The README's gap +- standard error: the between-pair SD over sqrt(pairs), here of two pairs,
    |d1 - d2| / 2, from the decision registers' per-pair differences (read through their reader)."""
    from paired_rollouts.records import read_decision_register
    from paired_rollouts.surrogate.commands import _verdict_numbers

    fixtures = Path(__file__).parent / "fixtures/render/results"
    for condition, hypothesis in (("c2", "H2a"), ("c4", "H2b")):
        path = fixtures / f"decisions/{condition}.json"
        by_pair = json.loads(path.read_text())[hypothesis]["auc_difference_by_seed"]
        assert len(by_pair) == 2 and by_pair[0] != by_pair[1]
        block = getattr(read_decision_register(path), hypothesis.lower())
        stated = _verdict_numbers(block)["auc_difference_se"]
        assert stated == pytest.approx(abs(by_pair[0] - by_pair[1]) / 2, rel=1e-12)


# ---------------------------------------------------------------- what researchers watch during training

TINY_RUN = {
    "task_filter": "all",
    "training": {
        "steps": 3,
        "prompts_per_step": 2,
        "num_generations": 4,
        "checkpoint_every": 3,
        "micro_batch": 8,
        "learning_rate": 0.05,
    },
    "evaluation": {"eval_tasks": 2, "final_tasks": 2, "eval_batch": 64},
    "diagnostics": {
        "pool": "diagnostic",
        "tasks": 1,
        "schedules": 2,
        "samples": 2,
        "steps": {"seed0": [0], "other": [0]},
    },
    "surrogate": {"train_episodes_seeds": [0], "phrasing_tokens": 4, "error_phrasing_tokens": 12},
}


def test_a_surrogate_run_writes_its_training_metrics_as_tensorboard_event_files(
    tmp_path, monkeypatch
) -> None:
    """The arm job's run writes reward, its spread, the zero-variance fraction, gradient norm and step time
    per update under runs/RUN/tensorboard/ (TensorBoard's own reader gets them back, equal to the group
    register and the manifest's timings), and no record changes with them: the same run without the
    event writer has the same bytes."""
    from paired_rollouts.surrogate.run import run_one
    from paired_rollouts.training import event_log

    calibration = Path(__file__).parent / "fixtures/render/results/models/surrogate/calibration.json"
    settings = Settings.parse(TINY_RUN)

    def run(results: Path) -> dict:
        return run_one(
            "c2-paired-s0",
            tasks_dir=str(TASKS),
            calibration=str(calibration),
            settings=settings,
            results=str(results),
        )

    manifest = run(tmp_path / "with")
    monkeypatch.setattr(event_log, "installed", lambda: False)
    run(tmp_path / "without")
    monkeypatch.undo()
    assert not (tmp_path / "without/runs/c2-paired-s0/tensorboard").exists()
    records = sorted(
        p.relative_to(tmp_path / "without")
        for p in (tmp_path / "without").rglob("*")
        if p.is_file() and p.name != "manifest.json"
    )
    assert any(p.name == "groups.jsonl" for p in records) and any(p.suffix == ".jsonl" for p in records)
    for rel in records:
        assert (tmp_path / "with" / rel).read_bytes() == (tmp_path / "without" / rel).read_bytes(), rel

    folder = tmp_path / "with/runs/c2-paired-s0/tensorboard"
    if not event_log.installed():
        assert not folder.exists()
        pytest.skip("tensorboard is not installed (pip install -e .[train])")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    logged = {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in events.Tags()["scalars"]}
    assert set(logged) == {
        f"train/{name}" for name in ("reward", "reward_std", "frac_reward_zero_std", "grad_norm", "step_time")
    }
    groups = [json.loads(line) for line in (tmp_path / "with/runs/c2-paired-s0/groups.jsonl").open()]
    for timing in manifest["timings"]:
        step = timing["step"]
        batch = [g for g in groups if g["step"] == step]
        rewards = [r for g in batch for r in g["observed_reward"]]
        zero = sum(g["zero_variance"] for g in batch) / len(batch)
        assert logged["train/reward"][step + 1] == pytest.approx(np.mean(rewards), abs=1e-6)
        assert logged["train/reward_std"][step + 1] == pytest.approx(np.std(rewards, ddof=1), abs=1e-6)
        assert logged["train/frac_reward_zero_std"][step + 1] == pytest.approx(zero, abs=1e-6)
        assert logged["train/grad_norm"][step + 1] == pytest.approx(timing["gradient_norm"], rel=1e-6)
        assert logged["train/step_time"][step + 1] == pytest.approx(timing["seconds"], rel=1e-6)
    assert all(len(series) == len(manifest["timings"]) for series in logged.values())
