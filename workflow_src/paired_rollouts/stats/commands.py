"""CLI: ``luck-share``, ``group-stats``, ``completeness`` and ``decide``."""

from __future__ import annotations

import argparse
from pathlib import Path

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError


def _luck_share(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, sha256_file
    from paired_rollouts.records import read_episodes
    from paired_rollouts.stats.luck_share import luck_share_file, single_value, step_from_path

    records = [r for r in read_episodes(args.episodes) if r["phase"] == "diagnostic"]
    if not records:
        raise UserError(
            f"{args.episodes}: no diagnostic episode records; run the diagnostic evaluation first"
        )
    run = single_value(records, "run", args.episodes)
    step = single_value(records, "step", args.episodes)
    if step is None:
        step = step_from_path(args.episodes)
    out = luck_share_file(
        records,
        run=run,
        step=step,
        source=str(args.episodes),
        source_sha256=sha256_file(args.episodes),
        resamples=args.resamples,
        seed=args.seed,
        schedules=args.schedules,
        samples=args.samples,
        tasks=args.tasks,
    )
    atomic_write_json(args.out, out)
    lam = out["lam"]
    print(
        f"{run} step {step}: lam={lam if lam is None else round(lam, 4)} "
        f"({out['tasks_defined']}/{out['tasks']} tasks defined, {len(out['defects'])} defects) -> {args.out}"
    )
    return 0


def _group_stats(args: argparse.Namespace) -> int:
    from paired_rollouts.design import parse_conditions, parse_run
    from paired_rollouts.io import atomic_write_json, sha256_file
    from paired_rollouts.records import read_groups
    from paired_rollouts.stats.groups import group_statistics

    records = read_groups(args.groups)
    q = None
    if records and isinstance(records[0].get("run"), str):
        # the outcome-noise rate of the run's condition (design): the closed-form spurious rate needs q > 0
        conditions = parse_conditions(args.conditions)
        condition = conditions.get(parse_run(records[0]["run"], conditions).condition)
        q = condition.q if condition is not None and condition.q > 0 else None
    out = group_statistics(records, source=str(args.groups), source_sha256=sha256_file(args.groups), q=q)
    atomic_write_json(args.out, out)
    print(
        f"{out['run']}: {out['groups']} groups, zero-variance {out['zero_variance_frac']:.4f}, "
        f"spurious {out['spurious_groups']}/{out['all_correct_groups']} all-correct -> {args.out}"
    )
    return 0


def _completeness(args: argparse.Namespace) -> int:
    from paired_rollouts.design import parse_conditions
    from paired_rollouts.io import atomic_write_json, load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.stats.completeness import ExpectedEvidence, check_run

    if args.settings is not None:
        settings = Settings.parse(load_settings(args.settings))
        ExpectedEvidence.derivable_from(settings)
        expected = ExpectedEvidence.of_run(args.run, settings, parse_conditions(args.conditions))
    else:
        expected = ExpectedEvidence.from_record(load_settings(args.expected, "--expected"))
    expected.require_some()
    out = check_run(
        args.run,
        expected,
        evals_dir=args.evals,
        diagnostics_dir=args.diagnostics,
        groups_path=args.groups,
        run_manifest_path=args.run_manifest,
        data_manifest_path=args.manifest,
        tasks_dir=args.tasks_dir,
        luck_paths=args.luck,
    )
    atomic_write_json(args.out, out)
    print(
        f"{args.run}: complete={out['complete']} ({len(out['missing'])} missing, {len(out['defects'])} defects, "
        f"{out['episodes_found']}/{out['episodes_expected']} episodes) -> {args.out}"
    )
    if args.strict and not out["complete"]:
        import sys

        for item in (out["missing"] + out["defects"])[:10]:
            print(f"  {item}", file=sys.stderr)
        print(
            f"paired-rollouts completeness: error: {args.run} is incomplete; the protocol reruns it, it is "
            "never analysed (see the entries above)",
            file=sys.stderr,
        )
        return 2
    return 0


def _design_evidence(args: argparse.Namespace, conditions):
    """run name -> the evidence the design calls for (--settings with the run's name, or --expected
    spelled out for every run); None when neither is given."""
    from paired_rollouts.io import load_settings
    from paired_rollouts.settings import Settings
    from paired_rollouts.stats.completeness import ExpectedEvidence

    if args.settings is not None:
        settings = Settings.parse(load_settings(args.settings))
        ExpectedEvidence.derivable_from(settings)
        return lambda run: ExpectedEvidence.of_run(run, settings, conditions)
    if args.expected is not None:
        spelled = ExpectedEvidence.from_record(load_settings(args.expected, "--expected"))
        return lambda run: spelled
    return None


def _decide(args: argparse.Namespace) -> int:
    from paired_rollouts.design import Comparison, comparison_name, decided_comparisons, parse_conditions
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.prereg.rules import load_rules
    from paired_rollouts.records import read_pool_manifest
    from paired_rollouts.stats.decisions import decide, load_episodes, load_groups, load_inputs

    rules = load_rules(args.rules)
    if args.verification is not None:
        from paired_rollouts.prereg.verify import require_covered

        require_covered(args.verification, args.rules)  # an edited rules file is refused here
    manifest = read_pool_manifest(args.manifest)
    conditions = parse_conditions(args.conditions)
    comparison = None
    if args.comparison is not None:
        if args.condition not in conditions:
            raise UserError(
                f"--condition {args.condition}: not among the design's conditions ({', '.join(conditions)})"
            )
        name = comparison_name(args.condition, args.arms[0], args.arms[1], args.scaling)
        if args.comparison != name or name.upper() in decided_comparisons():
            raise UserError(
                f"--comparison {args.comparison}: the comparison of {args.condition} {' vs '.join(args.arms)} "
                f"(scaling {args.scaling}) is named {name}"
                + ("; tier 1 decides it: drop --comparison" if name.upper() in decided_comparisons() else "")
            )
        comparison = Comparison(
            args.comparison,
            args.condition,
            args.arms[0],
            args.arms[1],
            args.scaling,
            tuple(args.seeds or ()),
            2,
        )
    elif args.condition.upper() not in decided_comparisons():
        raise UserError(
            f"--condition {args.condition}: tier 1 decides {' and '.join(decided_comparisons())}; "
            "give --comparison for a tier"
        )
    complete, luck = load_inputs(args.complete, args.luck)
    sources = [p for p in [*args.episodes, *args.reference_episodes] if p]
    design = _design_evidence(args, conditions)
    register = decide(
        args.condition,
        load_episodes(sources),
        rules,
        manifest,
        groups=load_groups(args.groups),
        luck=luck,
        complete=complete,
        expected_seeds=args.seeds,
        comparison=comparison,
        conditions=conditions,
        design_evidence=design,
        rules_verified=args.verification is not None,
    )
    if args.check:
        return _check_decision(args.out, register)
    atomic_write_json(args.out, register)
    if comparison is not None:
        gap = register["auc_gap"]
        print(
            f"{comparison.name}: AUC gap {gap.get('auc_difference_mean')} over {len(register['seeds'])} seed "
            f"pairs; complete={register['complete']} -> {args.out}"
        )
        return 0
    verdicts = ", ".join(
        f"{k}={register[k]['passes']}" for k in ("H1a", "H2a", "H2b", "H3", "H5") if k in register
    )
    print(f"{register['condition']}: {verdicts}; complete={register['complete']} -> {args.out}")
    return 0


def _check_decision(path: Path, register: dict) -> int:
    """``decide --check``: the register at ``path`` against its recomputation from the evidence (its reader
    judges the verdicts from the register's own numbers; this judges the numbers). Writes nothing."""
    import json

    from paired_rollouts.records import read_decision_register
    from paired_rollouts.records.schema import differing_keys

    written = read_decision_register(path).raw
    rebuilt = json.loads(json.dumps(register))  # the register as its JSON reads back
    keys = differing_keys(written, rebuilt)
    if keys:
        raise UserError(
            f"{path}: differs from its recomputation from the evidence given ({', '.join(keys)}); "
            "rewrite it with 'paired-rollouts decide' (the same arguments without --check)"
        )
    print(f"{path}: equal to its recomputation from the evidence given")
    return 0


def _predictions(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, sha256_file
    from paired_rollouts.prereg.rules import load_tier_rules
    from paired_rollouts.records import read_decision_register, read_probe_register
    from paired_rollouts.stats.curves import round4
    from paired_rollouts.stats.predictions import judge

    tier_rules = load_tier_rules(args.tier_rules, verification=args.verification)
    decisions = {}
    for path in args.decisions:
        name = Path(path).stem
        if name in decisions:
            raise UserError(f"{path}: a second decision register named {name}; give each comparison once")
        decisions[name] = read_decision_register(path)
    probes = {Path(p).stem: read_probe_register(p) for p in args.probe}
    register = judge(tier_rules, decisions, probes, args.group_size, source=str(args.tier_rules))
    register["tier_rules"] = str(args.tier_rules)
    # what the verdicts are recomputed from by every reader (records.read_predictions)
    register["inputs"] = {
        "decisions": {str(p): sha256_file(p) for p in args.decisions},
        "probes": {str(p): sha256_file(p) for p in args.probe},
        "tier_rules_sha256": sha256_file(args.tier_rules),
        "group_size": args.group_size,
    }
    atomic_write_json(args.out, round4(register))
    counts = ", ".join(f"{k} {v}" for k, v in register["counts"].items())
    print(f"predictions: {counts}; H4 passes={register['H4']['passes']} -> {args.out}")
    return 0


def _run_register(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.layout import Layout
    from paired_rollouts.stats.run_register import build_register

    if (args.run_dir is None) == (args.runs is None):
        raise UserError("give either --run-dir DIR (one run) or --runs RUN ..., not both")
    run_dirs = (
        [args.run_dir]
        if args.run_dir is not None
        else [Layout(str(args.results)).run_dir(r) for r in args.runs]
    )
    if len(args.out or ()) != len(run_dirs):
        raise UserError(
            f"--out names {len(args.out or ())} file(s) for {len(run_dirs)} run(s); give one register file per run"
        )
    targets = list(zip(run_dirs, args.out, strict=True))
    # Several runs in one process (a surrogate-scale job covers a chunk of an arm's seeds): every register
    # is built before any is written, so a bad run leaves no register of its chunk half-updated.
    built = [(build_register(run_dir, args.results), out) for run_dir, out in targets]
    for register, out in built:
        atomic_write_json(out, register)
        print(
            f"{register['run']}: register with {len(register['curves'])} curves, {len(register['final'])} final "
            f"sets, {len(register['checkpoints'])} checkpoints -> {out}"
        )
    return 0


def _curves_register(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.stats.condition_curves import build_curves_register

    register = build_curves_register(args.registers, args.group_stats or (), args.compare or ())
    atomic_write_json(args.out, register)
    arms = ", ".join(f"{arm} ({len(block['runs'])} runs)" for arm, block in register["arms"].items())
    print(f"{register['condition']}: mean curves and final sets of {arms} -> {args.out}")
    return 0


def _cross_stack(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json
    from paired_rollouts.stats.cross_stack import build_cross_stack

    register = build_cross_stack(args.manifests, args.registers or ())
    atomic_write_json(args.out, register)
    print(
        f"cross-stack: {len(register['replications'])} replicated run(s) over {len(register['stacks'])} "
        f"stack(s) -> {args.out}"
    )
    return 0


def _verify_run(args: argparse.Namespace) -> int:
    from paired_rollouts.records import read_run_register
    from paired_rollouts.stats.run_register import format_report, verify_run

    accepted, reasons, notes = verify_run(args.run_dir, args.results)
    register_path = Path(args.run_dir) / "register.json"
    register = read_run_register(register_path) if register_path.is_file() else None
    print(format_report(Path(args.run_dir).name, accepted, reasons, notes, register))
    return 0 if accepted else 3


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "luck-share",
        help="luck share (schedule share of outcome variance) of one diagnostic checkpoint",
        description="One-way random-effects luck share per diagnostic task (K schedules x M samples), "
        "its mean over tasks, the pooled ratio and a task-bootstrap 95 percent interval.",
        epilog="Output shape: docs/records.md section 1.",
    )
    p.add_argument("--episodes", required=True, type=Path, help="results/diagnostics/RUN/diag-stepN.jsonl")
    p.add_argument("--out", required=True, type=Path, help="results/diagnostics/RUN/luck-stepN.json")
    p.add_argument("--resamples", type=A.positive, default=10000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=20260911, help="bootstrap seed (default 20260911)")
    p.add_argument(
        "--schedules", type=A.positive, default=None, help="expected K (default: the most common found)"
    )
    p.add_argument(
        "--samples", type=A.positive, default=None, help="expected M (default: the most common found)"
    )
    p.add_argument("--tasks", type=A.positive, default=None, help="expected number of diagnostic tasks")
    p.set_defaults(handler=_luck_share)

    p = subparsers.add_parser(
        "group-stats",
        help="training-group statistics: zero variance, spurious variance, seed sharing",
        description="Summarise a run's training-group register (groups.jsonl).",
        epilog="Output shape: docs/records.md section 2.",
    )
    p.add_argument("--groups", required=True, type=Path, help="results/runs/RUN/groups.jsonl")
    p.add_argument("--out", required=True, type=Path, help="results/runs/RUN/group_stats.json")
    A.add_conditions(p)
    p.set_defaults(handler=_group_stats)

    from paired_rollouts.stats.completeness import EXPECTED_HELP

    p = subparsers.add_parser(
        "completeness",
        help="check that a run's evidence is complete and consistent",
        description="Compare a run's episode files, diagnostic files, training groups and manifests "
        "with the evidence its design calls for; writes complete.json.",
        epilog=EXPECTED_HELP + "\nOutput shape: docs/records.md section 3.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    A.add_run(p)
    expected = p.add_mutually_exclusive_group(required=True)
    A.add_settings(
        expected,
        "the scale's task_filter, training, evaluation and diagnostics sections (with the diagnosed "
        f"steps), from which the expected evidence follows: {A.SETTINGS_HELP}",
    )
    expected.add_argument(
        "--expected",
        default=None,
        help="the expected evidence spelled out (the form below): inline JSON or @file",
    )
    A.add_conditions(p, f"with --settings: {A.CONDITIONS_HELP}")
    p.add_argument("--evals", "--evals-dir", dest="evals", required=True, type=Path, help="results/evals/RUN")
    p.add_argument("--diagnostics", type=Path, default=None, help="results/diagnostics/RUN")
    p.add_argument("--groups", type=Path, default=None, help="results/runs/RUN/groups.jsonl")
    p.add_argument("--run-manifest", type=Path, default=None, help="results/runs/RUN/manifest.json")
    A.add_pool_manifest(p)
    A.add_tasks_dir(p, "task pools (default: the manifest's folder)", required=False, type=Path)
    p.add_argument(
        "--luck",
        nargs="*",
        default=[],
        type=Path,
        help="results/diagnostics/RUN/luck-stepN.json files: hashed and checked against their source",
    )
    p.add_argument("--out", required=True, type=Path, help="results/runs/RUN/complete.json")
    p.add_argument("--strict", action="store_true", help="exit 2 when the run is incomplete")
    p.set_defaults(handler=_completeness)

    p = subparsers.add_parser(
        "run-register",
        help="one run's register: curves, AUC, final sets, luck, training curve, lineage",
        description="Gather one run's curves and AUC per evaluation set, final sets, luck share per "
        "diagnostic checkpoint, training curve, timing, attempts and checkpoint inventory from the "
        "files its completeness record lists.",
        epilog="Output shape: docs/records.md section 3.1.",
    )
    p.add_argument("--run-dir", type=Path, default=None, help="results/runs/RUN (one run)")
    A.add_results_root(p, "results root (default: results)")
    p.add_argument(
        "--runs",
        nargs="+",
        default=None,
        help="run names, e.g. c2-paired-s0 c2-paired-s1: each run's register in one process",
    )
    p.add_argument(
        "--out",
        type=Path,
        nargs="+",
        default=None,
        help="results/runs/RUN/register.json: one file per run (--run-dir or --runs, in order)",
    )
    p.set_defaults(handler=_run_register)

    p = subparsers.add_parser(
        "curves-register",
        help="one condition's mean curves and final sets per arm, over its run registers",
        description="Average the run registers' periodic curves and final sets over each arm's seeds.",
        epilog="Output shape: docs/records.md section 3.2.",
    )
    p.add_argument("--registers", nargs="+", required=True, help="results/runs/RUN/register.json files")
    p.add_argument(
        "--group-stats",
        nargs="+",
        help="results/runs/RUN/group_stats.json of the same runs (pooled per arm for table 10)",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        help="other conditions' results/curves/CONDITION.json: differences of the final means (table 8)",
    )
    p.add_argument("--out", required=True, type=Path, help="results/curves/CONDITION.json")
    p.set_defaults(handler=_curves_register)

    p = subparsers.add_parser(
        "cross-stack",
        help="runs repeated under a second accelerator stack, and their differences (table 11)",
        description="Pair the runs with one condition, arm and seed under two stacks (results trees) and "
        "take the differences of their run registers' AUC and final sets.",
        epilog="Output shape: docs/records.md section 3.3.",
    )
    p.add_argument("--manifests", nargs="+", required=True, help="RESULTS/runs/RUN/manifest.json files")
    p.add_argument("--registers", nargs="+", help="RESULTS/runs/RUN/register.json files")
    p.add_argument("--out", required=True, type=Path, help="results/cross_stack.json")
    p.set_defaults(handler=_cross_stack)

    p = subparsers.add_parser(
        "verify-run",
        help="ACCEPT or REJECT one run: re-hash its evidence, refuse unlisted files",
        description="Re-hash every file complete.json lists, refuse files it does not list, check the "
        "completeness verdict, code versions and register; prints a report. Exit 0 ACCEPT, 3 REJECT.",
    )
    p.add_argument("--run-dir", required=True, type=Path, help="results/runs/RUN")
    A.add_results_root(p, "results root (default: results)")
    p.set_defaults(handler=_verify_run)

    p = subparsers.add_parser(
        "decide",
        help="the pre-registered decisions (H1a, H2a/H2b, H3, H5) of one condition",
        description="Compute a decision register from episode records (plus optional training groups, "
        "luck-share files and completeness files). Runs are paired by seed; a run enters only "
        "if its completeness file passes and its evidence is unchanged.",
        epilog="Output shape: docs/records.md sections 4 and 5.",
    )
    p.add_argument(
        "--condition",
        required=True,
        help="C2 or C4 for tier 1; with --comparison any condition of the design (e.g. C2r)",
    )
    p.add_argument(
        "--comparison",
        default=None,
        metavar="NAME",
        help="a registered tier's comparison (e.g. c2r, c4-scale_none, c2-blocking): measured, not decided",
    )
    p.add_argument(
        "--arms",
        nargs=2,
        default=["paired", "independent"],
        metavar=("TREATMENT", "CONTROL"),
        help="with --comparison: the treatment and the control arm (default: paired independent)",
    )
    p.add_argument(
        "--scaling", default="group", choices=["group", "none"], help="with --comparison: reward scaling"
    )
    A.add_conditions(p)
    p.add_argument(
        "--episodes", required=True, nargs="+", help="episode files or folders (results/evals/...)"
    )
    p.add_argument(
        "--reference-episodes",
        nargs="*",
        default=[],
        help="clean-reference (C0) episode folders for the secondary comparisons",
    )
    p.add_argument("--groups", nargs="*", default=[], help="results/runs/RUN/groups.jsonl files")
    p.add_argument("--luck", nargs="*", default=[], help="results/diagnostics/RUN/luck-stepN.json files")
    p.add_argument("--complete", nargs="*", default=[], help="results/runs/RUN/complete.json files")
    design = p.add_mutually_exclusive_group()
    A.add_settings(
        design,
        "the scale's settings as the completeness check takes them: each complete.json must have been "
        f"checked against the evidence they call for (else the run is not admitted): {A.SETTINGS_HELP}",
    )
    design.add_argument(
        "--expected",
        default=None,
        help="instead of --settings: the expected evidence spelled out as for 'completeness --expected'",
    )
    p.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        default=None,
        help="the design's seeds; a hypothesis is decided only when every seed pair is admitted",
    )
    A.add_decision_rules(p)
    p.add_argument(
        "--verification",
        type=Path,
        default=None,
        help="results/prereg/verification.json: --rules must be covered by it with its current bytes; "
        "without it nothing is decided (the rules are unverified)",
    )
    A.add_pool_manifest(p)
    p.add_argument("--out", required=True, type=Path, help="results/decisions/{c2,c4}.json")
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing: recompute the register from the evidence given and compare it with --out "
        "(exit 1 naming the keys that differ; catches a register rewritten after decide, however "
        "consistently)",
    )
    p.set_defaults(handler=_decide)

    p = subparsers.add_parser(
        "predictions",
        help="the registered predictions (P1-P13) and H4, judged on the decision registers",
        description="Judge every prediction of the amended tier rules on the decision registers given: met, "
        "missed, not run (its register is absent) or not decided (its seed matrix is incomplete).",
        epilog="Output shape: docs/analysis.md#predictions.",
    )
    A.add_tier_rules(
        p,
        "amendment verification report: the tier rules must be covered by a verified record",
        flag="--tier-rules",
        help="prereg/tier_rules.yaml (amendment A2)",
    )
    p.add_argument(
        "--decisions",
        nargs="+",
        required=True,
        help="decision registers (decisions/c2.json, decisions/tiers/c2r.json, ...), named by file stem",
    )
    p.add_argument("--probe", nargs="*", default=[], help="probe registers (probe/a.json, ...)")
    p.add_argument("--group-size", type=int, required=True, help="the scale's rollouts per group (G)")
    p.add_argument("--out", required=True, type=Path, help="results/decisions/predictions.json")
    p.set_defaults(handler=_predictions)
