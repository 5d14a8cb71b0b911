"""A decision register's verdicts rest on the evidence it names: the frozen rules (when here, with the
recorded sha256), H1a's thresholds and expected rate, every run and seed pair in every block, its
admission under 'missing', its summaries and each run's luck share against its luck file. Each edit
below (one per hole an audit found) is refused with one line naming the file; the registers as
``paired-rollouts decide`` wrote them still read. The predictions register and the power table are
checked against the registers they name."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from paired_rollouts import records
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    from records_fixtures import synthetic_study

    root = tmp_path_factory.mktemp("evidence")
    paths = synthetic_study(root)
    return root, paths


def _refused(root: Path, data: dict[str, Any], says: str, name: str = "edited.json") -> None:
    path = root / "results" / "decisions" / name
    path.write_text(json.dumps(data))
    with contextlib.chdir(root), pytest.raises(UserError) as err:
        records.read_decision_register(path)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and says in text and "\n" not in text, text


def _register(root: Path, condition: str) -> dict[str, Any]:
    return json.loads((root / "results" / "decisions" / f"{condition}.json").read_text())


def test_the_registers_decide_wrote_read_with_their_rules_and_luck_files_here(study):
    root, paths = study
    with contextlib.chdir(root):  # rules.yaml is here: thresholds and luck shares are recomputed
        for path in paths["decisions"]:
            assert records.read_decision_register(path).decided
    for path in paths["decisions"]:  # from elsewhere the register is checked against itself
        records.read_decision_register(path)


# ---------------------------------------------------------------- 1, 2: the frozen rules


@pytest.mark.parametrize(
    ("condition", "edit", "says"),
    [
        ("c4", lambda b: b["rule"].update(independent_within=0.9), "H1a.rule.independent_within is 0.9"),
        ("c4", lambda b: b["rule"].update(paired_at_most=0.5), "H1a.rule.paired_at_most is 0.5"),
        ("c4", lambda b: b.update(q=0.3), "H1a.q is 0.3"),
        ("c2", lambda b: b["rule"].update(lambda_at_least=0.0), "H1a.rule.lambda_at_least is 0.0"),
        ("c2", lambda b: b["rule"].update(lower_bound_above=-1.0), "H1a.rule.lower_bound_above is -1.0"),
    ],
)
def test_h1a_thresholds_are_the_frozen_rules(study, condition, edit, says):
    root, _ = study
    data = _register(root, condition)
    edit(data["H1a"])
    _refused(root, data, says)


def test_h1a_expected_rate_is_recomputed_from_q_and_g(study):
    root, _ = study
    data = _register(root, "c4")
    data["H1a"]["expected_independent_rate"] = 0.9
    _refused(root, data, "H1a.expected_independent_rate is 0.9, but q")


def test_a_register_without_rules_source_is_refused(study):
    root, _ = study
    data = _register(root, "c2")
    del data["rules_source"]
    _refused(root, data, "missing key 'rules_source'")


def test_rules_here_with_another_sha256_are_refused(study):
    root, _ = study
    data = _register(root, "c2")
    data["rules_sha256"] = "0" * 64
    data["H2a"]["rule"]["mean_at_least"] = -1.0
    _refused(root, data, "decided under other rules than rules.yaml")


# ---------------------------------------------------------------- 3: H1a covers every run


def test_h1a_with_a_run_left_out_is_refused(study):
    root, _ = study
    data = _register(root, "c2")
    h = data["H1a"]
    for part in ("runs", "luck_share_step0", "seed_sharing"):
        del h[part]["c2-paired-s0"]
    h.update(runs_meeting_luck=3, runs_meeting_sharing=3)
    _refused(root, data, "H1a.runs covers")


def test_h1a_without_its_seed_sharing_is_refused(study):
    root, _ = study
    data = _register(root, "c2")
    del data["H1a"]["seed_sharing"]
    _refused(root, data, "H1a.seed_sharing is missing")


# ---------------------------------------------------------------- 4: every seed pair in every block


@pytest.mark.parametrize("name", ["H2a", "H3", "H5"])
def test_a_block_on_fewer_seeds_is_refused(study, name):
    root, _ = study
    data = _register(root, "c2")
    block = data[name]
    for k, v in list(block.items()):
        if (
            isinstance(v, list)
            and len(v) == 2
            and k not in ("ci95", "difference_ci90", "auc_difference_ci95")
        ):
            block[k] = v[:1]
    _refused(root, data, f"{name}.seeds [0] are not the register's seeds [0, 1]")


def test_seeds_and_runs_are_the_seed_pairs(study):
    root, _ = study
    data = _register(root, "c2")
    data["seeds"] = [5, 6]
    _refused(root, data, "are not the seeds of its seed_pairs")


# ---------------------------------------------------------------- 5: missing against acceptance


def test_a_run_not_admitted_cannot_sit_in_a_decided_register(study):
    root, _ = study
    data = _register(root, "c2")
    data["acceptance"]["c2-paired-s0"].update(admitted=False, reasons=["completeness check failed"])
    _refused(root, data, "seed_pairs")


def test_an_admission_problem_is_listed_under_missing(study):
    root, _ = study
    data = _register(root, "c2")
    data["acceptance"]["c2-paired-s0"]["admitted"] = False
    _refused(root, data, "acceptance.c2-paired-s0.admitted is false with reasons []")


# ---------------------------------------------------------------- 6: summaries and luck files


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d["H2a"].update(auc_paired_mean=0.99), "H2a.auc_paired_mean 0.99"),
        (lambda d: d["H2a"].update(final_independent_mean=0.01), "H2a.final_independent_mean 0.01"),
        (
            lambda d: d["H2a"].update(auc_difference_positive_seeds=7),
            "H2a.auc_difference_positive_seeds is 7",
        ),
        (lambda d: d["H3"].update(difference_positive_seeds=7), "H3.difference_positive_seeds is 7"),
        (lambda d: d["H3"].update(ci95=[0.9, 0.1]), "H3.ci95 [0.9, 0.1] has its lower end above"),
        (lambda d: d["H1a"].update(luck_share_step0_min=0.99), "H1a.luck_share_step0_min is 0.99"),
        (lambda d: d["H1a"].update(luck_share_step0_lower_min=0.9), "H1a.luck_share_step0_lower_min is 0.9"),
    ],
)
def test_summaries_are_their_values(study, edit, says):
    root, _ = study
    data = _register(root, "c2")
    edit(data)
    _refused(root, data, says)


def test_a_luck_share_is_its_luck_file(study):
    root, _ = study
    data = _register(root, "c2")
    for share in data["H1a"]["luck_share_step0"].values():
        share["lam"] = 0.5
    data["H1a"]["luck_share_step0_min"] = 0.5
    _refused(root, data, "H1a.luck_share_step0.c2-independent-s0 is not its luck file")


def test_a_luck_interval_is_recomputed_with_the_rules_here(study):
    root, _ = study
    data = _register(root, "c2")
    data["H1a"]["luck_share_step0"]["c2-paired-s1"]["ci95"] = [1.0, 1.0001]  # the file gives [1.0, 1.0]
    _refused(root, data, "H1a.luck_share_step0.c2-paired-s1 is not its recomputation")


# ---------------------------------------------------------------- 7: predictions


@pytest.fixture()
def predictions(study, tmp_path):
    from records_fixtures import predictions_register

    root, paths = study
    path = predictions_register([str(p) for p in paths["decisions"]], [], tmp_path / "predictions.json")
    return path, json.loads(path.read_text())


def test_predictions_as_written_read(predictions, monkeypatch):
    monkeypatch.chdir(ROOT)
    records.read_predictions(predictions[0])


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.pop("inputs"), "no 'tier_rules' and 'inputs'"),
        (
            lambda d: d["inputs"]["decisions"].update({"/nowhere/c2.json": "0" * 64}),
            "input /nowhere/c2.json not found",
        ),
        (lambda d: d.update(registers=["c2"]), "registers is not what its inputs give"),
    ],
)
def test_predictions_without_their_inputs_are_refused(predictions, monkeypatch, edit, says):
    monkeypatch.chdir(ROOT)
    path, data = predictions
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(UserError) as err:
        records.read_predictions(path)
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------- 8: power table


@pytest.fixture()
def power(study, tmp_path):
    _, paths = study
    decision = json.loads(Path(paths["decisions"][0]).read_text())
    h = {
        "condition": "C2",
        "passes_full": bool(decision["H2a"]["passes"]),
        "passes_full_recomputed": bool(decision["H2a"]["passes"]),
        "seed_pairs": 2,
        "power": {"2": 0.5, "3": 0.25},
        "passes_counted": {"2": 50, "3": 25},
        "draws": 100,
    }
    table = {
        "hypotheses": {
            "H2a": h,
            "H3": {**h, "passes_full": bool(decision["H3"]["passes"])},
            "H5": {**h, "passes_full": bool(decision["H5"]["passes"])},
        },
        "full_pairs": 2,
        "pairs": [3],
        "draws": 100,
        "seed": 1,
        "bootstrap_resamples": 200,
        "decisions": {str(paths["decisions"][0]): sha256_file(paths["decisions"][0])},
        "rules_sha256": decision["rules_sha256"],
    }
    table["hypotheses"]["H3"]["passes_full_recomputed"] = table["hypotheses"]["H3"]["passes_full"]
    return tmp_path / "power.json", table


def test_power_table_as_written_reads(power):
    path, table = power
    path.write_text(json.dumps(table))
    records.read_power_table(path)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda t: t["hypotheses"]["H2a"].update(seed_pairs=99), "hypotheses.H2a has cells at"),
        (lambda t: t.update(full_pairs=99), "full_pairs 99 is not the fewest"),
        (lambda t: t.update(rules_sha256="f" * 64), "rules_sha256 is not"),
        (
            lambda t: t["hypotheses"]["H2a"].update(
                passes_full_recomputed=not t["hypotheses"]["H2a"]["passes_full"]
            ),
            "hypotheses.H2a.passes_full_recomputed is",
        ),
        (lambda t: t["hypotheses"].pop("H5"), "hypotheses ['H2a', 'H3'] of C2 are not those"),
        (
            lambda t: t["hypotheses"]["H2a"]["passes_counted"].update({"3": 250}),
            "power is not passes_counted",
        ),
    ],
)
def test_power_table_is_checked_against_its_registers(power, edit, says):
    path, table = power
    table = copy.deepcopy(table)
    edit(table)
    path.write_text(json.dumps(table))
    with pytest.raises(UserError) as err:
        records.read_power_table(path)
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value) and "\n" not in str(err.value)
