"""Table 2: the registered outcomes of tier 1 (H1a, H1b, P13, H2a/H2b, H3, H5), one row per criterion,
from the decision and probe registers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records import (
    AucGap,
    ChallengeGap,
    DecisionRegister,
    H1aOutcome,
    H1aTransition,
    HeldoutGap,
    ProbeRegister,
)
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import (
    GE,
    LE,
    NON_PAPER_POOLS,
    Context,
    TableModel,
    _decisions,
    _not_computed,
    _num,
    _verdict,
    regime_label,
)


def _outcome_rows(
    table: TableModel,
    hyp: str,
    condition: str,
    criteria: list[tuple],
    passes: bool | None,
    reason: str | None = None,
    why: str | None = None,
) -> None:
    """One hypothesis: a row per criterion (text, needed, got, interval, met); outcome on the first."""
    if reason is not None:
        table.add(
            [
                hyp,
                condition,
                "---",
                "",
                fmt.missing(table.notes, reason),
                "",
                "",
                fmt.mark(None, table.notes, reason),
            ]
        )
        return
    for index, (text, needed, got, interval, met) in enumerate(criteria):
        table.add(
            [
                Tex(r"\textbf{" + fmt.escape(hyp) + "}") if index == 0 else "",
                condition if index == 0 else "",
                text,
                needed,
                got,
                interval,
                Tex("yes" if met else "no")
                if met is not None
                else fmt.missing(table.notes, "criterion not reported"),
                fmt.mark(passes, table.notes, why or "not decided") if index == 0 else "",
            ]
        )


def _count(k: int, n: int) -> Tex:
    """``k/n`` (checkpoints, seeds or runs that meet a criterion, of all)."""
    return Tex(f"{fmt.integer(k)}/{fmt.integer(n)}")


def _majority_of(n: int) -> Tex:
    return Tex(f"$>$ {fmt.integer(n)}/2")


def _every_seed_positive(label: str, diffs: list[float], positive: int, every: bool) -> tuple:
    """The criterion row 'every seed pair's difference is positive' (H2a/H2b and H3): of the seeds
    shown, how many the register counts positive."""
    return (label, _count(len(diffs), len(diffs)), _count(positive, len(diffs)), "", every)


def _computed(table: TableModel, decision: DecisionRegister, name: str, condition: str) -> Any:
    """A decision register's block of hypothesis ``name``, or None after one row saying why it is absent."""
    block = decision.hypothesis(name)
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, name, condition, [], None, reason)
        return None
    return block


def _h1a_spurious_criteria(table: TableModel, block: H1aOutcome) -> list[tuple]:
    """H1a under grader flips: the two arms' spurious rates against the rule."""
    rule = block.rule
    return [
        (
            "spurious rate, independent arm (all-correct groups)",
            Tex(
                f"{fmt.prop(block.expected_independent_rate)}\\,$\\pm$\\,{fmt.prop(rule.independent_within)}"
            ),
            fmt.prop(block.spurious_rate_independent, 3, table.notes, "no all-correct group"),
            "",
            rule.independent_criterion,
        ),
        (
            "spurious rate, paired arm",
            Tex(f"{LE} {fmt.prop(rule.paired_at_most)}"),
            fmt.prop(block.spurious_rate_paired, 3, table.notes, "no all-correct group"),
            "",
            rule.paired_criterion,
        ),
    ]


def _h1a_luck_criteria(table: TableModel, block: H1aTransition) -> list[tuple]:
    """H1a under tool faults: every run's step-0 luck share and seed sharing."""
    rule = block.rule
    n = len(block.runs)
    luck_ok, share_ok = block.runs_meeting_luck, block.runs_meeting_sharing
    return [
        (
            "luck share at step 0, smallest over runs",
            Tex(f"{GE} {fmt.prop(rule.lambda_at_least)}"),
            fmt.prop(block.luck_share_step0_min, 3, table.notes, "no luck share defined"),
            "",
            luck_ok == n and n > 0,
        ),
        (
            Tex("lower 95\\,\\% bound of the luck share, smallest"),
            Tex(f"$>$ {fmt.prop(rule.lower_bound_above)}"),
            fmt.prop(block.luck_share_step0_lower_min, 3, table.notes, "no luck-share interval"),
            "",
            luck_ok == n and n > 0,
        ),
        (
            "runs whose groups share seeds as designed",
            _count(n, n),
            _count(share_ok, n),
            "",
            share_ok == n and n > 0,
        ),
    ]


def _h1a_rows(table: TableModel, decision: DecisionRegister) -> None:
    condition = decision.condition
    block = _computed(table, decision, "H1a", condition)
    if block is None:
        return
    if isinstance(block, H1aOutcome):
        criteria = _h1a_spurious_criteria(table, block)
    else:
        criteria = _h1a_luck_criteria(table, block)
    _outcome_rows(table, "H1a", condition, criteria, _verdict(block), why=block.reason)


def _h2_rows(table: TableModel, decision: DecisionRegister, name: str) -> None:
    condition = decision.condition
    block: AucGap | None = _computed(table, decision, name, condition)
    if block is None:
        return
    rule = block.rule
    criteria = [
        (
            f"mean AUC difference, paired $-$ independent ({regime_label(block.validation_set)})",
            Tex(f"{GE} {fmt.prop(rule.mean_at_least)}"),
            fmt.signed(block.auc_difference_mean),
            fmt.interval(block.auc_difference_ci95, notes=table.notes),
            rule.mean_criterion,
        ),
        _every_seed_positive(
            "seeds with a positive AUC difference",
            block.auc_difference_by_seed,
            block.auc_difference_positive_seeds,
            rule.every_seed_positive,
        ),
        (
            f"final success, paired $-$ independent ({regime_label(block.final_set)})",
            Tex(f"{GE} 0"),
            fmt.signed(block.final_difference_mean),
            "",
            rule.final_direction,
        ),
    ]
    criteria = [(Tex(c[0]), *c[1:]) for c in criteria]
    _outcome_rows(table, name, condition, criteria, _verdict(block), why=block.reason)


def _h3_rows(table: TableModel, decision: DecisionRegister) -> None:
    block: ChallengeGap | None = _computed(table, decision, "H3", "C2")
    if block is None:
        return
    rule = block.rule
    steps = ", ".join(str(s) for s in block.steps)
    criteria = [
        (
            Tex(f"challenge success, paired $-$ independent (steps {fmt.escape(steps)})"),
            Tex(f"{GE} {fmt.prop(rule.mean_at_least)}"),
            fmt.signed(block.difference_mean),
            fmt.interval(block.ci95, notes=table.notes),
            rule.mean_criterion,
        ),
        _every_seed_positive(
            "seeds with a positive difference",
            block.difference_by_seed,
            block.difference_positive_seeds,
            rule.every_seed_positive,
        ),
    ]
    _outcome_rows(table, "H3", "C2", criteria, _verdict(block), why=block.reason)


def _h5_rows(table: TableModel, decision: DecisionRegister) -> None:
    block: HeldoutGap | None = _computed(table, decision, "H5", "C2")
    if block is None:
        return
    bound = block.rule.lower_bound_above
    lower = block.ci90_lower
    criteria = [
        (
            Tex("held-out fault types, paired $-$ independent: lower 90\\,\\% bound"),
            Tex(f"$>$ {fmt.signed(bound)}"),
            fmt.signed(lower),
            fmt.interval(block.difference_ci90, notes=table.notes),
            None if lower is None or bound is None else lower > bound,
        ),
        ("mean difference (reported)", "", fmt.signed(block.difference_mean), "", None),
    ]
    _outcome_rows(table, "H5", "C2", criteria[:1], _verdict(block), why=block.reason)
    table.add(["", "", criteria[1][0], "", criteria[1][2], "", "", ""])


def _h1b_rows(table: TableModel, probe: ProbeRegister) -> None:
    verdict = probe.need_verdict()
    n = verdict.checkpoints
    criteria = [
        (
            Tex(
                f"outcome noise: MC variance paired $<$ independent (\\texttt{{{fmt.escape(probe.trajectory)}}})"
            ),
            _count(n, n),
            _count(verdict.outcome_wins, n),
            "",
            verdict.outcome_noise_every_checkpoint,
        ),
        (
            "transition noise: MC variance paired < resampled independent",
            _majority_of(n),
            _count(verdict.transition_wins, n),
            "",
            verdict.transition_noise_majority,
        ),
    ]
    _outcome_rows(table, "H1b", "C2", criteria, _verdict(verdict), why=verdict.reason)


def _p13_rows(table: TableModel, probe: ProbeRegister) -> None:
    """Registered prediction P13 (the probe): base condition by a factor of two, outcome ratio falls,
    transition ratio below one at a majority of checkpoints; the flags are the probe register's."""
    verdict = probe.need_verdict()
    p13 = verdict.p13
    if p13 is None:
        _outcome_rows(
            table, "P13", "C2", [], None, reason=f"no P13 block in the probe register of {probe.trajectory}"
        )
        return
    first, last = probe.steps[0], probe.steps[-1]
    ratios = verdict.ratios_by_step.outcome
    base_lr = _num(probe.checkpoints[first].outcome.lhs_over_rhs)
    n = verdict.checkpoints
    criteria = [
        (
            Tex(f"base checkpoint: $L \\leq R/2$ (\\texttt{{{fmt.escape(probe.trajectory)}}})"),
            Tex("$L/R \\leq$ 0.500"),
            Tex("$L/R$ = " + fmt.prop(base_lr, 3, table.notes, "no successful rollout (R = 0)")),
            "",
            p13.base_lhs_at_most_half_rhs,
        ),
        (
            "outcome-noise MC ratio lower at the last checkpoint",
            Tex(f"step {fmt.escape(str(last))} $<$ step {fmt.escape(str(first))}"),
            Tex(
                fmt.prop(_num(ratios.get(last)), 3, table.notes, "ratio undefined")
                + " vs "
                + fmt.prop(_num(ratios.get(first)), 3, table.notes, "ratio undefined")
            ),
            "",
            p13.outcome_ratio_falls,
        ),
        (
            "transition-noise MC ratio below one",
            _majority_of(n),
            _count(verdict.transition_wins, n),
            "",
            p13.transition_ratio_below_one_majority,
        ),
    ]
    flags = [c[4] for c in criteria]
    met = None if any(f is None for f in flags) else all(bool(f) for f in flags)
    _outcome_rows(table, "P13", "C2", criteria, met)


def registered_outcomes_table(ctx: Context) -> TableModel:
    table = TableModel(
        [
            Tex("Hyp."),
            Tex("Cond."),
            Tex("Criterion"),
            Tex("Needed"),
            Tex("Got"),
            Tex("Interval"),
            Tex("Met"),
            Tex("Outcome"),
        ],
        ["l", "l", r">{\raggedright\arraybackslash}p{5.6cm}", "r", "r", "r", "c", "l"],
        size=r"\footnotesize",
    )
    decisions = _decisions(ctx)
    by_condition = {d.condition: d for d in decisions}
    if len(by_condition) != len(decisions):
        raise UserError("table 2: two decision registers for one condition; pass one per condition")
    c2, c4 = by_condition.get("C2"), by_condition.get("C4")
    probes = src.probes(ctx.inputs.files("probe"))
    if c2 is not None:
        _block(table, _h1a_rows, c2)
    if c4 is not None:
        _block(table, _h1a_rows, c4)
    for probe in probes:
        _block(table, _h1b_rows, probe)
    for probe in probes:
        _block(table, _p13_rows, probe)
    if c2 is not None:
        _block(table, _h2_rows, c2, "H2a")
    if c4 is not None:
        _block(table, _h2_rows, c4, "H2b")
    if c2 is not None:
        _block(table, _h3_rows, c2)
        _block(table, _h5_rows, c2)
    table.extra_notes.extend(_register_notes(decisions))
    _rules_note(ctx, decisions, table)
    return table


def _block(table: TableModel, rows: Callable[..., None], *args: Any) -> None:
    """One hypothesis's rows, ruled off from the rows above (a rule before the first row is none)."""
    table.rule()
    rows(table, *args)


def _register_notes(decisions: list[DecisionRegister]) -> list[Tex]:
    """Notes on registers that are not the paper's experiment (other pools) or not complete."""
    notes = []
    if any(doc.paper_pools is False for doc in decisions):
        notes.append(fmt.escape(NON_PAPER_POOLS))
    for doc in decisions:
        if doc.complete is False:
            notes.append(
                fmt.escape(
                    f"{doc.condition}: the register is incomplete ({len(doc.missing)} item(s) missing: "
                    + "; ".join(str(m) for m in doc.missing[:3])
                    + ")."
                )
            )
    return notes


def _rules_note(ctx: Context, decisions: list[DecisionRegister], table: TableModel) -> None:
    """State whether the rules file given is the one the decisions applied (by sha256)."""
    rules = ctx.inputs.files("rules")
    if not rules:
        return
    from paired_rollouts import io

    digest = io.sha256_file(rules[0])
    for doc in decisions:
        status = "matches" if doc.rules_sha256 == digest else "DIFFERS FROM"
        table.extra_notes.append(
            fmt.escape(
                f"{doc.condition}: the rules file's sha256 ({digest[:12]}) {status} the one the decision "
                f"applied ({doc.rules_sha256[:12]})."
            )
        )
