"""Issue 14: no pre-registered decision on partial, altered or ill-typed evidence.

Each case starts from the hand-built four-run C2 study of ``test_stats_decisions`` (real completeness,
luck-share and decide code), changes one thing, and checks that no hypothesis is decided (``passes`` is
null with the reason) or that the input is refused with one line naming the file.
"""

import json
import shutil
from pathlib import Path

import pytest
from paired_rollouts.cli import main
from paired_rollouts.noise.seeds import eval_schedule_seed
from records_fixtures import run_manifest
from test_stats_decisions import EXPECTED, _episode, checked, completeness, decide, make_pools, seed_matrix

C2_HYPOTHESES = ("H1a", "H2a", "H3", "H5")
RUNS = ["c2-paired-s0", "c2-independent-s0", "c2-paired-s1", "c2-independent-s1"]


@pytest.fixture()
def study(tmp_path):
    assert seed_matrix(tmp_path, "C2", make_pools(tmp_path)) == RUNS
    checked(tmp_path, RUNS, strict=True)
    return tmp_path


def _undecided(reg: dict) -> None:
    assert reg["decided"] is False and reg["complete"] is False
    for name in C2_HYPOTHESES:
        assert reg[name]["passes"] is None, name
        assert "not decided" in reg[name]["reason"]


def _rewrite(path: Path, edit) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in edit(rows)))


def test_whole_study_is_decided(study):
    reg = decide(study, "C2", RUNS)
    assert reg["decided"] and reg["design_seeds"] == [0, 1]
    assert reg["H2a"]["passes"] is True and reg["H5"]["passes"] is False


def test_missing_partner_arm(study):
    shutil.rmtree(study / "results" / "evals" / "c2-independent-s1")
    reg = decide(study, "C2", [r for r in RUNS if r != "c2-independent-s1"])
    _undecided(reg)
    assert reg["seeds"] == [0] and "c2-independent-s1: no episode records given" in reg["missing"]


def test_missing_whole_seed(study):
    reg = decide(study, "C2", RUNS[:2])  # the design has seeds 0 and 1
    _undecided(reg)
    assert "c2-paired-s1: no episode records given" in reg["missing"]
    # without the design's seeds nothing can tell a partial matrix from a whole one
    reg = decide(study, "C2", RUNS[:2], seeds=None, out_name="noseeds.json")
    _undecided(reg)


@pytest.mark.parametrize("case", ["duplicate", "unknown_regime", "deleted", "schedule_seed", "stray"])
def test_failing_completeness_is_never_analysed(study, case):
    run = "c2-paired-s1"
    ev = study / "results" / "evals" / run
    f = ev / "periodic-step4-clean.jsonl"
    if case == "duplicate":
        _rewrite(f, lambda rows: rows + rows[:1])
    elif case == "unknown_regime":
        _rewrite(f, lambda rows: [{**rows[0], "regime": "noisy_p050"}, *rows[1:]])
    elif case == "deleted":
        f.unlink()
    elif case == "schedule_seed":  # changed consistently across the file: only the design can tell
        _rewrite(f, lambda rows: [{**r, "schedule_seed": r["schedule_seed"] + 1} for r in rows])
    else:  # a final set stamped at the wrong step
        shutil.copy(ev / "final-step8-clean.jsonl", ev / "final-step4-clean.jsonl")
    if case == "unknown_regime":
        # the typed reader refuses the record outright, naming file and line
        out = study / "results" / "runs" / run / "complete.json"
        out.unlink()
        with pytest.raises(AssertionError):
            completeness(study, run, strict=True)
        assert not out.exists()
        return
    comp = completeness(study, run, strict=True, rc_expected=2)
    assert comp["complete"] is False
    if case == "schedule_seed":
        assert any(d["kind"] == "schedule_seed" for d in comp["defects"])
    if case == "stray":
        assert {"kind": "stray", "path": "evals/final-step4-clean.jsonl"}.items() <= comp["defects"][
            0
        ].items()
    _undecided(decide(study, "C2", RUNS))


def test_unknown_regime_error_line(study, capsys):
    f = study / "results" / "evals" / "c2-paired-s1" / "periodic-step4-clean.jsonl"
    _rewrite(f, lambda rows: [*rows[:2], {**rows[2], "regime": "noisy_p050"}, *rows[3:]])
    res = study / "results"
    rc = main(
        [
            "completeness",
            "--run",
            "c2-paired-s1",
            "--evals",
            str(res / "evals" / "c2-paired-s1"),
            "--manifest",
            str(study / "data" / "tasks" / "MANIFEST.json"),
            "--out",
            str(study / "x.json"),
            "--expected",
            json.dumps(
                {"periodic": {"steps": [4], "pool": "validation", "tasks": 2, "regimes": {"clean": [1, 2]}}}
            ),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and f"{f}:3:" in err and "'regime'" in err and "Traceback" not in err


def test_altered_episode_after_the_check(study):
    f = study / "results" / "evals" / "c2-independent-s0" / "periodic-step8-at_training.jsonl"
    _rewrite(f, lambda rows: [{**r, "true_success": True} for r in rows])
    reg = decide(study, "C2", RUNS)
    _undecided(reg)
    assert any("tampered" in r for r in reg["acceptance"]["c2-independent-s0"]["reasons"])


def test_same_named_copy_in_a_subfolder(study):
    """The copy used to escape the hash check (files keyed by base name) and flip H2a."""
    ev = study / "results" / "evals" / "c2-paired-s0"
    (ev / "extra").mkdir()
    copy = ev / "extra" / "periodic-step8-at_training.jsonl"
    shutil.copy(ev / "periodic-step8-at_training.jsonl", copy)
    _rewrite(copy, lambda rows: [{**r, "true_success": False} for r in rows])
    reg = decide(study, "C2", RUNS)
    _undecided(reg)
    reasons = reg["acceptance"]["c2-paired-s0"]["reasons"]
    assert "evals/extra/periodic-step8-at_training.jsonl: not covered by the completeness check" in reasons
    # and the completeness check itself names the stray file
    comp = completeness(study, "c2-paired-s0", strict=True, rc_expected=2)
    assert any(d.get("path") == "evals/extra/periodic-step8-at_training.jsonl" for d in comp["defects"])


def test_edited_groups_file(study):
    """Editing groups.jsonl used to flip H1a under complete: true."""
    g = study / "results" / "runs" / "c2-independent-s1" / "groups.jsonl"
    _rewrite(g, lambda rows: [{**r, "schedule_seeds": [r["schedule_seeds"][0]] * 4} for r in rows])
    reg = decide(study, "C2", RUNS)
    _undecided(reg)
    assert (
        "groups.jsonl: sha256 differs from complete.json (tampered)"
        in reg["acceptance"]["c2-independent-s1"]["reasons"]
    )


def test_edited_luck_share_file(study):
    lf = study / "results" / "diagnostics" / "c2-paired-s0" / "luck-step0.json"
    data = json.loads(lf.read_text())
    data["per_task"] = [{**t, "lam": 0.0} for t in data["per_task"]]
    data["lam"] = 0.0  # an edit its reader finds consistent: only the hash in complete.json gives it away
    lf.write_text(json.dumps(data))
    reg = decide(study, "C2", RUNS)
    _undecided(reg)
    assert any("luck-step0.json: sha256 differs" in r for r in reg["acceptance"]["c2-paired-s0"]["reasons"])


def test_a_luck_share_whose_summary_its_tasks_do_not_give_is_refused_by_its_reader(study, tmp_path):
    """lam and the task counts are recomputed from per_task (records.read_luck): an edited summary is one
    line naming the file, whatever complete.json says of its hash."""
    from paired_rollouts.errors import UserError
    from paired_rollouts.records import read_luck

    lf = study / "results" / "diagnostics" / "c2-paired-s0" / "luck-step0.json"
    data = json.loads(lf.read_text())
    assert read_luck(lf).lam == data["lam"]
    for edit, needle in (
        ({"lam": data["lam"] + 0.01}, "its per-task values give"),
        ({"tasks_defined": 0}, "defined"),
    ):
        bad = tmp_path / "luck-step0.json"
        bad.write_text(json.dumps({**data, **edit}))
        with pytest.raises(UserError) as caught:
            read_luck(bad)
        assert str(caught.value).startswith(f"{bad}: ") and needle in str(caught.value)


def test_luck_share_of_other_evidence_refused(study):
    """A luck-share file computed from other diagnostic episodes fails the completeness check."""
    d = study / "results" / "diagnostics" / "c2-paired-s0"
    lf = d / "luck-step0.json"
    data = json.loads(lf.read_text())
    data["source_sha256"] = "0" * 64
    lf.write_text(json.dumps(data))
    comp = completeness(study, "c2-paired-s0", strict=True, rc_expected=2)
    assert any(d["kind"] == "luck" for d in comp["defects"])


def test_group_swapped_off_its_training_row(study):
    g = study / "results" / "runs" / "c2-paired-s0" / "groups.jsonl"
    _rewrite(
        g, lambda rows: [{**rows[1], "step": 0, "group": 0}, {**rows[0], "step": 0, "group": 1}, *rows[2:]]
    )
    comp = completeness(study, "c2-paired-s0", strict=True, rc_expected=2)
    assert any(
        "training row" in d.get("problem", "") or "row_index" in d.get("problem", "") for d in comp["defects"]
    )


@pytest.mark.parametrize("value", ['"false"', "NaN", "0"])
def test_ill_typed_success_refused(study, capsys, value):
    """``true_success: "false"`` used to count as a success (bool("false")) and flip H2a."""
    f = study / "results" / "evals" / "c2-independent-s0" / "periodic-step8-at_training.jsonl"
    lines = f.read_text().splitlines()
    lines[1] = (
        lines[1]
        .replace('"true_success": false', f'"true_success": {value}')
        .replace('"true_success": true', f'"true_success": {value}')
    )
    f.write_text("\n".join(lines) + "\n")
    res = study / "results"
    rc = main(
        [
            "decide",
            "--condition",
            "C2",
            "--episodes",
            *[str(res / "evals" / r) for r in RUNS],
            "--rules",
            str(study / "rules.yaml"),
            "--manifest",
            str(study / "data" / "tasks" / "MANIFEST.json"),
            "--seeds",
            "0",
            "1",
            "--out",
            str(study / "d.json"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and f"{f}:2:" in err and not (study / "d.json").exists()


def test_missing_key_is_one_line(study, capsys):
    f = study / "results" / "evals" / "c2-paired-s0" / "final-step8-clean.jsonl"
    _rewrite(f, lambda rows: [{k: v for k, v in rows[0].items() if k != "true_success"}, *rows[1:]])
    rc = main(["luck-share", "--episodes", str(f), "--out", str(study / "l.json")])
    err = capsys.readouterr().err
    assert rc == 1 and "missing key 'true_success'" in err and f"{f}:1" in err


def test_schedule_seed_identity_is_the_design(study):
    """Records are checked against eval_schedule_seed(task, k), not only against each other."""
    f = study / "results" / "evals" / "c2-paired-s0" / "periodic-step0-clean.jsonl"
    rows = [json.loads(x) for x in f.read_text().splitlines()]
    assert all(r["schedule_seed"] == eval_schedule_seed(r["task_id"], r["schedule_index"]) for r in rows)


def test_non_paper_pools_are_labelled(study):
    """The hand-built pools are not the paper's: the register and table 2 say so."""
    from paired_rollouts.render import tables

    reg = decide(study, "C2", RUNS)
    assert reg["paper_pools"] is False
    comp = json.loads((study / "results" / "runs" / "c2-paired-s0" / "complete.json").read_text())
    assert comp["paper_pools"] is False
    text = tables.render_table(2, {"decisions": [study / "dec.json"]}, "s")
    assert "NOT the paper" in text


# ------------------------------------------------------------------ frozen keys are applied


def _api_decide(root: Path, cond: str, runs, edit) -> dict:
    """decide() through the Python API with an edited rules dict (bypassing the loader's consistency
    checks, so that an applied key is visible in the numbers, not only in a label)."""
    import yaml
    from paired_rollouts.prereg.rules import rules_from_dict
    from paired_rollouts.records import read_pool_manifest
    from paired_rollouts.stats.completeness import ExpectedEvidence
    from paired_rollouts.stats.decisions import decide as decide_api
    from paired_rollouts.stats.decisions import load_episodes, load_groups, load_inputs

    res = root / "results"
    raw = yaml.safe_load((root / "rules.yaml").read_text())
    edit(raw)
    complete, luck_in = load_inputs(
        [res / "runs" / r / "complete.json" for r in runs],
        [res / "diagnostics" / r / "luck-step0.json" for r in runs],
    )
    return decide_api(
        cond,
        load_episodes([res / "evals" / r for r in runs]),
        rules_from_dict(raw),
        read_pool_manifest(root / "data" / "tasks" / "MANIFEST.json"),
        groups=load_groups([res / "runs" / r / "groups.jsonl" for r in runs]),
        luck=luck_in,
        complete=complete,
        expected_seeds=[0, 1],
        design_evidence=lambda run: ExpectedEvidence.from_record(EXPECTED),
        rules_verified=True,  # the edit is the point here: the numbers must move with the applied key
    )


def test_frozen_auc_weights_apply_on_their_grid(study):
    reg = decide(study, "C2", RUNS)  # the repository's grid is 0..100: another scale, both recorded
    applied = reg["H2a"]["auc_weights_applied"]
    assert applied["source"].startswith("trapezoid") and applied["rule_steps"] == [0, 20, 40, 60, 80, 100]

    def on_this_grid(raw):
        raw["periodic_steps"], raw["auc_weights"] = [0, 4, 8], [0.5, 0.25, 0.25]  # unequal on purpose

    reg = _api_decide(study, "C2", RUNS, on_this_grid)
    h2 = reg["H2a"]
    assert h2["auc_weights_applied"]["source"] == "rules" and h2["auc_weights"] == [0.5, 0.25, 0.25]
    # s0 paired .5 .75 1 -> .5*.5+.25*.75+.25*1 = .6875
    assert h2["auc_paired"][0] == pytest.approx(0.6875)


def test_frozen_seed_sharing_thresholds_apply(study):
    def strict(raw):
        raw["h1a_c2"]["independent_min_seeds_per_group"] = 5  # G = 4 cannot reach it

    reg = _api_decide(study, "C2", RUNS, strict)
    sharing = reg["H1a"]["seed_sharing"]["c2-independent-s0"]
    assert sharing["independent_min_seeds_per_group"] == 5 and sharing["passes"] is False
    assert reg["H1a"]["passes"] is False


@pytest.fixture()
def c4_study(tmp_path):
    return tmp_path, checked(tmp_path, seed_matrix(tmp_path, "C4", make_pools(tmp_path)), strict=True)


def test_frozen_expected_rate_applies_at_its_group_size(c4_study):
    root, runs = c4_study
    reg = decide(root, "C4", runs)  # G = 4 trained, rule written for G = 8: both recorded
    h1 = reg["H1a"]
    assert (
        h1["G"] == 4
        and h1["G_rule"] == 8
        and h1["expected_independent_rate_rule"] == pytest.approx(0.5695, abs=1e-4)
    )
    assert h1["expected_rate_source"].startswith("closed form")

    def at_g4(raw):
        raw["h1a_c4"]["group_size"], raw["h1a_c4"]["expected_independent_rate"] = 4, 0.95

    h1 = _api_decide(root, "C4", runs, at_g4)["H1a"]
    assert h1["expected_rate_source"] == "rules" and h1["expected_independent_rate"] == 0.95
    # the independent arm's rate is 1.0: within .07 of the frozen .95, so the criterion now holds
    assert h1["rule"]["independent_criterion"] is True


def test_probe_verdict_comes_from_the_rules_file(tmp_path, capsys):
    """The H1b verdict used to come from code defaults; `probe verdict` applies the rules file's h1b block."""
    import yaml

    fixture = Path(__file__).parent / "fixtures" / "render" / "results" / "probe"
    register = json.loads(sorted(fixture.glob("*.json"))[0].read_text())
    first = sorted(register["checkpoints"], key=int)[0]
    block = register["checkpoints"][first]["outcome"]["mean_centered"]
    block["trace_var"]["paired"] = block["trace_var"]["independent"] * 2  # outcome wins at 2 of 3 checkpoints
    block["ratio_paired_over_independent"] = 2.0  # the ratio of those traces (the reader checks it)
    traces = tmp_path / "traces.json"
    traces.write_text(json.dumps(register))
    rules = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "prereg" / "decision_rules.yaml").read_text()
    )
    out = tmp_path / "probe.json"
    for outcome in ("every", "strict_majority"):
        rules["h1b"]["outcome"] = outcome
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
        assert (
            main(
                [
                    "probe",
                    "verdict",
                    "--traces",
                    str(traces),
                    "--rules",
                    str(tmp_path / "rules.yaml"),
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        verdict = json.loads(out.read_text())["verdict"]
        assert verdict["rule"]["outcome"] == outcome and verdict["rule_source"] == str(
            tmp_path / "rules.yaml"
        )
        assert (verdict["outcome_wins"], verdict["checkpoints"]) == (2, 3)
        assert verdict["outcome_noise_every_checkpoint"] is (outcome == "strict_majority")


@pytest.mark.parametrize("command", ["verdict", "recompute"])
def test_probe_commands_read_the_traces_through_the_typed_reader(tmp_path, capsys, command):
    """`probe verdict` and `probe recompute` read the trajectory's register through
    records.read_probe_register: one of another shape is one line naming the file and the key."""
    fixture = Path(__file__).parent / "fixtures" / "render" / "results" / "probe"
    register = json.loads(sorted(fixture.glob("*.json"))[0].read_text())
    register["run"] = 7
    traces = tmp_path / "traces.json"
    traces.write_text(json.dumps(register))
    rules = Path(__file__).resolve().parents[1] / "prereg" / "decision_rules.yaml"
    argv = {
        "verdict": ["--traces", str(traces), "--rules", str(rules), "--out", str(tmp_path / "probe.json")],
        "recompute": ["--register", str(traces), "--evidence", str(tmp_path)],
    }[command]
    assert main(["probe", command, *argv]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{traces}: probe register key 'run' is 7" in err[0], err
    assert not (tmp_path / "probe.json").exists()


# ------------------------------------------------------------------ per-run register and verify-run


def _register_and_verify(root: Path, run: str, capsys) -> tuple[int, str, dict]:
    res = root / "results"
    run_dir = res / "runs" / run
    assert (
        main(
            [
                "run-register",
                "--run-dir",
                str(run_dir),
                "--results",
                str(res),
                "--out",
                str(run_dir / "register.json"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    rc = main(["verify-run", "--run-dir", str(run_dir), "--results", str(res)])
    return rc, capsys.readouterr().out, json.loads((run_dir / "register.json").read_text())


def test_run_register_and_verify_run_accept(study, capsys):
    rc, out, reg = _register_and_verify(study, "c2-paired-s0", capsys)
    assert rc == 0 and out.startswith("c2-paired-s0: ACCEPT")
    # hand-worked at_training curve of s0 paired: .5 .75 1 (AUC .75); two training steps
    assert (
        reg["curves"]["at_training"] == {"0": 0.5, "4": 0.75, "8": 1.0} and reg["auc"]["at_training"] == 0.75
    )
    assert reg["luck_share"]["0"]["lam"] == 1.0 and [r["step"] for r in reg["training_curve"]] == [0, 1]
    assert "NOT the paper's" in out  # the hand-built pools are labelled


def test_run_register_of_several_runs_writes_each_runs_bytes(study, capsys):
    """`run-register --runs` (one surrogate-scale job per chunk of seeds) writes, for every run, the very
    bytes that the one-run form writes; a bad run in the chunk writes none of them."""
    res = study / "results"
    single = {}
    for run in RUNS:
        out = study / f"single-{run}.json"
        assert (
            main(
                [
                    "run-register",
                    "--run-dir",
                    str(res / "runs" / run),
                    "--results",
                    str(res),
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        single[run] = out.read_bytes()
    outs = [str(res / "runs" / run / "register.json") for run in RUNS]
    assert main(["run-register", "--runs", *RUNS, "--results", str(res), "--out", *outs]) == 0
    assert {run: (res / "runs" / run / "register.json").read_bytes() for run in RUNS} == single
    assert len(set(single.values())) == len(RUNS)
    for run in RUNS:
        (res / "runs" / run / "register.json").unlink()
    (res / "runs" / RUNS[-1] / "complete.json").unlink()
    capsys.readouterr()
    assert main(["run-register", "--runs", *RUNS, "--results", str(res), "--out", *outs]) == 1
    assert f"runs/{RUNS[-1]}/complete.json" in capsys.readouterr().err
    assert not any((res / "runs" / run / "register.json").exists() for run in RUNS)
    for bad in (
        ["--runs", RUNS[0], "--run-dir", str(res / "runs" / RUNS[0])],
        ["--runs", RUNS[0], "--out", "x.json", "y.json"],
        ["--run-dir", str(res / "runs" / RUNS[0])],
        [],
    ):
        assert main(["run-register", *bad, "--results", str(res)]) == 1
        assert "run-register: error: " in capsys.readouterr().err


@pytest.mark.parametrize("change", ["edit", "stray"])
def test_verify_run_rejects(study, capsys, change):
    ev = study / "results" / "evals" / "c2-paired-s0"
    if change == "edit":
        _rewrite(ev / "final-step8-clean.jsonl", lambda rows: [{**r, "true_success": True} for r in rows])
        needle = "evals/final-step8-clean.jsonl: sha256 differs"
    else:
        shutil.copy(ev / "final-step8-clean.jsonl", ev / "final-step4-clean.jsonl")
        needle = "evals/final-step4-clean.jsonl: not listed in complete.json"
    run_dir = study / "results" / "runs" / "c2-paired-s0"
    rc = main(["verify-run", "--run-dir", str(run_dir), "--results", str(study / "results")])
    out = capsys.readouterr().out
    assert rc == 3 and out.startswith("c2-paired-s0: REJECT") and needle in out


def test_verify_run_reads_the_register_through_its_typed_reader(study, capsys):
    """verify-run reads register.json through records.read_run_register: a register of another shape is
    one line naming the file and the key (exit 1), not a report built from whatever it holds."""
    _register_and_verify(study, "c2-paired-s0", capsys)
    run_dir = study / "results" / "runs" / "c2-paired-s0"
    path = run_dir / "register.json"
    register = json.loads(path.read_text())
    register["auc"]["at_training"] = "0.75"
    path.write_text(json.dumps(register))
    rc = main(["verify-run", "--run-dir", str(run_dir), "--results", str(study / "results")])
    captured = capsys.readouterr()
    assert rc == 1 and captured.out == "" and "Traceback" not in captured.err
    assert captured.err.strip().splitlines() == [
        f"paired-rollouts verify-run: error: {path}: auc.at_training is '0.75', expected a finite number or null"
    ]


# ------------------------------------------------------------------ the checks agree with the producers


def test_records_from_the_real_row_builders_pass_completeness(sim_tasks_dir, tmp_path):
    """The identity checks (design seeds, training rows) accept exactly what the evaluation, diagnostic
    and training row builders produce on the real pools, and reject one record moved off its row."""
    from paired_rollouts.design import PHASE_REGIMES
    from paired_rollouts.evaluation.evaluate import diagnostic_rows, evaluation_rows
    from paired_rollouts.settings import Settings
    from paired_rollouts.stats.completeness import ExpectedEvidence, check_run
    from paired_rollouts.training.rows import build_rows

    PERIODIC, FINAL = PHASE_REGIMES["periodic"], PHASE_REGIMES["final"]

    run, cond, arm, seed = "c2-paired-s1", "C2", "paired", 1
    base = Settings.parse(
        {
            "task_filter": "simple_id",
            "training": {
                "steps": 2,
                "checkpoint_every": 2,
                "prompts_per_step": 2,
                "num_generations": 4,
                "micro_batch": 8,
            },
            "evaluation": {"eval_tasks": 2, "final_tasks": 2},
            "diagnostics": {
                "pool": "validation",
                "tasks": 2,
                "schedules": 3,
                "samples": 2,
                "steps": {"seed0": [0], "other": [0]},
            },
        }
    )

    def episode(row, phase, step, regime):
        return _episode(
            run,
            cond,
            arm,
            seed,
            phase,
            step,
            regime,
            row["task_id"],
            row["schedule_index"],
            row["schedule_seed"],
            False,
            exposed=False,
            calls=1,
            budget=row["budget"],
        )

    evals, diags = tmp_path / "evals", tmp_path / "diagnostics"
    for step in (0, 2):
        for regime in PERIODIC:
            rows = evaluation_rows(str(sim_tasks_dir), "periodic", regime, cond, base)
            _write_rows(
                evals / f"periodic-step{step}-{regime}.jsonl",
                [episode(r, "periodic", step, regime) for r in rows],
            )
    for regime in ("clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge"):
        assert regime in FINAL
        rows = evaluation_rows(str(sim_tasks_dir), "final", regime, cond, base)
        _write_rows(evals / f"final-step2-{regime}.jsonl", [episode(r, "final", 2, regime) for r in rows])
    rows = diagnostic_rows(str(sim_tasks_dir), cond, seed, base)
    _write_rows(diags / "diag-step0.jsonl", [episode(r, "diagnostic", 0, "diag") for r in rows])
    from paired_rollouts.backoffice.tasks import load_pool, select_tasks

    train = select_tasks(load_pool(sim_tasks_dir / "train.jsonl"), "simple_id")
    groups = [
        {
            "run": run,
            "step": r["step"],
            "group": r["group"],
            "row_index": r["row_index"],
            "task_id": r["task_id"],
            "schedule_seed": r["schedule_seed"],
            "schedule_seeds": [r["schedule_seed"]] * 4,
            "true_success": [False] * 4,
            "observed_reward": [0.0] * 4,
            "advantages": [0.0] * 4,
        }
        for r in build_rows(train, cond, arm, seed, 2, 2)
    ]
    _write_rows(tmp_path / "groups.jsonl", groups)
    manifest = json.loads((sim_tasks_dir / "MANIFEST.json").read_text())
    (tmp_path / "manifest.json").write_text(
        json.dumps(run_manifest(run, {k: v["sha256"] for k, v in manifest["pools"].items()}, code="x"))
    )
    # what the workflow's completeness job derives from these settings and the run's name
    expected = ExpectedEvidence.of_run(run, base)

    def check():
        return check_run(
            run,
            expected,
            evals_dir=evals,
            diagnostics_dir=diags,
            groups_path=tmp_path / "groups.jsonl",
            run_manifest_path=tmp_path / "manifest.json",
            data_manifest_path=sim_tasks_dir / "MANIFEST.json",
        )

    out = check()
    assert out["complete"], (out["missing"], out["defects"])
    assert out["paper_pools"] is True
    assert out["episodes_expected"] == 2 * (2 * 2 + 2 * 2 + 2 * 1) + (4 * 2 * 4 + 2 * 1) + 2 * 3 * 2
    assert ExpectedEvidence.from_record(out["settings"]) == expected  # complete.json records what it expected
    groups[1]["task_id"], groups[2]["task_id"] = groups[2]["task_id"], groups[1]["task_id"]
    _write_rows(tmp_path / "groups.jsonl", groups)
    out = check()
    assert not out["complete"] and any("training row" in d.get("problem", "") for d in out["defects"])


def _write_rows(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


@pytest.mark.parametrize(
    ("run", "episodes"),
    [
        ("c2-paired-s0", 27_592),
        ("c0-clean-s0", 27_592),
        ("c2-independent-s1", 26_568),
        ("c4-paired-s0", 28_392),
    ],
)
def test_paper_runs_expect_the_documented_episodes(run, episodes):
    """The evidence a paper-scale run must hold, derived from config/config.yaml and the design as the
    completeness job derives it, has docs/analysis.md's episode totals, training rollouts included (C4 adds
    its at-training final set)."""
    import yaml
    from paired_rollouts.settings import Settings, stage_settings
    from paired_rollouts.stats.completeness import ExpectedEvidence

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    steps = config["scales"]["paper"]["diagnostics"]["steps"]
    settings = stage_settings(
        config, "paper", "h100", "training", "evaluation", "diagnostics", diagnostics={"steps": steps}
    )
    expected = ExpectedEvidence.of_run(run, Settings.parse(settings))
    periodic, final, diag = expected.periodic, expected.final, expected.diagnostic
    count = len(periodic.steps) * periodic.tasks * sum(map(len, periodic.regimes.values()))
    count += final.tasks * sum(map(len, final.regimes.values()))
    count += len(diag.steps) * diag.tasks * diag.schedules * diag.samples
    training = expected.training
    assert (training.steps, training.prompts, training.generations) == (100, 24, 8)
    assert (
        count + training.steps * training.prompts * training.generations == episodes
    )  # with the training rollouts


def test_decide_check_catches_a_register_rewritten_consistently(study, capsys):
    """The reader judges a register's verdicts from its own numbers; ``decide --check`` judges the numbers:
    recomputed from the evidence, compared key by key, nothing written."""
    from paired_rollouts.errors import UserError
    from paired_rollouts.records import read_decision_register

    reg = decide(study, "C2", RUNS)
    path = study / "dec.json"
    written = path.read_bytes()
    assert decide(study, "C2", RUNS, extra=["--check"]) == reg and path.read_bytes() == written
    assert "equal to its recomputation" in capsys.readouterr().out
    run = next(iter(reg["secondary"]["auc"]))
    regime = next(k for k, v in reg["secondary"]["auc"][run].items() if v is not None)
    reg["secondary"]["auc"][run][regime] += 0.125  # a number no verdict reads back: the reader takes it
    path.write_text(json.dumps(reg))
    read_decision_register(path)
    with pytest.raises(AssertionError):
        decide(study, "C2", RUNS, extra=["--check"])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "differs from its recomputation" in err[0], err
    assert "(secondary)" in err[0]
    with pytest.raises(UserError):  # the reader alone cannot tell, the check can
        from paired_rollouts.stats.commands import _check_decision

        _check_decision(path, json.loads(written))
