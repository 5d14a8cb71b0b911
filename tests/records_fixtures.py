"""Small synthetic records in the exact shapes their writers produce (the typed readers in
``paired_rollouts.records`` refuse any other shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paired_rollouts.design import PAPER_CONDITIONS, TIER1_HYPOTHESES, parse_run
from paired_rollouts.io import sha256_file


def run_manifest(
    run: str,
    pools_sha256: dict[str, str],
    code: str = "abc",
    *,
    steps: int = 2,
    prompts: int = 2,
    generations: int = 4,
    p: float = 0.25,
    q: float = 0.0,
    device: str = "cpu",
    versions: dict[str, str | None] | None = None,
    attempts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A run manifest as training/grpo.py writes it (the keys records.read_run_manifest reads)."""
    ident = parse_run(run)
    return {
        "run": run,
        "condition": ident.condition,
        "arm": ident.arm,
        "seed": ident.seed,
        "settings": {
            "steps": steps,
            "prompts_per_step": prompts,
            "num_generations": generations,
            "diagnostic_steps": {"seed0": [0], "other": [0]},
        },
        "noise": {"p": p, "q": q},
        "pools_sha256": dict(pools_sha256),
        "versions": versions if versions is not None else {"python": "3.11.7", "torch": "2.6.0"},
        "hardware": {"device": device},
        "code": {"sources_sha256": code},
        "attempts": attempts if attempts is not None else [{"attempt": 1, "status": "complete"}],
        "timings": [],
    }


def verification_report(passes: bool = True, failures: list[str] | None = None) -> dict[str, Any]:
    """A verification report as prereg/verify.py writes it (the keys records.read_verification reads):
    one freeze record stamped by two authorities, both tokens verified by both checkers."""
    token = {"gen_time": "2026-11-29T10:44:00Z", "openssl": {"ok": True}, "rfc3161_client": {"ok": True}}
    return {
        "format": "paired-rollouts-prereg-verification/1",
        "passes": passes,
        "failures": list(failures or []) if passes else list(failures or ["a document changed"]),
        "imprint": "ab" * 32,
        "documents": [{"path": "prereg/decision_rules.yaml", "sha256": "cd" * 32, "matches": True}],
        "records": [{"record": "freeze", "tokens": [dict(token, name="tsa-a"), dict(token, name="tsa-b")]}],
        "test_authority": True,
    }


def decision_register(condition: str = "C2", seeds=(0, 1), **blocks: Any) -> dict[str, Any]:
    """A decision register in the shape ``paired-rollouts decide`` writes, with every key beside the
    hypothesis ``blocks`` given (H1a, H2a, ..., secondary); an empty secondary block unless given."""
    secondary = {
        "threshold": 0.5,
        "threshold_curve": "at_training",
        "steps": [],
        "steps_to_threshold": {},
        "steps_to_threshold_by_arm": {},
        "auc": {},
        "final": {},
        "recovery_success": {},
        "exposure": {},
        "arms": {},
        "curves": {},
        "clean_reference": None,
    }
    key = condition.lower()
    pairs = [[f"{key}-paired-s{s}", f"{key}-independent-s{s}"] for s in seeds]
    # decide writes every hypothesis block of its condition, computed or not: a block not given here is
    # one that could not be computed
    kind = PAPER_CONDITIONS[condition].kind
    absent = {
        name: {
            "hypothesis": name,
            "passes": None,
            "computed": False,
            "reason": "not computed in this fixture",
        }
        for name in TIER1_HYPOTHESES.get(kind, ())
        if name not in blocks
    }
    return {
        "condition": condition,
        "runs": [run for pair in pairs for run in pair],
        "seeds": list(seeds),
        "design_seeds": list(seeds),
        "seed_pairs": pairs,
        "bootstrap": {"resamples": 1000, "seed": 20260911},
        "pool_sha256": {},
        "paper_pools": True,
        "rules_source": "prereg/decision_rules.yaml",
        "rules_sha256": sha256_file(Path(__file__).resolve().parents[1] / "prereg" / "decision_rules.yaml"),
        "acceptance": {
            run: {"admitted": True, "checked": True, "reasons": []} for pair in pairs for run in pair
        },
        "missing": [],
        "ignored_runs": [],
        "complete": True,
        "decided": True,
        **absent,
        **blocks,
        "secondary": {**secondary, **blocks.get("secondary", {})},
    }


def auc_gap_block(name: str, seeds, auc_paired, auc_independent, final_paired, final_independent) -> dict:
    """A computed H2 block (H2a, H2b) as ``stats.decisions.hypothesis_h2`` writes it, from its per-seed
    values; the means and differences computed here as there (rounded to 4 decimals)."""

    def mean(values):
        return round(sum(values) / len(values), 4)

    auc_d = [round(p - i, 4) for p, i in zip(auc_paired, auc_independent, strict=True)]
    fin_d = [round(p - i, 4) for p, i in zip(final_paired, final_independent, strict=True)]
    # the frozen rule's criteria from these numbers, and its verdict (every criterion is required)
    rule = {
        "mean_at_least": 0.03,
        "mean_criterion": sum(auc_d) / len(auc_d) >= 0.03,
        "every_seed_positive": all(d > 0 for d in auc_d),
        "final_direction": mean(final_paired) >= mean(final_independent),
    }
    return {
        "hypothesis": name,
        "computed": True,
        "passes": rule["mean_criterion"] and rule["every_seed_positive"] and rule["final_direction"],
        "validation_set": "at_training",
        "final_set": "noisy_p025",
        "tasks": 64,
        "final_tasks": 200,
        "seeds": list(seeds),
        "auc_paired": list(auc_paired),
        "auc_independent": list(auc_independent),
        "auc_difference_by_seed": auc_d,
        "auc_difference_positive_seeds": sum(d > 0 for d in auc_d),
        "auc_paired_mean": mean(auc_paired),
        "auc_independent_mean": mean(auc_independent),
        "auc_difference_mean": mean(auc_d),
        "auc_difference_ci95": [None, None],
        "final_paired_by_seed": list(final_paired),
        "final_independent_by_seed": list(final_independent),
        "final_difference_by_seed": fin_d,
        "final_paired_mean": mean(final_paired),
        "final_independent_mean": mean(final_independent),
        "final_difference_mean": mean(fin_d),
        "rule": rule,
    }


def run_registers(results, out) -> list:
    """Run registers of every run under ``results/evals``, built by the stats stage's own
    ``build_register`` (so a renamed register key fails the render tests), written to ``out/runs/RUN``
    with a copy of the run's manifest and of its evaluation files under ``out/evals/RUN`` (a register
    is read only beside the evidence it is recomputed from)."""
    import json
    import shutil
    from pathlib import Path

    from paired_rollouts.io import sha256_file
    from paired_rollouts.stats.run_register import build_register

    results, out = Path(results), Path(out)
    paths = []
    for evals in sorted(p for p in (results / "evals").iterdir() if p.is_dir()):
        run_dir = out / "runs" / evals.name
        run_dir.mkdir(parents=True, exist_ok=True)
        manifest = results / "runs" / evals.name / "manifest.json"
        if manifest.is_file():  # beside its register, so that tables pair them by results tree
            (run_dir / "manifest.json").write_bytes(manifest.read_bytes())
        shutil.copytree(evals, out / "evals" / evals.name, dirs_exist_ok=True)
        files = {f"evals/{f.name}": sha256_file(f) for f in sorted(evals.glob("*.jsonl"))}
        (run_dir / "complete.json").write_text(
            json.dumps(
                {
                    "run": evals.name,
                    "complete": True,
                    "files": files,
                    "task_pools": {},
                    "code_versions": ["abc"],
                    "missing": [],
                    "defects": [],
                }
            )
        )
        (run_dir / "register.json").write_text(json.dumps(build_register(run_dir, out)))
        paths.append(run_dir / "register.json")
    return paths


def predictions_register(
    decisions: list, probes: list, out, tier_rules="prereg/tier_rules.yaml", group_size=4
):
    """The predictions register of the given decision and probe registers, judged by the stats stage's
    own ``judge`` on the repository's tier rules; written to ``out``."""
    import json
    from pathlib import Path

    from paired_rollouts.prereg.rules import load_tier_rules
    from paired_rollouts.records import read_decision_register, read_probe_register
    from paired_rollouts.stats.curves import round4
    from paired_rollouts.stats.predictions import judge

    register = judge(
        load_tier_rules(tier_rules),
        {Path(p).stem: read_decision_register(p) for p in decisions},
        {Path(p).stem: read_probe_register(p) for p in probes},
        group_size,
        source=str(tier_rules),
    )
    # what stats/commands.py's predictions writes beside the verdicts (records.read_predictions judges
    # them again from it)
    register["tier_rules"] = str(tier_rules)
    register["inputs"] = {
        "decisions": {str(p): sha256_file(p) for p in decisions},
        "probes": {str(p): sha256_file(p) for p in probes},
        "tier_rules_sha256": sha256_file(tier_rules),
        "group_size": group_size,
    }
    Path(out).write_text(json.dumps(round4(register)))
    return Path(out)


def synthetic_study(root) -> dict:
    """A small study (C2 and C4, seeds 0 and 1, both arms) whose every register is written by the stats
    stage's own commands from synthetic episode records: completeness, luck share, group statistics,
    run registers, the conditions' curves registers and the C2 and C4 decisions. Returns {input key:
    [paths]}."""
    from pathlib import Path

    from paired_rollouts.cli import main
    from test_stats_decisions import completeness, decide, luck, make_pools, make_run

    root = Path(root)
    res = root / "results"
    pools = make_pools(root)
    runs = {
        c: [make_run(root, c, arm, s, pools) for s in (0, 1) for arm in ("paired", "independent")]
        for c in ("C2", "C4")
    }
    everyone = [r for c in runs for r in runs[c]]
    for run in everyone:
        luck(root, run)
        assert completeness(root, run)["complete"], run
        assert (
            main(
                [
                    "group-stats",
                    "--groups",
                    str(res / "runs" / run / "groups.jsonl"),
                    "--out",
                    str(res / "runs" / run / "group_stats.json"),
                ]
            )
            == 0
        )
    for c in runs:
        decide(root, c, runs[c], out_name=f"results/decisions/{c.lower()}.json")
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.stats.run_register import build_register

    for run in everyone:
        atomic_write_json(res / "runs" / run / "register.json", build_register(res / "runs" / run, res))
    for c in runs:
        registers = [str(res / "runs" / run / "register.json") for run in runs[c]]
        stats = [str(res / "runs" / run / "group_stats.json") for run in runs[c]]
        out = res / "curves" / f"{c.lower()}.json"
        command = ["curves-register", "--registers", *registers, "--group-stats", *stats, "--out", str(out)]
        if c == "C4":  # table 8's differences of the C4 means to C2's
            command += ["--compare", str(res / "curves" / "c2.json")]
        assert main(command) == 0
    manifests = sorted(res.glob("runs/*/manifest.json"))
    registers = sorted(res.glob("runs/*/register.json"))
    cross = res / "cross_stack.json"
    command = ["cross-stack", "--manifests", *map(str, manifests), "--registers", *map(str, registers)]
    assert main([*command, "--out", str(cross)]) == 0
    return {
        "cross_stack": [cross],
        "episodes": sorted(res.glob("evals/*/*.jsonl")),
        "manifests": sorted(res.glob("runs/*/manifest.json")),
        "group_stats": sorted(res.glob("runs/*/group_stats.json")),
        "luck": sorted(res.glob("diagnostics/*/luck-step*.json")),
        "registers": sorted(res.glob("runs/*/register.json")),
        "curves": sorted(res.glob("curves/*.json")),
        "decisions": [res / "decisions" / "c2.json", res / "decisions" / "c4.json"],
        "replay": replay_registers(res, ["c2-paired-s0", "c2-independent-s0"]),
    }


def replay_registers(res, runs, diverged=("c2-independent-s0",)) -> list:
    """Replay registers (R/replay/RUN/step2.json) written by the replay check's own episode and summary
    code from synthetic rolls: 3 episodes each, the runs in ``diverged`` with the second roll's third
    episode diverging at turn 1, token 2 (and changing its outcome)."""
    from pathlib import Path

    from paired_rollouts.evaluation.replay import episode_entry
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.records.replay import summarize

    out = []
    for run in runs:
        entries = []
        for i in range(3):
            record = {"task_id": f"test-{i:05d}", "schedule_index": 1, "schedule_seed": 100 + i}
            record |= {"true_success": i == 2, "observed_reward": float(i == 2), "finished": True, "calls": 2}
            turns = [[11, 12, 13], [14, 15, 16, 17]]
            second, replayed = [list(t) for t in turns], dict(record)
            if run in diverged and i == 2:
                second[1][2] = 99
                replayed |= {"true_success": False, "observed_reward": 0.0}
            entries.append(episode_entry(i, [record, replayed], [turns, second], record))
        path = Path(res) / "replay" / run / "step2.json"
        register = {
            "run": run,
            "step": 2,
            "phase": "final",
            "regime": "clean",
            "backend": "hf",
            "device": "cpu",
            "dtype": "float32",
            "engine_seed": None,
            "batches": [{"start": 0, "sampling_seed": 7, "rows": 4}],
            "files": {},
            "episodes": entries,
            "summary": summarize(entries),
        }
        atomic_write_json(path, register)
        out.append(path)
    return out
