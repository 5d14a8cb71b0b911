"""CLI: ``probe bandit`` (exact aligned-scalar bandit) ``probe checkpoint`` and ``probe assemble`` (the gradient probe)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from paired_rollouts import cli_args as A
from paired_rollouts.errors import UserError


def _bandit(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.bandit import bandit_enumeration, format_bandit

    result = bandit_enumeration()
    if args.out:
        from paired_rollouts.io import atomic_write_json

        atomic_write_json(args.out, result)
        print(format_bandit(result))
    elif args.json:
        print(json.dumps(result, sort_keys=True, indent=2))
    else:
        print(format_bandit(result))
    return 0


def _checkpoint(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.scores import probe_checkpoint_cli  # torch lives there; import lazily

    return probe_checkpoint_cli(args)


def _assemble(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.scores import assemble_cli

    return assemble_cli(args)


def _verdict(args: argparse.Namespace) -> int:
    from paired_rollouts.io import atomic_write_json, sha256_file
    from paired_rollouts.prereg.rules import load_decision_rules
    from paired_rollouts.probe import apply_h1b_rules
    from paired_rollouts.records import read_probe_register

    rules = load_decision_rules(args.rules)
    traces = read_probe_register(args.traces, verdict=False).raw  # rewritten whole, with a new verdict
    try:
        out = apply_h1b_rules(traces, rules["h1b"], str(args.rules), sha256_file(args.rules))
    except UserError as exc:
        raise UserError(f"{args.traces}: {exc}") from exc
    except (KeyError, TypeError) as exc:
        raise UserError(
            f"{args.traces}: malformed probe register ({exc}); rerun 'paired-rollouts probe assemble'"
        ) from exc
    atomic_write_json(args.out, out)
    v = out["verdict"]
    print(
        f"{out.get('trajectory')}: H1b passes={v['passes']} (outcome {v['outcome_wins']}/{v['checkpoints']}, "
        f"transition {v['transition_wins']}/{v['checkpoints']}; rules {args.rules}) -> {args.out}"
    )
    return 0


def _recompute(args: argparse.Namespace) -> int:
    from paired_rollouts.probe.evidence import recompute_register
    from paired_rollouts.records import read_probe_register

    register = read_probe_register(args.register).raw  # every checkpoint's numbers, recomputed whole
    rows = recompute_register(register, args.evidence, args.tolerance)
    for row in rows:
        print(
            f"step {row['step']}: max |difference| {row['max_abs_difference']:.3g}"
            + (f" at {row['where']}" if row["where"] else "")
            + (" OK" if row["ok"] else " MISMATCH")
        )
    ok = all(r["ok"] for r in rows)
    where = " ".join(map(str, args.evidence))
    print(
        f"{args.register}: {'reproduced' if ok else 'NOT reproduced'} within {args.tolerance:g} from {where}"
    )
    return 0 if ok else 1


def register(subparsers) -> None:
    probe = subparsers.add_parser(
        "probe",
        help="gradient-covariance probe (H1b) and the exact aligned-scalar bandit",
        description="Gradient probe sub-commands: 'bandit' prints the closed example, 'checkpoint' probes one checkpoint, 'assemble' "
        "builds a trajectory's register, 'verdict' applies the frozen rules, 'recompute' checks it.",
    )
    sub = probe.add_subparsers(dest="probe_command", required=True, metavar="PROBE_COMMAND")

    p = sub.add_parser(
        "bandit",
        help="exact numbers of the aligned-scalar bandit (p=0.5, G=8, q=0.1)",
        description="Enumerate all 2^8 action tuples through the probe's outcome code and "
        "print contrast variances, MC/SW covariance traces, expected updates, "
        "lhs/rhs and the orthogonal-score case.",
        epilog="JSON shape: docs/records.md section 6.4.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--out", type=Path, default=None, help="also write the JSON to this file (results/probe/bandit.json)"
    )
    p.set_defaults(handler=_bandit)

    p = sub.add_parser(
        "checkpoint",
        help="probe one checkpoint of a run (needs the train extra: torch)",
        description="Capture clean and diagnostic rollouts at one checkpoint, score them group by "
        "group (streamed into the Gram products), and write that checkpoint's summary. "
        "One checkpoint per process: one generation engine per process.",
        epilog="Output shape: docs/records.md section 6 (one entry of 'checkpoints', plus run, step).",
    )
    A.add_run(p, "the run probed, e.g. c2-paired-s0 (its condition and seed choose the groups' schedules)")
    A.add_conditions(p)
    p.add_argument("--run-dir", required=True, type=Path, help="results/runs/RUN (its checkpoints)")
    p.add_argument("--step", required=True, type=int, help="checkpoint step, e.g. 80")
    p.add_argument("--model-dir", required=True, type=Path, help="results/models/MODEL (base weights)")
    A.add_tasks_dir(p, type=Path)
    A.add_settings(p, f"probe design: {A.SETTINGS_HELP}")
    p.add_argument(
        "--evidence",
        type=Path,
        default=None,
        help="also write this checkpoint's evidence (per-group Gram matrices, rewards, weights, index "
        "lists, the running vectors' Gram) to this .npz, for 'probe recompute'",
    )
    p.add_argument("--out", required=True, type=Path, help="results/probe/TRAJECTORY/stepN.json")
    p.set_defaults(handler=_checkpoint)

    p = sub.add_parser(
        "assemble",
        help="the trajectory's probe register from its checkpoint files",
        description="Combine the per-checkpoint files of one trajectory into the probe register "
        "(with the H1b verdict under the default rules; 'probe verdict' applies the frozen ones).",
        epilog="Output shape: docs/records.md section 6.",
    )
    p.add_argument("--trajectory", required=True, help="trajectory name")
    p.add_argument("--run", required=True, help="the trajectory's run, e.g. c2-paired-s0")
    p.add_argument(
        "--inputs", required=True, nargs="+", type=Path, help="results/probe/TRAJECTORY/stepN.json ..."
    )
    A.add_settings(p, f"probe design (recorded in the register): {A.SETTINGS_HELP}")
    p.add_argument("--out", required=True, type=Path, help="results/probe/traces/TRAJECTORY.json")
    p.set_defaults(handler=_assemble)

    p = sub.add_parser(
        "recompute",
        help="reproduce a probe register's summaries from its evidence (no GPU)",
        description="Rebuild every checkpoint's T_ref, outcome and transition summaries from the "
        "stored per-group Gram matrices, rewards, importance weights, index lists and "
        "token counts (taking the running vectors' Gram as stored) with numpy alone, and compare with the register. Exit 1 if any number differs by more "
        "than --tolerance.",
    )
    p.add_argument("--register", required=True, type=Path, help="results/probe/TRAJECTORY.json (or traces/)")
    p.add_argument(
        "--evidence",
        required=True,
        nargs="+",
        type=Path,
        help="results/probe/evidence/TRAJECTORY/stepN.npz ... (or that folder)",
    )
    p.add_argument(
        "--tolerance", type=float, default=1e-6, help="largest allowed |difference| (default 1e-6)"
    )
    p.set_defaults(handler=_recompute)

    p = sub.add_parser(
        "verdict",
        help="apply the frozen H1b rule (rules file's h1b block) to probe traces",
        description="Recompute the H1b verdict of a probe register under the estimator and the "
        "outcome/transition rules of the frozen rules file; cheap, no model needed, "
        "so editing the rules reruns only this step, not the probe.",
        epilog="Output shape: docs/records.md section 6.3.",
    )
    p.add_argument("--traces", required=True, type=Path, help="results/probe/traces/TRAJECTORY.json")
    A.add_decision_rules(p)
    p.add_argument("--out", required=True, type=Path, help="results/probe/TRAJECTORY.json")
    p.set_defaults(handler=_verdict)
