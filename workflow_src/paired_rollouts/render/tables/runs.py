"""Tables about the runs themselves: the run matrix (1), constant-reward groups (10) and the
cross-stack replication (11)."""

from __future__ import annotations

from collections import defaultdict

from paired_rollouts import records
from paired_rollouts.errors import UserError
from paired_rollouts.records import GroupStats
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    ARM_LABELS,
    NON_PAPER_POOLS,
    Context,
    TableModel,
    _num,
    _run_label,
)

# ---------------------------------------------------------------- table 1: run matrix


def run_matrix_table(ctx: Context) -> TableModel:
    table = TableModel(
        [
            Tex("Run"),
            Tex("Cond."),
            Tex("Arm"),
            Tex("Seed"),
            Tex("Noise"),
            Tex(r"Steps\,$\times$\,prompts\,$\times$\,$G$"),
            Tex("Accelerator"),
            Tex("Software stack"),
        ],
        ["l", "l", "l", "r", "l", "r", "l", r">{\raggedright\arraybackslash}p{3.7cm}"],
        size=r"\footnotesize",
        tabcolsep="3pt",
    )
    from paired_rollouts.backoffice.tasks import PAPER_POOL_SHA256

    manifests = sorted(
        (records.read_run_manifest(p) for p in ctx.inputs.files("manifests")),
        key=lambda m: src.run_order(m.run, m.condition, m.arm, m.seed),
    )
    if any(
        PAPER_POOL_SHA256.get(name) != digest for m in manifests for name, digest in m.pools_sha256.items()
    ):
        table.extra_notes.append(fmt.escape(NON_PAPER_POOLS))
    last_condition = None
    gap = "not recorded in the run manifest"
    for manifest in manifests:
        if manifest.condition != last_condition:
            if last_condition is not None:
                table.rule()
            last_condition = manifest.condition
        versions = manifest.versions
        order = ["torch", "transformers", "trl", "vllm", "peft"]
        shown = [f"{name} {versions[name]}" for name in order if name in versions]
        accelerator = manifest.device
        if manifest.gpu and manifest.gpu != manifest.device:
            accelerator = f"{manifest.device} ({manifest.gpu})"
        parts = [
            f"${name}={fmt.prop(value, 2)}$"
            for name, value in (("p", manifest.p), ("q", manifest.q))
            if value
        ]
        noise = Tex(", ".join(parts) if parts else "none")
        sizes = [manifest.steps, manifest.prompts_per_step, manifest.num_generations]
        table.add(
            [
                _run_label(manifest.run),
                manifest.condition,
                manifest.arm,
                fmt.integer(manifest.seed),
                noise,
                Tex("\\,$\\times$\\,".join(fmt.integer(v) for v in sizes)),
                fmt.escape(accelerator),
                fmt.join(shown, "; ") if shown else fmt.missing(table.notes, gap),
            ]
        )
    return table


# ---------------------------------------------------------------- table 10: constant-reward groups


def spurious_formula(q: float, g: int) -> float:
    """Chance that an all-correct group of G shows differing observed rewards: 1-(1-q)^G-q^G."""
    return 1.0 - (1.0 - q) ** g - q**g


def _seed_sharing(passes: bool | None, notes: fmt.Notes) -> Tex:
    if passes is True:
        return Tex("as designed")
    if passes is False:
        return Tex("\\textbf{violated}")
    return fmt.missing(notes, "not applicable (clean arm)")


def _group_row(table: TableModel, stats: GroupStats) -> list:
    expected = stats.expected_spurious_rate
    return [
        _run_label(stats.run),
        fmt.integer(stats.groups),
        fmt.prop(stats.zero_variance_frac, 3, table.notes, "no groups"),
        fmt.integer(stats.all_correct_groups),
        fmt.integer(stats.spurious_groups),
        fmt.prop(stats.spurious_among_all_correct, 3, table.notes, "no all-correct group"),
        fmt.prop(
            expected.rate if expected is not None else None,
            3,
            table.notes,
            "no outcome-noise level q given to group-stats",
        ),
        _seed_sharing(stats.seed_sharing.passes, table.notes),
    ]


def _pooled_row(table: TableModel, key: tuple[str, str], members: list[GroupStats], pools: dict) -> list:
    """The arm's group statistics pooled over exactly the runs shown (the curves register's)."""
    runs = sorted(stats.run for stats in members)
    if key not in pools:
        raise UserError(
            f"table 10: no curves register among the inputs holds the {key[0]} {key[1]} pooled group "
            f"statistics; pass results/curves/{key[0].lower()}.json built with --group-stats"
        )
    block, path = pools[key]
    if block.runs != runs:
        raise UserError(
            f"{path}: the {key[0]} {key[1]} group statistics are pooled over "
            f"{', '.join(block.runs)} but the group statistics given are of {', '.join(runs)}; "
            "rebuild it (curves-register --group-stats) or pass the matching files"
        )
    return [
        Tex(r"\textit{pooled}"),
        fmt.integer(block.groups),
        fmt.prop(block.zero_variance_frac, 3, table.notes, "no groups"),
        fmt.integer(block.all_correct_groups),
        fmt.integer(block.spurious_groups),
        fmt.prop(block.spurious_among_all_correct, 3, table.notes, "no all-correct group"),
        "",
        "",
    ]


def constant_reward_table(ctx: Context) -> TableModel:
    table = TableModel(
        [
            Tex("Run"),
            Tex("Groups"),
            Tex("Const."),
            Tex("All-correct"),
            Tex("Spurious"),
            Tex("Rate"),
            Tex("Expected"),
            Tex("Seeds"),
        ],
        ["l", "r", "r", "r", "r", "r", "r", "l"],
        groups=[(Tex(""), 2), (Tex("fraction"), 1), (Tex("all-correct groups"), 4), (Tex(""), 1)],
        size=r"\small",
    )
    stats = sorted(
        (records.read_group_stats(p) for p in ctx.inputs.files("group_stats")),
        key=lambda s: src.run_order(s.run, s.condition, s.arm, s.seed),
    )
    if not stats:
        raise UserError("table 10: no --input group_stats=PATH given")
    pools = src.pooled_groups(ctx.inputs.files("curves"), "table 10")
    by_arm: dict[tuple[str, str], list[GroupStats]] = defaultdict(list)
    for one in stats:
        by_arm[(one.condition, one.arm)].append(one)
    for index, (key, members) in enumerate(by_arm.items()):
        if index:
            table.rule()
        table.section(f"{key[0]}, {ARM_LABELS.get(key[1], key[1])}")
        for one in members:
            table.add(_group_row(table, one))
        if len(members) > 1:
            table.add(_pooled_row(table, key, members, pools))
    table.extra_notes.append(
        Tex(
            "Const.: fraction of groups whose observed rewards are all equal (zero advantage). Rate: spurious "
            "groups (all rollouts truly correct, observed rewards differ) among all-correct groups. Expected: "
            "$1-(1-q)^G-q^G$ for independent grader flips; a paired design gives 0 by construction."
        )
    )
    return table


# ---------------------------------------------------------------- table 11: cross-stack replication


def cross_stack_table(ctx: Context) -> TableModel:
    table = TableModel(
        [Tex("Run"), Tex("Stack"), Tex("AUC"), Tex("clean"), Tex("$p=0.25$"), Tex("held-out")],
        ["l", "l", "r", "r", "r", "r"],
        groups=[(Tex(""), 2), (Tex("validation"), 1), (Tex("final test success"), 3)],
        size=r"\small",
    )
    files = ctx.inputs.files("cross_stack")
    if len(files) != 1:
        raise UserError(f"table 11: give one --input cross_stack=PATH (got {len(files)})")
    register = records.read_cross_stack(files[0])
    if not register.replications:
        labels = register.stacks
        table.add([Tex(r"\textit{not run}"), fmt.escape("; ".join(labels) or "no manifest"), "", "", "", ""])
        table.extra_notes.append(
            fmt.escape(
                f"No run of this study was repeated on a second accelerator stack ({register.manifests} run "
                f"manifest(s), stack(s): {', '.join(labels) or 'none'}); the comparison is not run at this scale."
            )
        )
        return table
    sets = ("clean", "noisy_p025", "heldout_types")
    for index, entry in enumerate(register.replications):
        if index:
            table.rule()
        for run in entry.runs:
            row = [run.auc] + [run.final.get(r) for r in sets]
            table.add(
                [_run_label(run.run), fmt.escape(run.stack)]
                + [fmt.prop(_num(v), 3, table.notes, "no run register given") for v in row]
            )
        if entry.difference is not None:
            row = [entry.difference.auc] + [entry.difference.final.get(r) for r in sets]
            table.add(
                [Tex(r"\textit{difference}"), ""]
                + [fmt.signed(_num(v), 3, table.notes, "no run register given") for v in row]
            )
    return table
