"""Published versus reproduced: the published-numbers file, its loader, and `paired-rollouts compare`.

The central test builds a results root whose registers hold the paper's values (through the real
writers where one exists: bandit enumeration, scripted reference, group statistics, task manifest) and
expects every published entry to be "reproduced"; perturbing one register value must flip that entry.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from paired_rollouts.cli import main
from paired_rollouts.compare.compare import Registers, compare
from paired_rollouts.compare.published import load_published
from paired_rollouts.errors import UserError
from paired_rollouts.io import atomic_write_json, sha256_file
from paired_rollouts.prereg.rules import load_decision_rules
from paired_rollouts.probe import apply_h1b_rules
from records_fixtures import auc_gap_block, decision_register

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "data" / "published" / "paper.yaml"
TASKS = ROOT / "data" / "tasks"
C2_RUNS = [f"c2-{arm}-s{s}" for s in range(3) for arm in ("paired", "independent")]
SEEDS = (0, 1, 2)
B_STEPS, A_STEPS = [0, 20, 40, 60, 80, 100], [80, 100]


# ------------------------------------------------------------------ registers at the paper's values


def _groups(run: str, *, n: int, zero_var: int, all_correct: int = 0, spurious: int = 0) -> list[dict]:
    """Training groups (G = 8) with the given counts; paired groups share one seed, independent ones do not."""
    paired = "-paired-" in run
    out = []
    for i in range(n):
        seeds = [1000 + i] * 8 if paired else [1000 + 8 * i + j for j in range(8)]
        if i < spurious:  # all correct, one success flipped by the grader
            truth, obs = [True] * 8, [1.0] * 7 + [0.0]
        elif i < all_correct:  # all correct, nothing flipped
            truth, obs = [True] * 8, [1.0] * 8
        elif i < all_correct + zero_var:  # all failed
            truth, obs = [False] * 8, [0.0] * 8
        else:  # mixed
            truth, obs = [True, False] * 4, [1.0, 0.0] * 4
        out.append(
            {
                "run": run,
                "step": i // 24,
                "group": i % 24,
                "task_id": f"train-{i % 24:05d}",
                "schedule_seeds": seeds,
                "true_success": truth,
                "observed_reward": obs,
                "advantages": [0.0] * 8,
            }
        )
    return out


def _write_group_stats(root: Path) -> None:
    from paired_rollouts.stats.groups import group_statistics

    zero = {
        "c2-paired-s0": 1249,
        "c2-paired-s1": 1270,
        "c2-paired-s2": 1284,  # 52.0 %, 52.9 %, 53.5 %
        "c2-independent-s0": 310,
        "c2-independent-s1": 312,
        "c2-independent-s2": 318,
    }  # ~13 %
    for run, z in zero.items():
        stats = group_statistics(_groups(run, n=2400, zero_var=z), q=None)
        atomic_write_json(root / "runs" / run / "group_stats.json", stats)
    stats = group_statistics(
        _groups("c4-independent-s0", n=240, zero_var=10, all_correct=100, spurious=57), q=0.1
    )
    atomic_write_json(root / "runs" / "c4-independent-s0" / "group_stats.json", stats)


def _decision_c2() -> dict:
    """The C2 register with the original study's per-seed values (docs/records.md section 4)."""
    auc_p, auc_i = [0.6406, 0.6211, 0.6258], [0.5867, 0.6227, 0.5672]
    fin_p, fin_i = [0.6538, 0.6412, 0.71], [0.6138, 0.6312, 0.6075]
    diffs = [round(p - i, 4) for p, i in zip(auc_p, auc_i, strict=True)]
    curves = {
        "paired": {
            "at_training": [54.4, 60.4, 60.7, 67.7, 64.6, 68.0],
            "challenge": [55.7, 58.3, 67.7, 71.9, 76.6, 76.6],
        },
        "independent": {
            "at_training": [52.1, 56.0, 57.3, 58.9, 66.1, 63.5],
            "challenge": [56.3, 64.1, 64.6, 67.2, 68.2, 69.8],
        },
        "clean": {
            "at_training": [51.6, 55.9, 55.1, 57.4, 55.9, 56.6],
            "challenge": [54.7, 53.9, 57.0, 57.0, 58.6, 57.8],
        },
    }
    finals = {
        "paired": {"noisy_p025": round(sum(fin_p) / 3, 4), "challenge": 0.7221},
        "independent": {"noisy_p025": round(sum(fin_i) / 3, 4), "challenge": 0.6870},
        "clean": {"noisy_p025": 0.5641, "challenge": 0.5679},
    }
    arms = {
        arm: {
            "auc": {},
            "final": finals[arm],
            "curve": {
                reg: {str(s): v / 100 for s, v in zip(B_STEPS, vals, strict=True)}
                for reg, vals in curves[arm].items()
            },
        }
        for arm in finals
    }
    return decision_register(
        "C2",
        SEEDS,
        H2a={
            **auc_gap_block("H2a", SEEDS, auc_p, auc_i, fin_p, fin_i),
            "auc_difference_by_seed": diffs,
            "auc_difference_mean": round(sum(diffs) / 3, 4),
            "auc_difference_ci95": [-0.0039, 0.0779],
            "final_difference_mean": round((sum(fin_p) - sum(fin_i)) / 3, 4),
        },
        H3={
            **_computed("H3", [0.0729, 0.0156, 0.0729]),
            "difference_positive_seeds": 3,
            "difference_mean": 0.0538,
            "ci95": [-0.0104, 0.1215],
            "steps": [40, 60, 80],
            "rule": {"mean_at_least": 0.05, "mean_criterion": True, "every_seed_positive": True},
        },
        H5={
            **_computed("H5", [0.0063, 0.01, 0.0525]),
            "difference_mean": 0.0229,
            "difference_ci90": [-0.0037, 0.0525],
            "ci90_lower": -0.0037,
            "rule": {"lower_bound_above": -0.03},
        },
        secondary={"arms": arms},
    )


def _computed(name: str, by_seed: list[float]) -> dict:
    """A computed, decided hypothesis block with its per-seed differences (the numbers added beside)."""
    return {
        "hypothesis": name,
        "computed": True,
        "passes": True,
        "seeds": list(SEEDS),
        "difference_by_seed": by_seed,
    }


INDEPENDENT = [(0, 1242, 693), (1, 1242, 693), (2, 1242, 694)]  # (seed, all-correct groups, spurious)
PAIRED = [(0, 1330), (1, 1330), (2, 1329)]


def _decision_c4() -> dict:
    auc_p, auc_i = [0.8906, 0.8523, 0.85], [0.8898, 0.832, 0.8633]
    fin_p, fin_i = [0.905, 0.885, 0.8912], [0.9025, 0.8575, 0.8788]
    diffs = [round(p - i, 4) for p, i in zip(auc_p, auc_i, strict=True)]
    at_training_i = [0.8800, 0.8400, 0.8600]
    at_training_p = [round(v + d, 4) for v, d in zip(at_training_i, [-0.001, 0.028, 0.019], strict=True)]
    final_runs = {}
    for s in range(3):
        final_runs[f"c4-paired-s{s}"] = {"at_training": at_training_p[s], "clean": fin_p[s]}
        final_runs[f"c4-independent-s{s}"] = {"at_training": at_training_i[s], "clean": fin_i[s]}
    curves = {
        "paired": [81.8, 82.5, 86.5, 87.5, 89.8, 89.8],
        "independent": [81.8, 83.6, 86.7, 85.9, 89.8, 87.8],
        "clean": [81.3, 81.6, 88.3, 92.6, 91.0, 89.5],
    }
    arms = {}
    for arm, vals in curves.items():
        final = {
            "clean": {
                "paired": round(sum(fin_p) / 3, 4),
                "independent": round(sum(fin_i) / 3, 4),
                "clean": 0.8988,
            }[arm]
        }
        if arm != "clean":
            members = [final_runs[f"c4-{arm}-s{s}"]["at_training"] for s in range(3)]
            final["at_training"] = round(sum(members) / 3, 4)
        arms[arm] = {
            "auc": {},
            "final": final,
            "curve": {"clean": {str(s): v / 100 for s, v in zip(B_STEPS, vals, strict=True)}},
        }
    rule = {
        "independent_within": 0.07,
        "independent_criterion": True,
        "paired_at_most": 0.02,
        "paired_criterion": True,
    }
    return decision_register(
        "C4",
        SEEDS,
        H1a={
            "hypothesis": "H1a",
            "computed": True,
            "passes": True,
            "luck_share_step0": {},
            "spurious_rates": {
                "independent": {"all_correct_groups": 3726, "spurious": 2080, "rate": round(2080 / 3726, 4)},
                "paired": {"all_correct_groups": 3989, "spurious": 0, "rate": 0.0},
            },
            "spurious_rate_paired": 0.0,
            "spurious_rate_independent": round(2080 / 3726, 4),
            "expected_independent_rate": 0.5695,
            "q": 0.1,
            "G": 8,
            # each run's counts, which sum to its arm's (the reader recomputes the rates from them)
            "runs": {
                **{
                    f"c4-independent-s{s}": {"all_correct_groups": n, "spurious": k}
                    for s, n, k in INDEPENDENT
                },
                **{f"c4-paired-s{s}": {"all_correct_groups": n, "spurious": 0} for s, n in PAIRED},
            },
            "rule": rule,
        },
        H2b={
            **auc_gap_block("H2b", SEEDS, auc_p, auc_i, fin_p, fin_i),
            "auc_difference_by_seed": diffs,
            "auc_difference_mean": round(sum(diffs) / 3, 4),
            "auc_difference_ci95": [-0.0286, 0.0326],
            "final_difference_mean": round((sum(fin_p) - sum(fin_i)) / 3, 4),
        },
        secondary={"arms": arms, "final": final_runs},
    )


def _luck(root: Path) -> None:
    step0 = {
        "c2-paired-s0": (0.3467, 0.2395),
        "c2-independent-s0": (0.3524, 0.2207),
        "c2-paired-s1": (0.3801, 0.2614),
        "c2-independent-s1": (0.3801, 0.2589),
        "c2-paired-s2": (0.3323, 0.2077),
        "c2-independent-s2": (0.3323, 0.2094),
    }
    step100 = dict(zip(C2_RUNS, [0.4420, 0.4805, 0.5221, 0.5310, 0.4690, 0.4950], strict=True))
    # the keys of the luck-share record beside lam and its interval (records.read_luck)
    # (the reader recomputes lam and the counts from per_task: 16 tasks, each at the run's share)
    rest = {"source_sha256": "0" * 64, "defects": [], "tasks": 16, "tasks_defined": 16}

    def per_task(lam: float) -> list[dict]:
        return [{"task_id": f"validation-{i:05d}", "lam": lam} for i in range(16)]

    for run, (lam, lo) in step0.items():
        atomic_write_json(
            root / "diagnostics" / run / "luck-step0.json",
            {"run": run, "step": 0, "lam": lam, "ci95": [lo, lam + 0.12], "per_task": per_task(lam), **rest},
        )
        atomic_write_json(
            root / "diagnostics" / run / "luck-step100.json",
            {
                "run": run,
                "step": 100,
                "lam": step100[run],
                "ci95": [0.3, 0.6],
                "per_task": per_task(step100[run]),
                **rest,
            },
        )


# The keys of the probe register's outcome summary beside the ones the paper's numbers name
# (records.read_probe_register), at neutral values; its verdict is the writer's (probe.apply_h1b_rules).
PROBE_OUTCOME = {"q": 0.1, "rhs_mean": 1.0, "clean_success": 0.5, "nonzero_share": 0.5}
RULES = "prereg/decision_rules.yaml"


def _probe(root: Path) -> None:
    out_red = {
        ("b", 0): 21,
        ("b", 20): 24,
        ("b", 40): 29,
        ("b", 60): 26,
        ("b", 80): 28,
        ("b", 100): 29,
        ("a", 80): 30,
        ("a", 100): 27,
    }
    tr_red = {
        ("b", 0): 40,
        ("b", 20): 48,
        ("b", 40): 58,
        ("b", 60): 61,
        ("b", 80): 62,
        ("b", 100): 63,
        ("a", 80): 61,
        ("a", 100): 62,
    }
    lr = dict(zip(out_red, [0.27, 0.25, 0.22, 0.21, 0.19, 0.2, 0.23, 0.24], strict=True))
    rho0 = dict(zip(out_red, [0.039, 0.05, 0.072, 0.06, 0.055, 0.045, 0.041, 0.066], strict=True))
    mask = dict(zip(out_red, [0.29, 0.31, 0.37, 0.33, 0.3, 0.35, 0.32, 0.34], strict=True))
    removed = dict(zip(out_red, [0.73, 0.81, 0.75, 0.78, 0.8, 0.76, 0.74, 0.79], strict=True))
    within_t = dict(zip(out_red, [0.87, 0.875, 0.88, 0.872, 0.878, 0.871, 0.879, 0.8764], strict=True))
    for traj, steps, run in (("a", A_STEPS + [0], "c2-paired-s0"), ("b", B_STEPS, "c2-paired-s1")):
        checkpoints = {}
        for step in steps:
            c = (traj, step) if (traj, step) in out_red else ("b", 0)
            ti, tt = 1.0e5, 1.2e5
            checkpoints[str(step)] = {
                "step": step,
                "counts": {"rho_zero_fraction": rho0[c]},
                "outcome": {
                    **PROBE_OUTCOME,
                    "lhs_mean": lr[c],
                    "lhs_over_rhs": lr[c],
                    "mean_centered": {
                        "ratio_paired_over_independent": 1 - out_red[c] / 100,
                        "ratio_within_paired_over_independent": 1 - removed[c],
                        "trace_var": {"independent": ti, "paired": (1 - out_red[c] / 100) * ti},
                        "trace_var_within": {
                            "independent": mask[c] * ti,
                            "paired": (1 - removed[c]) * mask[c] * ti,
                        },
                        "identity_residual": 1.2e-11,
                    },
                    "implemented": {
                        "ratio_paired_over_independent": 0.8,
                        "trace_var": {"independent": 1.0, "paired": 0.8},
                    },
                },
                "transition": {
                    "mean_centered": {
                        "ratio_paired_over_independent": 1 - tr_red[c] / 100,
                        "ratio_paired_over_stratified": 1 - tr_red[c] / 100,
                        "trace_var": {
                            "independent_resampled": tt,
                            "stratified": tt,
                            "paired": (1 - tr_red[c] / 100) * tt,
                        },
                        "trace_var_within": {"independent_resampled": within_t[c] * tt},
                    },
                    "implemented": {
                        "ratio_paired_over_independent": 1.044 if (traj, step) == ("b", 40) else 0.7,
                        "ratio_paired_over_stratified": 0.7,
                        "trace_var": {
                            "independent_resampled": 1.0,
                            "stratified": (1.044 if (traj, step) == ("b", 40) else 0.7) / 0.7,
                            "paired": 1.044 if (traj, step) == ("b", 40) else 0.7,
                        },
                    },
                },
            }
        register = {"trajectory": traj, "run": run, "steps": sorted(steps), "checkpoints": checkpoints}
        h1b = load_decision_rules(RULES)["h1b"]
        atomic_write_json(
            root / "probe" / f"{traj}.json", apply_h1b_rules(register, h1b, RULES, sha256_file(RULES))
        )


def _real_writers(root: Path) -> None:
    """Registers that the pipeline computes identically at every scale."""
    from paired_rollouts.probe.bandit import bandit_enumeration

    atomic_write_json(root / "probe" / "bandit.json", bandit_enumeration())
    assert (
        main(
            [
                "reference",
                "--tasks-dir",
                str(TASKS),
                "--out",
                str(root / "reference" / "scripted_reference.json"),
            ]
        )
        == 0
    )


@pytest.fixture(scope="module")
def paper_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("paper-results")
    _real_writers(root)
    _write_group_stats(root)
    atomic_write_json(root / "decisions" / "c2.json", _decision_c2())
    atomic_write_json(root / "decisions" / "c4.json", _decision_c4())
    _luck(root)
    _probe(root)
    return root


# ------------------------------------------------------------------ tests


def test_published_file_holds_every_family_the_paper_reports():
    pub = load_published(PAPER)
    ids = {e.id for e in pub.entries}
    for seed in range(3):
        for cond in ("c2", "c4"):
            for name in (
                "auc.paired",
                "auc.independent",
                "auc.difference",
                "final.paired",
                "final.independent",
            ):
                assert f"{cond}.{name}.s{seed}" in ids
    for name in (
        "c2.auc.difference.ci95.low",
        "c4.auc.difference.ci95.high",
        "h3.difference.mean",
        "h3.difference.ci95.low",
        "h5.difference.ci90.low",
        "luck.step0.range",
        "luck.step100.range",
        "spurious.independent.count",
        "spurious.paired.all_correct",
        "zero_variance.c2.paired.range",
        "probe.lhs_over_rhs.range",
        "probe.b40.transition.sw.ratio",
        "curve.c4.clean.clean.step100",
    ):
        assert name in ids
    values = {e.id: e.value for e in pub.entries}
    assert (values["spurious.independent.count"], values["spurious.independent.all_correct"]) == (2080, 3726)
    assert (values["spurious.paired.count"], values["spurious.paired.all_correct"]) == (0, 3989)
    assert sum(e.id.startswith("bandit.") for e in pub.entries) >= 10
    assert sum(e.id.startswith("probe.") and e.id.endswith(".reduction") for e in pub.entries) == 16
    # the pool hashes the paper's registers record are the ones the committed pools have
    manifest = json.loads((TASKS / "MANIFEST.json").read_text())
    for pool in ("train", "validation", "test", "diagnostic"):
        assert values[f"pools.{pool}.sha256"] == manifest["expected_sha256"][pool]
    assert pub.budget["episodes_per_run"] == 27000 and pub.budget["gpu_hours_per_run"] == 16.3


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda e: e.update(extra=1), "unknown fields"),
        (lambda e: e.update(op="median"), "op 'median'"),
        (lambda e: e.update(keys=["decisions/c2.json"]), "FILE.json:DOTTED.PATH"),
        (lambda e: e.update(rounding=0), "rounding must be a positive"),
        (lambda e: e.pop("where"), "missing fields ['where']"),
        (lambda e: e.update(keys=["a.json:x", "b.json:y"]), "takes 1 key"),
    ],
)
def test_loader_rejects_a_malformed_entry_naming_it(tmp_path, edit, message):
    doc = yaml.safe_load(PAPER.read_text())
    edit(doc["entries"][3])
    bad = tmp_path / "paper.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match="entry 3") as exc:
        load_published(bad)
    assert message in str(exc.value)


def test_loader_rejects_a_duplicate_id(tmp_path):
    doc = yaml.safe_load(PAPER.read_text())
    doc["entries"].append(copy.deepcopy(doc["entries"][0]))
    bad = tmp_path / "paper.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(UserError, match="appears twice"):
        load_published(bad)


def test_registers_at_the_papers_values_reproduce_every_entry(paper_root):
    out = compare(load_published(PAPER), Registers(paper_root, TASKS), scale="paper", scale_label="paper")
    bad = [
        (r["id"], r["reproduced"], r["published"], r["reason"])
        for r in out["entries"]
        if r["status"] != "reproduced"
    ]
    assert bad == []
    assert out["summary"]["reproduced"] == out["summary"]["entries"] == len(load_published(PAPER).entries)
    assert out["mismatch_expected"] is False


def test_a_perturbed_register_value_is_reported_as_differing(paper_root, tmp_path):
    import shutil

    root = tmp_path / "r"
    shutil.copytree(paper_root, root)
    reg = json.loads((root / "decisions" / "c2.json").read_text())
    # the paper prints +0.037; every seed's paired AUC raised alike, so the register stays consistent
    h2a = reg["H2a"]
    h2a["auc_paired"] = [round(v + 0.0014, 4) for v in h2a["auc_paired"]]
    h2a["auc_difference_by_seed"] = [round(v + 0.0014, 4) for v in h2a["auc_difference_by_seed"]]
    h2a["auc_difference_mean"] = 0.0384
    h2a["auc_paired_mean"] = round(h2a["auc_paired_mean"] + 0.0014, 4)
    reg["H3"]["ci95"][1] = 0.1260  # +12.6 points, the paper prints +12.2
    atomic_write_json(root / "decisions" / "c2.json", reg)
    rows = {
        r["id"]: r
        for r in compare(load_published(PAPER), Registers(root, TASKS), scale="paper", scale_label="paper")[
            "entries"
        ]
    }
    assert rows["c2.auc.difference.mean"]["status"] == "differs"
    assert rows["c2.auc.difference.mean"]["difference"] == pytest.approx(0.0014)
    assert rows["h3.difference.ci95.high"]["status"] == "differs"
    assert rows["c2.auc.difference.ci95.low"]["status"] == "reproduced"


def test_reference_bandit_and_pools_reproduce_at_every_scale(tmp_path):
    """A results root with none of the runs: the scale-free numbers still reproduce, the rest say why not."""
    _real_writers(tmp_path)
    out_path = tmp_path / "comparison.json"
    assert (
        main(
            [
                "compare",
                "--results",
                str(tmp_path),
                "--published",
                str(PAPER),
                "--tasks-dir",
                str(TASKS),
                "--scale-name",
                "standin",
                "--scale",
                "stand-in",
                "--out",
                str(out_path),
            ]
        )
        == 0
    )
    out = json.loads(out_path.read_text())
    rows = {r["id"]: r for r in out["entries"]}
    scale_free = [i for i in rows if i.startswith(("bandit.", "reference.", "pools."))]
    assert len(scale_free) >= 24
    assert all(rows[i]["status"] == "reproduced" for i in scale_free), [
        rows[i] for i in scale_free if rows[i]["status"] != "reproduced"
    ]
    assert rows["reference.test.recovering.clean.calls"]["reproduced"] == pytest.approx(6.6033, abs=1e-4)
    other = [r for i, r in rows.items() if i not in scale_free]
    assert all(
        r["status"] == "not computed" and r["reason"].startswith("cannot be computed at stand-in scale")
        for r in other
    )
    assert out["mismatch_expected"] is True and "a mismatch is expected" in out["summary"]["text"]


def test_compare_refuses_a_missing_results_root(tmp_path, capsys):
    code = main(
        [
            "compare",
            "--results",
            str(tmp_path / "nope"),
            "--published",
            str(PAPER),
            "--scale-name",
            "paper",
            "--scale",
            "paper",
            "--out",
            str(tmp_path / "c.json"),
        ]
    )
    assert code == 1 and "results root not found" in capsys.readouterr().err
    assert not (tmp_path / "c.json").exists()


def _set(path: Path, dotted: str, value) -> None:
    data = json.loads(path.read_text())
    *head, last = dotted.split(".")
    obj = data
    for part in head:
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    if value is KeyError:
        del obj[last]
    else:
        obj[last] = value
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "file, dotted, value, needle",
    [
        ("decisions/c2.json", "decided", KeyError, "missing key 'decided' in the decision register"),
        ("decisions/c4.json", "seeds", "0,1,2", "decision register key 'seeds' is '0,1,2'"),
        ("probe/a.json", "checkpoints", [], "probe register key 'checkpoints' is []"),
        ("diagnostics/c2-paired-s0/luck-step0.json", "lam", "0.35", "'lam' is '0.35'"),
        ("runs/c2-paired-s1/group_stats.json", "G", KeyError, "missing key 'G' in the group statistics"),
        ("probe/bandit.json", "lhs", "0.05", "bandit register key 'lhs' is '0.05'"),
        ("probe/bandit.json", "contrast_variance.paired", KeyError, "contrast_variance has designs"),
        (
            "reference/scripted_reference.json",
            "results.test.clean.naive.mean_calls",
            True,
            "results.test.clean.naive: scripted reference register key 'mean_calls' is True",
        ),
        ("tasks/MANIFEST.json", "pools.train.sha256", "2bbec1c5", "pools.train: pool manifest key 'sha256'"),
    ],
)
def test_a_malformed_register_stops_the_comparison_with_its_readers_line(
    paper_root, tmp_path, capsys, file, dotted, value, needle
):
    """Each register compare reads goes through its reader in the records package: a register of another shape is one
    line naming the file (not "not computed" rows, not a traceback), and no comparison is written."""
    import shutil

    root, tasks = tmp_path / "r", tmp_path / "tasks"
    shutil.copytree(paper_root, root)
    tasks.mkdir()
    shutil.copy(TASKS / "MANIFEST.json", tasks / "MANIFEST.json")
    path = (tasks / file.removeprefix("tasks/")) if file.startswith("tasks/") else root / file
    _set(path, dotted, value)
    out = tmp_path / "comparison.json"
    argv = ["compare", "--results", str(root), "--published", str(PAPER), "--tasks-dir", str(tasks)]
    code = main([*argv, "--scale-name", "paper", "--scale", "paper", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and not out.exists()
    assert len(err.strip().splitlines()) == 1 and str(path) in err and needle in err, err


def test_a_published_key_on_a_file_without_a_reader_is_refused(tmp_path):
    raw = yaml.safe_load(PAPER.read_text())
    raw["entries"][0]["keys"] = ["runs/c2-paired-s0/stray.json:lam"]
    path = tmp_path / "paper.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(
        UserError, match=r"entry '[^']+' reads runs/c2-paired-s0/stray\.json, which is no reg"
    ):
        compare(load_published(path), Registers(tmp_path), scale="paper", scale_label="paper")


# ------------------------------------------------------------------ the cost ledger


def _bench(path: Path, seconds: float, rss: float, cpu: float) -> Path:
    """A benchmark file written by Snakemake's own writer."""
    from snakemake.benchmark import BenchmarkRecord, write_benchmark_records

    path.parent.mkdir(parents=True, exist_ok=True)
    record = BenchmarkRecord(
        running_time=seconds,
        max_rss=rss,
        max_vms=rss,
        max_uss=rss,
        max_pss=rss,
        io_in=0.0,
        io_out=0.0,
        cpu_usage=cpu,
        cpu_time=cpu,
    )
    record.data_collected = True  # as after a sampled job
    write_benchmark_records([record], str(path), False)
    return path


def test_ledger_sums_stages_and_runs_and_counts_gpu_hours_on_gpu_profiles(tmp_path):
    from paired_rollouts.compare.ledger import build_ledger

    root = tmp_path / "benchmarks"
    files = [
        _bench(root / "train" / "c2-paired-s0.tsv", 3600.0, 900.0, 3000.0),
        _bench(root / "train" / "c2-independent-s0.tsv", 1800.0, 1200.0, 1500.0),
        _bench(root / "evaluate" / "c2-paired-s0" / "final-step100-clean.tsv", 720.0, 500.0, 600.0),
        _bench(root / "decide" / "c2.tsv", 10.0, 300.0, 9.0),
        _bench(root / "render" / "table3.tsv", 2.0, 100.0, 1.5),
    ]
    budget = load_published(PAPER).budget
    cpu = build_ledger(files, tmp_path, "cpu", budget, runs=2)
    assert cpu["stages"]["train"] == {
        "jobs": 2,
        "wall_s": 5400.0,
        "cpu_s": 4500.0,
        "peak_rss_mb": 1200.0,
        "gpu_hours": None,
    }
    assert cpu["runs"]["c2-paired-s0"]["jobs"] == 2 and cpu["runs"]["c2-paired-s0"]["wall_s"] == 4320.0
    assert cpu["total"]["wall_s"] == 6132.0 and cpu["total"]["peak_rss_mb"] == 1200.0
    assert cpu["gpu_hours_per_run"] is None and cpu["published_budget"]["gpu_hours_per_run"] == 16.3
    gpu = build_ledger(files, tmp_path, "h100", budget, runs=2)
    assert gpu["stages"]["train"]["gpu_hours"] == 1.5 and gpu["stages"]["decide"]["gpu_hours"] == 0.0
    assert gpu["total"]["gpu_hours"] == 1.7 and gpu["gpu_hours_per_run"] == 0.85


def test_ledger_names_a_file_that_is_not_a_benchmark(tmp_path):
    from paired_rollouts.compare.ledger import build_ledger

    bad = tmp_path / "train" / "x.tsv"
    bad.parent.mkdir()
    bad.write_text("a\tb\n1\t2\n")
    with pytest.raises(UserError, match="not a Snakemake benchmark file"):
        build_ledger([bad], tmp_path, "cpu", None)
