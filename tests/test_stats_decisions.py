"""Completeness and decisions on hand-built runs whose answers are worked out by hand.

Design (stand-in-like): periodic steps 0, 4, 8 on 2 validation tasks; final at step 8 on 2 test tasks;
diagnostic at step 0 on 2 tasks x 4 schedules x 4 samples; 2 training steps x 2 prompts x 4 rollouts.
"""

import contextlib
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from paired_rollouts.cli import main
from paired_rollouts.noise.seeds import diagnostic_seed, eval_schedule_seed, row_order, training_schedule_seed
from paired_rollouts.stats.decisions import h3_steps
from records_fixtures import run_manifest


def _rules_text() -> str:
    """The repository's frozen rules with fewer resamples (keeps the tests fast)."""
    import yaml

    data = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "prereg" / "decision_rules.yaml").read_text()
    )
    data["bootstrap"]["resamples"] = 2000
    return yaml.safe_dump(data)


_VERIFIED: dict[str, Path] = {}


def rules_verification() -> Path:
    """A passing verification report (the local test authority) that covers ``rules.yaml`` with the bytes
    the hand-built studies write; decide decides nothing on rules no report covers. Made once a session."""
    if "report" not in _VERIFIED:
        root = Path(tempfile.mkdtemp(prefix="verified-rules-"))
        (root / "rules.yaml").write_text(_rules_text())
        freeze, report = root / "freeze", root / "verification.json"
        command = ["prereg", "freeze-local", "--out", str(freeze), "--root", str(root)]
        assert main([*command, "--documents", "rules.yaml"]) == 0
        command = ["prereg", "verify", "--freeze", str(freeze), "--root", str(root), "--allow-test-authority"]
        assert main([*command, "--out", str(report)]) == 0
        _VERIFIED["report"] = report
    return _VERIFIED["report"]


EXPECTED = {  # the hand-built study's evidence spelled out, as complete.json records it (--expected)
    "periodic": {
        "steps": [0, 4, 8],
        "pool": "validation",
        "tasks": 2,
        "regimes": {"clean": [1, 2], "at_training": [1, 2], "challenge": [1]},
    },
    "final": {
        "step": 8,
        "pool": "test",
        "tasks": 2,
        "regimes": {"clean": [1, 2], "noisy_p025": [1, 2], "heldout_types": [1, 2], "challenge": [1]},
    },
    "diagnostic": {"steps": [0], "pool": "diagnostic", "tasks": 2, "schedules": 4, "samples": 4},
    "training": {"steps": 2, "prompts": 2, "generations": 4},
}
V0, V1 = "validation-00000", "validation-00001"
T0, T1 = "test-00000", "test-00001"

# Hand-worked outcomes. at_training task scores (schedule successes) per step:
#   s0 paired:      step0 (1,0)(0,1)  step4 (1,1)(1,0)  step8 (1,1)(1,1)  -> curve .5 .75 1   AUC .75
#   s0 independent: step0 (1,0)(0,1)  step4 (1,0)(0,1)  step8 (1,1)(1,0)  -> curve .5 .5 .75  AUC .5625
#   s1 paired:      step0 (1,0)(0,1)  step4 (1,1)(0,0)  step8 (1,1)(1,1)  -> .5 .5 1          AUC .625
#   s1 independent: all (1,0)                                           -> .5 .5 .5          AUC .5
# AUC differences .1875, .125 -> mean .15625: H2a passes (final noisy_p025 .75 vs .25).
AT = {
    ("paired", 0): {0: {V0: [1, 0], V1: [0, 1]}, 4: {V0: [1, 1], V1: [1, 0]}, 8: {V0: [1, 1], V1: [1, 1]}},
    ("independent", 0): {
        0: {V0: [1, 0], V1: [0, 1]},
        4: {V0: [1, 0], V1: [0, 1]},
        8: {V0: [1, 1], V1: [1, 0]},
    },
    ("paired", 1): {0: {V0: [1, 0], V1: [0, 1]}, 4: {V0: [1, 1], V1: [0, 0]}, 8: {V0: [1, 1], V1: [1, 1]}},
    ("independent", 1): {s: {V0: [1, 0], V1: [1, 0]} for s in (0, 4, 8)},
}
# challenge (1 schedule); H3 steps 40/60/80 of 100 map to 4 and 8 on the 0..8 grid.
#   s0: paired step4 (1,1) step8 (1,1); independent step4 (0,1) step8 (1,0) -> diff mean .5
#   s1: paired step4 (1,0) step8 (1,1); independent step4 (1,0) step8 (0,1) -> diff mean .25
CH = {
    ("paired", 0): {4: {V0: [1], V1: [1]}, 8: {V0: [1], V1: [1]}},
    ("independent", 0): {4: {V0: [0], V1: [1]}, 8: {V0: [1], V1: [0]}},
    ("paired", 1): {4: {V0: [1], V1: [0]}, 8: {V0: [1], V1: [1]}},
    ("independent", 1): {4: {V0: [1], V1: [0]}, 8: {V0: [0], V1: [1]}},
}
# heldout_types: s0 paired (1,1)(1,0) vs indep (1,0)(1,0) -> +.25; s1 paired (0,0)(1,1) vs (1,1)(1,1) -> -.5
HT = {
    ("paired", 0): {T0: [1, 1], T1: [1, 0]},
    ("independent", 0): {T0: [1, 0], T1: [1, 0]},
    ("paired", 1): {T0: [0, 0], T1: [1, 1]},
    ("independent", 1): {T0: [1, 1], T1: [1, 1]},
}
NOISY = {"paired": {T0: [1, 1], T1: [1, 0]}, "independent": {T0: [1, 0], T1: [0, 0]}}


def _episode(run, cond, arm, seed, phase, step, regime, task, index, sseed, success, **fields):
    """An episode record in the contract's shape (``fields`` override the defaults: exposed, calls, budget)."""
    return {
        "run": run,
        "condition": cond,
        "arm": arm,
        "seed": seed,
        "phase": phase,
        "step": step,
        "regime": regime,
        "task_id": task,
        "schedule_index": index,
        "schedule_seed": sseed,
        "true_success": bool(success),
        "observed_reward": float(success),
        "flipped": False,
        "exposed": index == 1,
        "calls": 5,
        "budget": 11,
        "finished": True,
        "faults": {},
    } | fields


def _write(path: Path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def make_pools(root: Path):
    tasks = root / "data" / "tasks"
    tasks.mkdir(parents=True)
    pools = {}
    for name in ("train", "validation", "test", "diagnostic"):
        p = tasks / f"{name}.jsonl"
        _write(p, [{"task_id": f"{name}-{i:05d}", "split": name} for i in range(3)])
        pools[name] = {"count": 3, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
    (tasks / "MANIFEST.json").write_text(json.dumps({"pools": pools, "generator_seed": 20260904}))
    (root / "rules.yaml").write_text(_rules_text())
    return pools


def make_run(root: Path, cond: str, arm: str, seed: int, pools, lam_high=True, shared_seeds=None):
    run = f"{cond.lower()}-{arm}-s{seed}"
    ev = root / "results" / "evals" / run
    key = (arm, seed)
    for step in (0, 4, 8):
        for regime, idxs in EXPECTED["periodic"]["regimes"].items():
            rows = []
            for t, task in enumerate((V0, V1)):
                for j, index in enumerate(idxs):
                    if regime == "at_training" and key in AT:
                        s = AT[key][step][task][j]
                    elif regime == "challenge" and key in CH:
                        s = CH[key].get(step, {V0: [0], V1: [0]})[task][j]
                    else:
                        s = (t + j + step) % 2
                    rows.append(
                        _episode(
                            run,
                            cond,
                            arm,
                            seed,
                            "periodic",
                            step,
                            regime,
                            task,
                            index,
                            eval_schedule_seed(task, index),
                            s,
                        )
                    )
            _write(ev / f"periodic-step{step}-{regime}.jsonl", rows)
    for regime, idxs in EXPECTED["final"]["regimes"].items():
        rows = []
        for t, task in enumerate((T0, T1)):
            for j, index in enumerate(idxs):
                if regime == "heldout_types" and key in HT:
                    s = HT[key][task][j]
                elif regime == "noisy_p025" and arm in NOISY:
                    s = NOISY[arm][task][j]
                else:
                    s = (t + j) % 2
                rows.append(
                    _episode(
                        run,
                        cond,
                        arm,
                        seed,
                        "final",
                        8,
                        regime,
                        task,
                        index,
                        eval_schedule_seed(task, index),
                        s,
                    )
                )
        _write(ev / f"final-step8-{regime}.jsonl", rows)
    rows = []
    for t in range(2):
        for k in range(4):
            for m in range(4):
                s = (k % 2) if lam_high else (m % 2)  # rows all-1/all-0 -> lam 1; columns -> lam 0
                task = f"diagnostic-{t:05d}"
                rows.append(
                    _episode(
                        run,
                        cond,
                        arm,
                        seed,
                        "diagnostic",
                        0,
                        "diag",
                        task,
                        k,
                        diagnostic_seed(seed, task, k),
                        s,
                    )
                )
    diag = root / "results" / "diagnostics" / run / "diag-step0.jsonl"
    _write(diag, rows)
    groups = []
    order = row_order(3, seed)
    for step in range(2):
        for g in range(2):
            row = 2 * step + g
            base = training_schedule_seed(seed, cond, row)
            sseeds = (
                [base] * 4
                if (shared_seeds if shared_seeds is not None else arm != "independent")
                else [base + i for i in range(4)]
            )
            groups.append(
                {
                    "run": run,
                    "step": step,
                    "group": g,
                    "task_id": f"train-{order[row % 3]:05d}",
                    "row_index": row,
                    "schedule_seed": base,
                    "schedule_seeds": sseeds,
                    "true_success": [True] * 4,
                    "observed_reward": [1.0, 1.0, 1.0, 0.0 if arm == "independent" else 1.0],
                    "advantages": [0.0] * 4,
                }
            )
    rdir = root / "results" / "runs" / run
    _write(rdir / "groups.jsonl", groups)
    (rdir / "manifest.json").write_text(
        json.dumps(
            run_manifest(
                run,
                {k: v["sha256"] for k, v in pools.items()},
                attempts=[{"attempt": 1, "code_version": "abc"}],
            )
        )
    )
    return run


def completeness(
    root: Path, run: str, strict: bool = False, rc_expected: int = 0, expected: dict | None = None
) -> dict:
    """The run's completeness record, checked against ``expected`` (default: the design's, EXPECTED)."""
    res = root / "results"
    out = res / "runs" / run / "complete.json"
    luck_file = res / "diagnostics" / run / "luck-step0.json"
    rc = main(
        [
            "completeness",
            "--run",
            run,
            "--expected",
            json.dumps(expected or EXPECTED),
            "--evals",
            str(res / "evals" / run),
            "--diagnostics",
            str(res / "diagnostics" / run),
            "--groups",
            str(res / "runs" / run / "groups.jsonl"),
            "--run-manifest",
            str(res / "runs" / run / "manifest.json"),
            "--manifest",
            str(root / "data" / "tasks" / "MANIFEST.json"),
            "--out",
            str(out),
            *(["--luck", str(luck_file)] if luck_file.is_file() else []),
            *(["--strict"] if strict else []),
        ]
    )
    assert rc == rc_expected
    return json.loads(out.read_text())


def luck(root: Path, run: str):
    d = root / "results" / "diagnostics" / run
    assert (
        main(
            [
                "luck-share",
                "--episodes",
                str(d / "diag-step0.jsonl"),
                "--out",
                str(d / "luck-step0.json"),
                "--resamples",
                "200",
            ]
        )
        == 0
    )
    return d / "luck-step0.json"


def decide(
    root: Path,
    cond: str,
    runs,
    out_name="dec.json",
    complete=True,
    extra=(),
    seeds=("0", "1"),
    design=True,
    verified=True,
):
    res = root / "results"
    args = [
        "decide",
        "--condition",
        cond,
        *(["--expected", json.dumps(EXPECTED)] if design else []),
        "--episodes",
        *[str(res / "evals" / r) for r in runs],
        *(["--seeds", *seeds] if seeds is not None else []),
        "--groups",
        *[str(res / "runs" / r / "groups.jsonl") for r in runs],
        "--luck",
        *[str(res / "diagnostics" / r / "luck-step0.json") for r in runs],
        "--rules",
        "rules.yaml",  # as the workflow gives it: relative to the folder the verification covers
        *(["--verification", str(rules_verification())] if verified else []),
        "--manifest",
        str(root / "data" / "tasks" / "MANIFEST.json"),
        "--out",
        str(root / out_name),
        *extra,
    ]
    if complete:
        args += ["--complete", *[str(res / "runs" / r / "complete.json") for r in runs]]
    with contextlib.chdir(root):
        assert main(args) == 0
    return json.loads((root / out_name).read_text())


def seed_matrix(root: Path, cond: str, pools, seeds=(0, 1)) -> list[str]:
    """Both arms of ``cond`` for each seed, seed by seed (paired first)."""
    return [make_run(root, cond, arm, seed, pools) for seed in seeds for arm in ("paired", "independent")]


def checked(root: Path, runs: list[str], strict: bool = False) -> list[str]:
    """Each run's step-0 luck share and completeness record, every run complete: evidence decide admits."""
    for r in runs:
        luck(root, r)
        assert completeness(root, r, strict=strict)["complete"]
    return runs


@pytest.fixture()
def study(tmp_path):
    pools = make_pools(tmp_path)
    runs = [*seed_matrix(tmp_path, "C2", pools), make_run(tmp_path, "C0", "clean", 0, pools)]
    return tmp_path, checked(tmp_path, runs, strict=True)


def test_c2_decision_by_hand(study):
    root, runs = study
    reg = decide(root, "C2", runs)
    assert reg["complete"] and reg["runs"] == [
        "c2-paired-s0",
        "c2-independent-s0",
        "c2-paired-s1",
        "c2-independent-s1",
    ]
    h2 = reg["H2a"]
    assert h2["steps"] == [0, 4, 8] and h2["auc_weights"] == [0.25, 0.5, 0.25]
    assert h2["auc_paired"] == [0.75, 0.625] and h2["auc_independent"] == [0.5625, 0.5]
    assert h2["auc_difference_by_seed"] == [0.1875, 0.125]
    assert h2["auc_difference_mean"] == pytest.approx(0.15625, abs=1e-4)
    assert h2["final_paired_by_seed"] == [0.75, 0.75] and h2["final_difference_mean"] == 0.5
    # the means over seeds and the per-seed final gap that tables 3 and 4 show as written
    assert h2["auc_paired_mean"] == 0.6875 and h2["auc_independent_mean"] == 0.5312  # 0.53125 to 4 dp
    fin_i = h2["final_independent_by_seed"]
    assert h2["final_difference_by_seed"] == [round(0.75 - v, 4) for v in fin_i]
    assert h2["final_paired_mean"] == 0.75 and h2["final_independent_mean"] == round(sum(fin_i) / 2, 4)
    lo, hi = h2["auc_difference_ci95"]
    assert -0.125 <= lo <= hi <= 0.375  # support: per-seed task contributions (.25,.125), (.375,-.125)
    assert h2["passes"] is True
    h3 = reg["H3"]
    assert h3["steps"] == [4, 8] and h3["steps_rule"] == [40, 60, 80]
    assert h3["difference_by_seed"] == [0.5, 0.25] and h3["difference_mean"] == 0.375 and h3["passes"]
    h5 = reg["H5"]
    assert h5["difference_by_seed"] == [0.25, -0.5] and h5["difference_mean"] == -0.125
    assert h5["ci90_lower"] < -0.03 and h5["passes"] is False
    h1 = reg["H1a"]
    assert h1["passes"] is True
    assert h1["luck_share_step0"]["c2-paired-s0"]["lam"] == 1.0
    assert h1["seed_sharing"]["c2-independent-s1"]["groups_sharing_one_seed"] == 0
    assert h1["spurious_rate_independent"] == 1.0 and h1["spurious_rate_paired"] == 0.0
    # table 2's criterion rows, as written: smallest luck share and lower bound, runs meeting each
    luck = h1["luck_share_step0"].values()
    assert h1["luck_share_step0_min"] == min(v["lam"] for v in luck)
    assert h1["luck_share_step0_lower_min"] == min(v["ci95"][0] for v in luck)
    assert h1["runs_meeting_luck"] == h1["runs_meeting_sharing"] == 4  # H1a passes: every run meets both
    assert h2["auc_difference_positive_seeds"] == 2 and h3["difference_positive_seeds"] == 2
    sec = reg["secondary"]
    assert sec["clean_reference"]["runs"] == ["c0-clean-s0"]
    # s0 paired at_training curve .5 .75 1 reaches .617 between steps 0 and 4: 0 + (.117/.25)*4
    assert sec["steps_to_threshold"]["c2-paired-s0"]["step"] == pytest.approx(1.872, abs=1e-4)
    assert sec["steps_to_threshold"]["c2-independent-s1"] == {"step": None, "censored": True}
    # per-step curves (the blog's learning-curve points): the s0 paired at_training curve above, and the arm mean
    assert sec["curves"]["c2-paired-s0"]["at_training"] == {"0": 0.5, "4": 0.75, "8": 1.0}
    members = [sec["curves"][r]["at_training"] for r in ("c2-paired-s0", "c2-paired-s1")]
    assert sec["arms"]["paired"]["curve"]["at_training"] == {
        k: pytest.approx((members[0][k] + members[1][k]) / 2, abs=1e-4) for k in members[0]
    }
    # exposure: the share of final episodes that met a fault, beside recovery success among them
    for run, by_regime in sec["exposure"].items():
        assert all(0.0 <= v <= 1.0 for v in by_regime.values()), run
        for regime, share in by_regime.items():
            assert (sec["recovery_success"][run][regime] is None) == (share == 0.0), (run, regime)
    assert reg["bootstrap"] == {"resamples": 2000, "seed": 20260911}
    # the same inputs give the same bytes
    first = (root / "dec.json").read_bytes()
    decide(root, "C2", runs)
    assert (root / "dec.json").read_bytes() == first


def test_seed_sharing_and_luck_failures(tmp_path):
    pools = make_pools(tmp_path)
    runs = [
        make_run(tmp_path, "C2", "paired", 0, pools, lam_high=False),
        make_run(tmp_path, "C2", "independent", 0, pools, shared_seeds=True),
    ]
    checked(tmp_path, runs)
    reg = decide(tmp_path, "C2", runs, seeds=("0",))
    assert reg["complete"] is True and reg["decided"] is True
    rows = reg["H1a"]["runs"]
    assert rows["c2-paired-s0"]["luck_criterion"] is False and rows["c2-paired-s0"]["sharing_criterion"]
    assert rows["c2-independent-s0"]["sharing_criterion"] is False
    assert reg["H1a"]["passes"] is False and reg["H1a"]["decided"] is True
    # unchecked evidence (no completeness files) is never decided, not even as a miss
    reg = decide(tmp_path, "C2", runs, complete=False, seeds=("0",), out_name="unchecked.json")
    assert reg["complete"] is False and reg["runs"] == []
    assert all(
        reg[h]["passes"] is None and "not decided" in reg[h]["reason"] for h in ("H1a", "H2a", "H3", "H5")
    )


def test_incomplete_run_is_refused(study):
    root, runs = study
    f = root / "results" / "evals" / "c2-independent-s1" / "periodic-step4-challenge.jsonl"
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:-1]))
    comp = completeness(root, "c2-independent-s1")
    assert comp["complete"] is False
    assert comp["missing"][0]["absent"] == [[V1, 1]]
    reg = decide(root, "C2", runs)
    assert reg["seeds"] == [0] and reg["complete"] is False
    assert reg["acceptance"]["c2-independent-s1"]["admitted"] is False
    assert any("c2-independent-s1" in m for m in reg["missing"])
    assert reg["H2a"]["auc_difference_by_seed"] == [0.1875]


def test_tampered_run_is_refused(study):
    root, runs = study
    f = root / "results" / "evals" / "c2-paired-s1" / "final-step8-heldout_types.jsonl"
    f.write_text(f.read_text().replace('"true_success": false', '"true_success": true'))
    reg = decide(root, "C2", runs)
    reasons = reg["acceptance"]["c2-paired-s1"]["reasons"]
    assert any("tampered" in r for r in reasons) and reg["seeds"] == [0]


def test_pool_mismatch_is_refused(study):
    root, runs = study
    man = root / "results" / "runs" / "c2-paired-s0" / "manifest.json"
    data = json.loads(man.read_text())
    data["pools_sha256"]["test"] = "0" * 64
    man.write_text(json.dumps(data))
    comp = completeness(root, "c2-paired-s0")
    assert not comp["complete"] and any(d["kind"] == "pool" for d in comp["defects"])
    reg = decide(root, "C2", runs)
    assert not reg["acceptance"]["c2-paired-s0"]["admitted"]
    assert reg["H2a"]["seeds"] == [1]


def test_missing_pair_named(study):
    root, runs = study
    reg = decide(root, "C2", runs, extra=["--seeds", "0", "1", "2"])
    assert "c2-paired-s2: no episode records given" in reg["missing"]
    assert reg["complete"] is False


def test_c4_decision(tmp_path):
    runs = checked(tmp_path, seed_matrix(tmp_path, "C4", make_pools(tmp_path)))
    reg = decide(tmp_path, "C4", runs)
    assert "H2b" in reg and "H3" not in reg and "H5" not in reg
    assert reg["H2b"]["validation_set"] == "clean" and reg["H2b"]["final_set"] == "clean"
    h1 = reg["H1a"]
    # every independent all-correct group has one flipped reward: rate 1 vs expected 1-.9^4-.1^4
    assert h1["spurious_rates"]["independent"] == {"all_correct_groups": 8, "spurious": 8, "rate": 1.0}
    assert h1["expected_independent_rate"] == pytest.approx(round(1 - 0.9**4 - 0.1**4, 4))
    assert h1["G"] == 4 and h1["G_rule"] == 8
    assert h1["rule"]["independent_criterion"] is False and h1["passes"] is False


def test_h3_step_mapping():
    grid = [0, 20, 40, 60, 80, 100]
    assert h3_steps([40, 60, 80], grid, grid) == [40, 60, 80]
    assert h3_steps([40, 60, 80], grid, [0, 2, 4, 6, 8, 10]) == [4, 6, 8]
    assert h3_steps([40, 60, 80], grid, [0, 4, 8]) == [4, 8]
    assert np.isclose(h3_steps([50], grid, [0, 4, 8, 12])[0], 4)  # tie at 6 -> earlier step


def test_spelled_out_evidence_and_rule_flags(study):
    """Expected evidence spelled out (a phase left out is not checked) and the flag names rules/*.smk use
    are accepted; the old flat object and regimes as a list of names are refused with one line."""
    root, runs = study
    res = root / "results"
    run = "c2-paired-s0"
    expected = {
        "run": run,
        "periodic": EXPECTED["periodic"],
        "final": EXPECTED["final"],
        "diagnostic": {**EXPECTED["diagnostic"], "tasks": None},
        "training": EXPECTED["training"],
    }
    out = root / "spelled.json"

    def completeness(evidence: dict) -> int:
        return main(
            [
                "completeness",
                "--run",
                run,
                "--expected",
                json.dumps(evidence),
                "--evals-dir",
                str(res / "evals" / run),
                "--groups",
                str(res / "runs" / run / "groups.jsonl"),
                "--run-manifest",
                str(res / "runs" / run / "manifest.json"),
                "--pool-manifest",
                str(root / "data" / "tasks" / "MANIFEST.json"),
                "--out",
                str(out),
            ]
        )

    assert completeness(expected) == 0
    data = json.loads(out.read_text())
    assert data["complete"] and data["skipped"] and data["episodes_expected"] == 44
    assert data["settings"] == expected
    # regimes have one shape, the mapping regime -> schedule indices: a list of names is refused
    from paired_rollouts.errors import UserError
    from paired_rollouts.stats.completeness import ExpectedEvidence

    periodic = {**EXPECTED["periodic"], "regimes": ["clean", "at_training", "challenge"]}
    with pytest.raises(UserError, match="give a mapping regime -> schedule indices"):
        ExpectedEvidence.from_record({**expected, "periodic": periodic})
    with pytest.raises(UserError, match=r"unknown keys \['eval_tasks', 'periodic_steps'\]"):
        ExpectedEvidence.from_record({"periodic_steps": [0, 4, 8], "eval_tasks": 2})
    c2 = [r for r in runs if r.startswith("c2")]
    reg = decide(root, "C2", c2, extra=["--reference-episodes", str(res / "evals" / "c0-clean-s0")])
    assert reg["secondary"]["clean_reference"]["runs"] == ["c0-clean-s0"]
