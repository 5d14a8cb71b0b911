"""The paper's twelve tables: which inputs each reads, and how its rows are built.

Each table is a :class:`TableSpec` in :data:`TABLES`: the ``--input`` keys it reads (with a short
description, for ``--help`` and docs/render.md), the ``--settings`` keys it accepts, and a builder that
turns the parsed registers into a :class:`TableModel` (cells are already-formatted LaTeX from
``render.format``). The template ``templates/table{N}.tex.j2`` lays the model out; the prose lives in
the templates, the numbers come only from here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.sources import Doc, Inputs, KeySpec

REGIME_LABELS = {
    "clean": "clean",
    "at_training": "at training",
    "challenge": "challenge",
    "noisy_p010": "$p=0.10$",
    "noisy_p025": "$p=0.25$",
    "heldout_types": "held-out types",
}
ARM_LABELS = {"paired": "paired", "independent": "independent", "clean": "clean (C0)"}


def regime_label(regime: str) -> Tex:
    label = REGIME_LABELS.get(regime)
    return Tex(label) if label is not None else fmt.escape(regime)


# ---------------------------------------------------------------- model


@dataclass
class Row:
    cells: list[Tex]
    kind: str = "data"  # data | rule | section


@dataclass
class TableModel:
    """What a template needs: columns, header groups, rows, footnotes."""

    title: str
    headers: list[Tex]
    aligns: list[str]
    rows: list[Row] = field(default_factory=list)
    groups: list[tuple[Tex, int]] = field(default_factory=list)  # header groups over columns
    notes: fmt.Notes = field(default_factory=fmt.Notes)
    extra_notes: list[Tex] = field(default_factory=list)
    size: str = r"\small"
    tabcolsep: str = "4pt"
    landscape: bool = False

    def add(self, cells: Sequence[Any], kind: str = "data") -> None:
        cells = [c if isinstance(c, Tex) else fmt.escape(c) for c in cells]
        if kind == "data" and len(cells) != len(self.headers):
            raise ValueError(f"row has {len(cells)} cells, table has {len(self.headers)} columns")
        self.rows.append(Row(cells, kind))

    def rule(self) -> None:
        if self.rows and self.rows[-1].kind != "rule":
            self.rows.append(Row([], "rule"))

    def section(self, text: str | Tex) -> None:
        self.rows.append(Row([text if isinstance(text, Tex) else fmt.escape(text)], "section"))

    def context(self) -> dict[str, Any]:
        group_cells: list[Tex] = []
        group_rules: list[Tex] = []
        column = 1
        for label, span in self.groups:
            if span == 1 and not label:
                group_cells.append(Tex(""))
            else:
                group_cells.append(Tex(f"\\multicolumn{{{span}}}{{c}}{{{fmt.escape(label)}}}"))
                if label:
                    group_rules.append(Tex(f"{column}-{column + span - 1}"))
            column += span
        if self.groups and column - 1 != len(self.headers):
            raise ValueError("header groups do not span the columns")
        return {
            "title": self.title,
            "headers": self.headers,
            "colspec": Tex("@{}" + "".join(self.aligns) + "@{}"),
            "ncols": Tex(str(len(self.headers))),
            "groups": group_cells,
            "group_rules": group_rules,
            "rows": self.rows,
            "notes": self.notes.items,
            "extra_notes": self.extra_notes,
            "size": Tex(self.size),
            "tabcolsep": Tex(self.tabcolsep),
            "landscape": self.landscape,
            "notes_width": Tex(r"\linewidth"),
            "needs_extra": Tex(r" and \usepackage{pdflscape}" if self.landscape else ""),
        }


@dataclass
class Context:
    inputs: Inputs
    scale: str
    settings: dict[str, Any]


@dataclass(frozen=True)
class TableSpec:
    number: int
    title: str
    keys: dict[str, KeySpec]
    build: Callable[[Context], TableModel]
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def template(self) -> str:
        return f"table{self.number}.tex.j2"


P = Tex(r"\textsc{p}")  # short column labels
I_ = Tex(r"\textsc{i}")
DELTA = Tex(r"$\Delta$")
GE = Tex(r"$\geq$")
LE = Tex(r"$\leq$")


def _mean(values: Sequence[float | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return sum(clean) / len(clean) if clean and len(clean) == len(values) else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _run_label(run: str) -> Tex:
    return Tex(r"\texttt{" + fmt.escape(run) + "}")


def _decisions(ctx: Context) -> list[Doc]:
    return [src.load_decision(p) for p in ctx.inputs.files("decisions")]


def _not_computed(block: Doc | None) -> str | None:
    """The reason a hypothesis block cannot be shown, or None when it can."""
    if block is None:
        return "hypothesis absent from the decision register"
    if block.opt("computed") is False:
        return f"not computed: {block.opt('reason') or 'no reason given'}"
    return None


# ---------------------------------------------------------------- table 1: run matrix


def build_table1(ctx: Context) -> TableModel:
    table = TableModel(
        "Run matrix",
        [Tex("Run"), Tex("Cond."), Tex("Arm"), Tex("Seed"), Tex("Noise"),
         Tex(r"Steps\,$\times$\,prompts\,$\times$\,$G$"), Tex("Accelerator"), Tex("Software stack")],
        ["l", "l", "l", "r", "l", "r", "l", r">{\raggedright\arraybackslash}p{3.7cm}"],
        size=r"\footnotesize",
        tabcolsep="3pt",
    )
    from paired_rollouts.backoffice.tasks import PAPER_POOL_SHA256
    from paired_rollouts.records import read_run_manifest

    manifests = sorted((read_run_manifest(p) for p in ctx.inputs.files("manifests")),
                       key=lambda m: src.manifest_identity(m).order)
    if any(PAPER_POOL_SHA256.get(name) != digest for m in manifests for name, digest in m.pools_sha256.items()):
        table.extra_notes.append(fmt.escape(NON_PAPER_POOLS))
    last_condition = None
    gap = "not recorded in the run manifest"
    for manifest in manifests:
        ident = src.manifest_identity(manifest)
        if ident.condition != last_condition:
            if last_condition is not None:
                table.rule()
            last_condition = ident.condition
        versions = manifest.versions
        order = ["torch", "transformers", "trl", "vllm", "peft"]
        shown = [f"{name} {versions[name]}" for name in order if name in versions]
        accelerator = manifest.device
        if manifest.gpu and manifest.gpu != manifest.device:
            accelerator = f"{manifest.device} ({manifest.gpu})"
        parts = [f"${name}={fmt.prop(value, 2)}$" for name, value in (("p", manifest.p), ("q", manifest.q)) if value]
        noise = Tex(", ".join(parts) if parts else "none")
        sizes = [manifest.steps, manifest.prompts_per_step, manifest.num_generations]
        table.add([
            _run_label(ident.run), ident.condition, ident.arm, fmt.integer(ident.seed), noise,
            Tex("\\,$\\times$\\,".join(fmt.integer(v) for v in sizes)),
            fmt.escape(accelerator),
            fmt.join(shown, "; ") if shown else fmt.missing(table.notes, gap),
        ])
    return table


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


# ---------------------------------------------------------------- table 2: registered outcomes


NON_PAPER_POOLS = ("The task pools are NOT the paper's (their hashes differ from the paper's frozen pools): "
                   "these are not the paper's experiment.")


def _verdict(block: Doc) -> bool | None:
    """A registered outcome: true/false when decided; None (shown "not decided") on partial evidence."""
    passes = block.req("passes")
    if passes is not None and not isinstance(passes, bool):
        raise UserError(f"{block.path}: 'passes' is {passes!r}; expected true, false or null")
    return passes


def _verdict_word(block: Doc) -> str:
    passes = _verdict(block)
    return "is not decided" if passes is None else ("passes" if passes else "misses")


def _outcome_rows(table: TableModel, hyp: str, condition: str, criteria: list[tuple], passes: bool | None,
                  reason: str | None = None, why: str | None = None) -> None:
    """One hypothesis: a row per criterion (text, needed, got, interval, met); outcome on the first."""
    if reason is not None:
        table.add([hyp, condition, "---", "", fmt.missing(table.notes, reason), "", "",
                   fmt.mark(None, table.notes, reason)])
        return
    for index, (text, needed, got, interval, met) in enumerate(criteria):
        table.add([
            Tex(r"\textbf{" + fmt.escape(hyp) + "}") if index == 0 else "",
            condition if index == 0 else "",
            text, needed, got, interval,
            Tex("yes" if met else "no") if met is not None else fmt.missing(table.notes, "criterion not reported"),
            fmt.mark(passes, table.notes, why or "not decided") if index == 0 else "",
        ])


def _h1a_rows(table: TableModel, decision: Doc) -> None:
    condition = decision.req("condition")
    block = src.hypothesis(decision, "H1a")
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, "H1a", condition, [], None, reason)
        return
    if condition == "C4":
        rule = block.sub("rule")
        within = rule.number("independent_within")
        expected = block.number("expected_independent_rate")
        at_most = rule.number("paired_at_most")
        criteria = [
            ("spurious rate, independent arm (all-correct groups)",
             Tex(f"{fmt.prop(expected)}\\,$\\pm$\\,{fmt.prop(within)}"),
             fmt.prop(block.number("spurious_rate_independent"), 3, table.notes, "no all-correct group"), "",
             rule.opt("independent_criterion")),
            ("spurious rate, paired arm", Tex(f"{LE} {fmt.prop(at_most)}"),
             fmt.prop(block.number("spurious_rate_paired"), 3, table.notes, "no all-correct group"), "",
             rule.opt("paired_criterion")),
        ]
    else:
        rule = block.sub("rule")
        luck = block.req("luck_share_step0")
        runs = block.req("runs")
        lams = [v.get("lam") for v in luck.values()] if isinstance(luck, dict) else []
        lows = [(v.get("ci95") or [None])[0] for v in luck.values()] if isinstance(luck, dict) else []
        n = len(runs) if isinstance(runs, dict) else 0
        luck_ok = sum(1 for v in runs.values() if v.get("luck_criterion")) if n else 0
        share_ok = sum(1 for v in runs.values() if v.get("sharing_criterion")) if n else 0
        lam_min = min((v for v in lams if v is not None), default=None)
        low_min = min((v for v in lows if v is not None), default=None)
        criteria = [
            ("luck share at step 0, smallest over runs", Tex(f"{GE} {fmt.prop(rule.number('lambda_at_least'))}"),
             fmt.prop(lam_min, 3, table.notes, "no luck share defined"), "", luck_ok == n and n > 0),
            (Tex("lower 95\\,\\% bound of the luck share, smallest"), Tex(f"$>$ {fmt.prop(rule.number('lower_bound_above'))}"),
             fmt.prop(low_min, 3, table.notes, "no luck-share interval"), "", luck_ok == n and n > 0),
            ("runs whose groups share seeds as designed", Tex(f"{fmt.integer(n)}/{fmt.integer(n)}"),
             Tex(f"{fmt.integer(share_ok)}/{fmt.integer(n)}"), "", share_ok == n and n > 0),
        ]
    _outcome_rows(table, "H1a", condition, criteria, _verdict(block), why=block.opt("reason"))


def _h2_rows(table: TableModel, decision: Doc, name: str) -> None:
    condition = decision.req("condition")
    block = src.hypothesis(decision, name)
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, name, condition, [], None, reason)
        return
    rule = block.sub("rule")
    diffs = block.numbers("auc_difference_by_seed")
    positive = sum(1 for d in diffs if d is not None and d > 0)
    criteria = [
        (f"mean AUC difference, paired $-$ independent ({regime_label(str(block.opt('validation_set', default='validation')))})",
         Tex(f"{GE} {fmt.prop(rule.number('mean_at_least'))}"),
         fmt.signed(block.number("auc_difference_mean")),
         fmt.interval(block.req("auc_difference_ci95"), notes=table.notes), rule.opt("mean_criterion")),
        ("seeds with a positive AUC difference", Tex(f"{fmt.integer(len(diffs))}/{fmt.integer(len(diffs))}"),
         Tex(f"{fmt.integer(positive)}/{fmt.integer(len(diffs))}"), "", rule.opt("every_seed_positive")),
        (f"final success, paired $-$ independent ({regime_label(str(block.opt('final_set', default='final')))})",
         Tex(f"{GE} 0"), fmt.signed(block.number("final_difference_mean")), "", rule.opt("final_direction")),
    ]
    criteria = [(Tex(c[0]), *c[1:]) for c in criteria]
    _outcome_rows(table, name, condition, criteria, _verdict(block), why=block.opt("reason"))


def _h3_rows(table: TableModel, decision: Doc) -> None:
    block = src.hypothesis(decision, "H3")
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, "H3", "C2", [], None, reason)
        return
    rule = block.sub("rule")
    diffs = block.numbers("difference_by_seed")
    positive = sum(1 for d in diffs if d is not None and d > 0)
    steps = ", ".join(str(s) for s in block.req("steps"))
    criteria = [
        (Tex(f"challenge success, paired $-$ independent (steps {fmt.escape(steps)})"),
         Tex(f"{GE} {fmt.prop(rule.number('mean_at_least'))}"), fmt.signed(block.number("difference_mean")),
         fmt.interval(block.req("ci95"), notes=table.notes), rule.opt("mean_criterion")),
        ("seeds with a positive difference", Tex(f"{fmt.integer(len(diffs))}/{fmt.integer(len(diffs))}"),
         Tex(f"{fmt.integer(positive)}/{fmt.integer(len(diffs))}"), "", rule.opt("every_seed_positive")),
    ]
    _outcome_rows(table, "H3", "C2", criteria, _verdict(block), why=block.opt("reason"))


def _h5_rows(table: TableModel, decision: Doc) -> None:
    block = src.hypothesis(decision, "H5")
    reason = _not_computed(block)
    if reason is not None:
        _outcome_rows(table, "H5", "C2", [], None, reason)
        return
    rule = block.sub("rule")
    bound = rule.number("lower_bound_above")
    lower = block.number("ci90_lower")
    criteria = [
        (Tex("held-out fault types, paired $-$ independent: lower 90\\,\\% bound"),
         Tex(f"$>$ {fmt.signed(bound)}"), fmt.signed(lower),
         fmt.interval(block.req("difference_ci90"), notes=table.notes),
         None if lower is None or bound is None else lower > bound),
        ("mean difference (reported)", "", fmt.signed(block.number("difference_mean")), "", None),
    ]
    _outcome_rows(table, "H5", "C2", criteria[:1], _verdict(block), why=block.opt("reason"))
    table.add(["", "", criteria[1][0], "", criteria[1][2], "", "", ""])


def _h1b_rows(table: TableModel, probe: Doc) -> None:
    verdict = probe.sub("verdict")
    n = int(verdict.number("checkpoints") or 0)
    outcome_wins = int(verdict.number("outcome_wins") or 0)
    transition_wins = int(verdict.number("transition_wins") or 0)
    trajectory = str(probe.req("trajectory"))
    criteria = [
        (Tex(f"outcome noise: MC variance paired $<$ independent (\\texttt{{{fmt.escape(trajectory)}}})"),
         Tex(f"{fmt.integer(n)}/{fmt.integer(n)}"), Tex(f"{fmt.integer(outcome_wins)}/{fmt.integer(n)}"), "",
         verdict.opt("outcome_noise_every_checkpoint")),
        ("transition noise: MC variance paired < resampled independent",
         Tex(f"$>$ {fmt.integer(n)}/2"), Tex(f"{fmt.integer(transition_wins)}/{fmt.integer(n)}"), "",
         verdict.opt("transition_noise_majority")),
    ]
    _outcome_rows(table, "H1b", "C2", criteria, _verdict(verdict), why=verdict.opt("reason"))


def _p13_rows(table: TableModel, probe: Doc) -> None:
    """Registered prediction P13 (the probe): base condition by a factor of two, outcome ratio falls,
    transition ratio below one at a majority of checkpoints; the flags are the probe register's."""
    verdict = probe.sub("verdict")
    p13 = verdict.opt("p13")
    trajectory = str(probe.req("trajectory"))
    if not isinstance(p13, dict):
        _outcome_rows(table, "P13", "C2", [], None, reason=f"no P13 block in the probe register of {trajectory}")
        return
    steps = src.probe_steps(probe)
    first, last = (str(steps[0]), str(steps[-1])) if steps else ("", "")
    ratios = verdict.opt("ratios_by_step", "outcome") or {}
    base_lr = _num(probe.opt("checkpoints", first, "outcome", "lhs_over_rhs")) if steps else None
    n = int(verdict.number("checkpoints") or 0)
    wins = int(verdict.number("transition_wins") or 0)
    criteria = [
        (Tex(f"base checkpoint: $L \\leq R/2$ (\\texttt{{{fmt.escape(trajectory)}}})"), Tex("$L/R \\leq$ 0.500"),
         Tex("$L/R$ = " + fmt.prop(base_lr, 3, table.notes, "no successful rollout (R = 0)")), "",
         p13.get("base_lhs_at_most_half_rhs")),
        ("outcome-noise MC ratio lower at the last checkpoint", Tex(f"step {fmt.escape(last)} $<$ step {fmt.escape(first)}"),
         Tex(fmt.prop(_num(ratios.get(last)), 3, table.notes, "ratio undefined") + " vs "
             + fmt.prop(_num(ratios.get(first)), 3, table.notes, "ratio undefined")), "",
         p13.get("outcome_ratio_falls")),
        ("transition-noise MC ratio below one", Tex(f"$>$ {fmt.integer(n)}/2"),
         Tex(f"{fmt.integer(wins)}/{fmt.integer(n)}"), "", p13.get("transition_ratio_below_one_majority")),
    ]
    flags = [c[4] for c in criteria]
    met = None if any(f is None for f in flags) else all(bool(f) for f in flags)
    _outcome_rows(table, "P13", "C2", criteria, met)


def build_table2(ctx: Context) -> TableModel:
    table = TableModel(
        "Registered outcomes",
        [Tex("Hyp."), Tex("Cond."), Tex("Criterion"), Tex("Needed"), Tex("Got"), Tex("Interval"), Tex("Met"),
         Tex("Outcome")],
        ["l", "l", r">{\raggedright\arraybackslash}p{5.6cm}", "r", "r", "r", "c", "l"],
        size=r"\footnotesize",
    )
    decisions = _decisions(ctx)
    by_condition = {d.req("condition"): d for d in decisions}
    if len(by_condition) != len(decisions):
        raise UserError("table 2: two decision registers for one condition; pass one per condition")
    c2, c4 = by_condition.get("C2"), by_condition.get("C4")
    if c2 is not None:
        _h1a_rows(table, c2)
    if c4 is not None:
        table.rule()
        _h1a_rows(table, c4)
    probes = [src.load_probe(p) for p in ctx.inputs.files("probe")]
    for probe in sorted(probes, key=lambda d: str(d.req("trajectory"))):
        table.rule()
        _h1b_rows(table, probe)
    for probe in sorted(probes, key=lambda d: str(d.req("trajectory"))):
        table.rule()
        _p13_rows(table, probe)
    if c2 is not None:
        table.rule()
        _h2_rows(table, c2, "H2a")
    if c4 is not None:
        table.rule()
        _h2_rows(table, c4, "H2b")
    if c2 is not None:
        table.rule()
        _h3_rows(table, c2)
        table.rule()
        _h5_rows(table, c2)
    if any(doc.opt("paper_pools") is False for doc in decisions):
        table.extra_notes.append(fmt.escape(NON_PAPER_POOLS))
    for doc in decisions:
        if doc.opt("complete") is False:
            missing = doc.opt("missing") or []
            table.extra_notes.append(fmt.escape(
                f"{doc.req('condition')}: the register is incomplete ({len(missing)} item(s) missing: "
                + "; ".join(str(m) for m in missing[:3]) + ")."))
    _rules_note(ctx, decisions, table)
    return table


def _rules_note(ctx: Context, decisions: list[Doc], table: TableModel) -> None:
    """State whether the rules file given is the one the decisions applied (by sha256)."""
    rules = ctx.inputs.files("rules")
    if not rules:
        return
    from paired_rollouts import io

    digest = io.sha256_file(rules[0])
    for doc in decisions:
        recorded = doc.opt("rules_sha256")
        if recorded is None:
            continue
        status = "matches" if recorded == digest else "DIFFERS FROM"
        table.extra_notes.append(fmt.escape(
            f"{doc.req('condition')}: the rules file's sha256 ({digest[:12]}) {status} the one the decision "
            f"applied ({str(recorded)[:12]})."))


# ---------------------------------------------------------------- tables 3 and 4: primary endpoints


def _primary_table(ctx: Context, condition: str, name: str, title: str, with_reference: bool) -> TableModel:
    decision = src.decision_for(_decisions(ctx), condition, f"table for {condition}")
    block = src.hypothesis(decision, name)
    headers = [Tex("Seed"), P, I_, DELTA]
    aligns = ["l", "r", "r", "r"]
    if with_reference:
        headers += [Tex("C0")]
        aligns += ["r"]
    headers += [P, I_, DELTA]
    aligns += ["r", "r", "r"]
    if with_reference:
        headers += [Tex("C0")]
        aligns += ["r"]
    span = 4 if with_reference else 3
    table = TableModel(title, headers, aligns, size=r"\small")
    reason = _not_computed(block)
    if reason is not None:
        table.groups = [(Tex(""), 1), (Tex("Validation AUC"), span), (Tex("Final test success"), span)]
        table.add([fmt.missing(table.notes, reason)] + [Tex("")] * (len(headers) - 1))
        return table
    val_set = str(block.opt("validation_set", default="validation"))
    final_set = str(block.opt("final_set", default="final"))
    table.groups = [(Tex(""), 1), (Tex(f"Validation AUC ({regime_label(val_set)})"), span),
                    (Tex(f"Final test success ({regime_label(final_set)})"), span)]
    seeds = [int(s) for s in block.req("seeds")]
    auc_p, auc_i = block.numbers("auc_paired"), block.numbers("auc_independent")
    auc_d = block.numbers("auc_difference_by_seed")
    fin_p, fin_i = block.numbers("final_paired_by_seed"), block.numbers("final_independent_by_seed")
    for key, values in (("auc_paired", auc_p), ("auc_independent", auc_i), ("auc_difference_by_seed", auc_d),
                        ("final_paired_by_seed", fin_p), ("final_independent_by_seed", fin_i)):
        if len(values) != len(seeds):
            raise UserError(f"{decision.path}: key '{name}.{key}' has {len(values)} values for "
                            f"{len(seeds)} seeds")
    ref_auc: dict[int, float | None] = {}
    ref_fin: dict[int, float | None] = {}
    ref_mean_auc = ref_mean_fin = None
    no_ref = "no clean-trained (C0) run with this seed"
    if with_reference:
        secondary = decision.opt("secondary")
        reference = secondary.get("clean_reference") if isinstance(secondary, dict) else None
        if reference:
            sec = decision.sub("secondary")
            for run in reference.get("runs", []):
                parsed = src.parse_run(run)
                if parsed is None:
                    continue
                ref_auc[parsed[2]] = _num(sec.opt("auc", run, val_set))
                ref_fin[parsed[2]] = _num(sec.opt("final", run, final_set))
            ref_mean_auc = _num(sec.opt("arms", "clean", "auc", val_set))
            ref_mean_fin = _num(sec.opt("arms", "clean", "final", final_set))
        else:
            no_ref = "no clean-trained (C0) reference in the decision register"
    for i, seed in enumerate(seeds):
        cells = [fmt.integer(seed), fmt.prop(auc_p[i]), fmt.prop(auc_i[i]), fmt.signed(auc_d[i])]
        if with_reference:
            cells.append(fmt.prop(ref_auc.get(seed), 3, table.notes, no_ref))
        cells += [fmt.prop(fin_p[i]), fmt.prop(fin_i[i]), fmt.signed(_diff(fin_p[i], fin_i[i]))]
        if with_reference:
            cells.append(fmt.prop(ref_fin.get(seed), 3, table.notes, no_ref))
        table.add(cells)
    table.rule()
    cells = [Tex("mean"), fmt.prop(_mean(auc_p)), fmt.prop(_mean(auc_i)),
             fmt.signed(block.number("auc_difference_mean"))]
    if with_reference:
        cells.append(fmt.prop(ref_mean_auc, 3, table.notes, no_ref))
    cells += [fmt.prop(_mean(fin_p)), fmt.prop(_mean(fin_i)), fmt.signed(block.number("final_difference_mean"))]
    if with_reference:
        cells.append(fmt.prop(ref_mean_fin, 3, table.notes, no_ref))
    table.add(cells)
    ci = block.req("auc_difference_ci95")
    cells = [Tex("95\\,\\% CI"), "", "", fmt.interval(ci, notes=table.notes)]
    if with_reference:
        cells.append("")
    cells += ["", "", ""] + ([""] if with_reference else [])
    table.add(cells)
    boot = decision.opt("bootstrap") or {}
    _published_primary(ctx, table, condition, with_reference)
    table.extra_notes.append(fmt.escape(
        f"{name} {_verdict_word(block)}; bootstrap: {boot.get('resamples')} resamples, "
        f"seed {boot.get('seed')}; {block.opt('tasks')} validation tasks, {block.opt('final_tasks', default='?')} "
        "final tasks."))
    return table


def published_values(ctx: Context) -> dict[str, Any] | None:
    """Published values by entry id (data/published/paper.yaml) in the register's unit, or None without it."""
    files = ctx.inputs.files("published") if "published" in ctx.inputs.declared else []
    if not files:
        return None
    from paired_rollouts.compare.published import load_published

    return {e.id: (e.value / e.scale if isinstance(e.value, (int, float)) and not isinstance(e.value, bool)
                   else e.value) for e in load_published(files[0]).entries}


def _published_primary(ctx: Context, table: TableModel, condition: str, with_reference: bool) -> None:
    """The paper's values under the reproduced ones, in the same columns (tables 3 and 4)."""
    pub = published_values(ctx)
    if pub is None:
        return
    c = condition.lower()
    regime = "noisy_p025" if c == "c2" else "clean"
    table.rule()
    table.section("Published (the paper; per-seed values from the original study's registers)")
    seeds = sorted({int(k.rsplit(".s", 1)[1]) for k in pub if k.startswith(f"{c}.auc.paired.s")})
    for seed in seeds:
        fp, fi = pub.get(f"{c}.final.paired.s{seed}"), pub.get(f"{c}.final.independent.s{seed}")
        cells = [fmt.integer(seed), fmt.prop(pub.get(f"{c}.auc.paired.s{seed}")),
                 fmt.prop(pub.get(f"{c}.auc.independent.s{seed}")),
                 fmt.signed(pub.get(f"{c}.auc.difference.s{seed}"))]
        if with_reference:
            cells.append(Tex(""))
        cells += [fmt.prop(fp), fmt.prop(fi), fmt.signed(_diff(fp, fi))]
        if with_reference:
            cells.append(Tex(""))
        table.add(cells)
    cells = [Tex("mean"), Tex(""), Tex(""), fmt.signed(pub.get(f"{c}.auc.difference.mean"))]
    if with_reference:
        cells.append(Tex(""))
    cells += [fmt.prop(pub.get(f"{c}.final.{regime}.paired.mean")),
              fmt.prop(pub.get(f"{c}.final.{regime}.independent.mean")),
              fmt.signed(pub.get(f"{c}.final.difference.mean"))]
    if with_reference:
        cells.append(fmt.prop(pub.get(f"c0.final.{regime}.mean")))
    table.add(cells)
    low, high = pub.get(f"{c}.auc.difference.ci95.low"), pub.get(f"{c}.auc.difference.ci95.high")
    cells = [Tex("95\\,\\% CI"), "", "", fmt.interval([low, high], notes=table.notes) if low is not None else ""]
    if with_reference:
        cells.append("")
    cells += ["", "", ""] + ([""] if with_reference else [])
    table.add(cells)


def build_table3(ctx: Context) -> TableModel:
    return _primary_table(ctx, "C2", "H2a", "C2 primary endpoints by seed", with_reference=False)


def build_table4(ctx: Context) -> TableModel:
    return _primary_table(ctx, "C4", "H2b", "C4 primary endpoints by seed", with_reference=True)


# ---------------------------------------------------------------- table 5: probe ratios


def build_table5(ctx: Context) -> TableModel:
    table = TableModel(
        "Gradient-probe variance ratios by checkpoint",
        [Tex("Step"), Tex("$L/R$"), Tex("outcome"), Tex("transition"), Tex("stratified"), Tex("outcome"),
         Tex("transition"), Tex("outcome"), Tex("transition"), Tex("$\\rho=0$"), Tex("outcome"), Tex("transition")],
        ["r"] * 12,
        groups=[(Tex(""), 2), (Tex("MC: paired / independent"), 3), (Tex("SW: paired / independent"), 2),
                (Tex("MC within groups"), 2), (Tex(""), 1), (Tex("batch equivalent"), 2)],
        size=r"\footnotesize",
    )
    probes = sorted((src.load_probe(p) for p in ctx.inputs.files("probe")), key=lambda d: str(d.req("trajectory")))
    for index, probe in enumerate(probes):
        if index:
            table.rule()
        table.section(Tex(r"trajectory \texttt{" + fmt.escape(str(probe.req("trajectory"))) + "}"))
        for step in src.probe_steps(probe):
            cp = probe.sub("checkpoints", str(step))
            table.add([
                fmt.integer(step),
                fmt.prop(cp.number("outcome", "lhs_over_rhs"), 3, table.notes, "no successful rollout (R = 0)"),
                fmt.prop(cp.number("outcome", "mean_centered", "ratio_paired_over_independent"), 3, table.notes,
                         "ratio undefined"),
                fmt.prop(cp.number("transition", "mean_centered", "ratio_paired_over_independent"), 3, table.notes,
                         "ratio undefined"),
                fmt.prop(cp.number("transition", "mean_centered", "ratio_paired_over_stratified"), 3, table.notes,
                         "ratio undefined"),
                fmt.prop(cp.number("outcome", "implemented", "ratio_paired_over_independent"), 3, table.notes,
                         "ratio undefined"),
                fmt.prop(cp.number("transition", "implemented", "ratio_paired_over_independent"), 3, table.notes,
                         "ratio undefined"),
                fmt.prop(_num(cp.opt("outcome", "mean_centered", "ratio_within_paired_over_independent")), 3,
                         table.notes, "not in the probe register"),
                fmt.prop(_num(cp.opt("transition", "mean_centered", "ratio_within_paired_over_independent")), 3,
                         table.notes, "not in the probe register"),
                fmt.prop(_num(cp.opt("counts", "rho_zero_fraction")), 3, table.notes, "not recorded by the probe"),
                fmt.prop(_num(cp.opt("batch_equivalent", "outcome")), 2, table.notes, "not in the probe register"),
                fmt.prop(_num(cp.opt("batch_equivalent", "transition")), 2, table.notes, "not in the probe register"),
            ])
        verdict = probe.sub("verdict")
        n = int(verdict.number("checkpoints") or 0)
        table.section(Tex(
            f"H1b {_verdict_word(verdict)}: outcome {fmt.integer(int(verdict.number('outcome_wins') or 0))}/"
            f"{fmt.integer(n)}, transition {fmt.integer(int(verdict.number('transition_wins') or 0))}/{fmt.integer(n)} "
            "checkpoints with paired $<$ independent"))
    if not probes:
        raise UserError("table 5: no --input probe=PATH given")
    return table


# ---------------------------------------------------------------- table 6: predictions


def _observed_text(observed: dict[str, Any]) -> str:
    """The numbers a prediction was judged on, compactly (nested blocks as name: a, b)."""
    parts = []
    for key, value in observed.items():
        if key in ("reading", "reason", "steps"):
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k.replace('_', ' ')} {_short(v)}" for k, v in value.items())
            parts.append(f"{key}: {inner}")
        else:
            parts.append(f"{key.replace('_', ' ')} {_short(value)}")
    return "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return "n/a" if value is None else str(value)


def _predictions_register_table(ctx: Context, title: str) -> TableModel:
    """One row per registered prediction: statement, confidence, the observed numbers and the verdict
    (met, missed, not run, not decided) from the predictions register (stats/predictions.py)."""
    doc = src._load_json(ctx.inputs.files("predictions")[0], "predictions register")
    table = TableModel(
        title,
        [Tex("ID"), Tex("Prediction"), Tex("Conf."), Tex("Observed"), Tex("Verdict")],
        ["l", r">{\raggedright\arraybackslash}p{5.6cm}", "r", r">{\raggedright\arraybackslash}p{4.6cm}", "l"],
        size=r"\footnotesize",
    )
    for row in doc.req("predictions"):
        observed = row.get("observed") or {}
        why = observed.get("reason")
        text = _observed_text(observed) or (str(why) if why else "")
        table.add([str(row["id"]), str(row["statement"]), fmt.prop(row["confidence"], 2), fmt.escape(text),
                   str(row["verdict"])])
    h4 = doc.req("H4")
    table.extra_notes.append(Tex(
        "H4 (C4, design $\\times$ reward scaling): "
        + ("not decided (" + fmt.escape(str(h4.get("reason", ""))) + ")" if not h4.get("decided") else
           f"gap with group scaling {_short(h4.get('gap_group'))}, without {_short(h4.get('gap_none'))}; "
           + ("passes" if h4.get("passes") else "does not pass"))
        + ". A verdict is given only on a complete seed matrix; \\emph{not run}: the tier was not trained here."))
    return table


def build_table6(ctx: Context) -> TableModel:
    return _predictions_register_table(ctx, "Registered numeric predictions and outcomes (tier 1)")


def build_table15(ctx: Context) -> TableModel:
    return _predictions_register_table(ctx, "Registered predictions with the later tiers")


def build_table16(ctx: Context) -> TableModel:
    """Each tier comparison: the AUC gap on the condition's learning set with its interval, per seed, and
    the step-0 luck share (the dose-response axis)."""
    table = TableModel(
        "Registered tiers: treatment minus control by comparison",
        [Tex("Comparison"), Tex("Arms"), Tex("Seeds"), Tex("AUC gap"), Tex("95\\% CI"), Tex("by seed"),
         Tex("$\\lambda_0$"), Tex("Complete")],
        ["l", "l", "r", "r", "l", r">{\raggedright\arraybackslash}p{3.2cm}", "r", "c"],
        size=r"\footnotesize",
    )
    docs = [src.load_decision(p) for p in ctx.inputs.files("decisions")]
    for doc in sorted(docs, key=lambda d: str(d.opt("comparison") or d.req("condition")).lower()):
        name = str(doc.opt("comparison") or doc.req("condition")).lower()
        gap = doc.opt("auc_gap") or doc.opt("H2a") or doc.opt("H2b") or {}
        arms = f"{doc.opt('treatment') or 'paired'} $-$ {doc.opt('control') or 'independent'}"
        by_seed = ", ".join(f"{v:+.3f}" for v in gap.get("auc_difference_by_seed") or [])
        luck = doc.opt("luck_share_step0", "mean")
        if luck is None and doc.opt("H1a", "luck_share_step0"):
            values = [v.get("lam") for v in doc.opt("H1a", "luck_share_step0").values() if v.get("lam") is not None]
            luck = sum(values) / len(values) if values else None
        ci = gap.get("auc_difference_ci95")
        table.add([fmt.escape(name), Tex(fmt.escape(arms.replace("$-$", "-")).replace("-", "$-$", 1)),
                   fmt.integer(len(doc.req("seeds"))), fmt.signed(gap.get("auc_difference_mean"), 3, table.notes,
                                                                  "not computed"),
                   fmt.escape(f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "n/a"), fmt.escape(by_seed),
                   fmt.prop(luck, 3, table.notes, "no luck-share file"), fmt.mark(bool(doc.req("complete")))])
    table.extra_notes.append(Tex(
        "AUC of true success on the condition's learning set (at-training noise under tool faults, clean under "
        "grader flips), treatment minus control, paired percentile bootstrap over seed pairs and tasks. "
        "$\\lambda_0$: mean step-0 luck share of the comparison's runs. Tier comparisons are measured, not "
        "decided: the registered predictions (table 15) judge them."))
    return table


RECOVERY_SETS = ["noisy_p025", "challenge"]


def build_table7(ctx: Context) -> TableModel:
    decision = src.decision_for(_decisions(ctx), "C2", "table 7")
    final_regimes = ["clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge"]
    table = TableModel(
        "C2 secondary endpoints",
        [Tex("Run"), Tex("Steps to $T$"), Tex("AUC")] + [regime_label(r) for r in final_regimes]
        + [regime_label(r) for r in RECOVERY_SETS] + [regime_label(r) for r in RECOVERY_SETS],
        ["l", "r", "r"] + ["r"] * (len(final_regimes) + 2 * len(RECOVERY_SETS)),
        groups=[(Tex(""), 3), (Tex("Final test success"), len(final_regimes)),
                (Tex("Recovery success"), len(RECOVERY_SETS)), (Tex("Exposed"), len(RECOVERY_SETS))],
        size=r"\scriptsize",
        tabcolsep="3pt",
    )
    if decision.opt("secondary") is None:
        table.add([fmt.missing(table.notes, "the decision register has no secondary block")]
                  + [""] * (len(table.headers) - 1))
        return table
    sec = decision.sub("secondary")
    threshold = sec.number("threshold")
    curve = str(sec.req("threshold_curve"))
    steps = sec.req("steps")
    horizon = int(steps[-1]) if steps else None
    table.groups[0] = (Tex(f"threshold $T={fmt.prop(threshold)}$ on {regime_label(curve)}"), 3)
    stt = sec.req("steps_to_threshold")
    runs = sorted({*stt.keys(), *(sec.opt("final") or {}).keys()},
                  key=lambda r: (src.ARM_ORDER.get((src.parse_run(r) or ("", "", 0))[1], 9), r))
    by_arm: dict[str, list[str]] = defaultdict(list)
    for run in runs:
        parsed = src.parse_run(run)
        by_arm[parsed[1] if parsed else "other"].append(run)
    first = True
    for arm in sorted(by_arm, key=lambda a: src.ARM_ORDER.get(a, 9)):
        if not first:
            table.rule()
        first = False
        table.section(ARM_LABELS.get(arm, arm))
        for run in by_arm[arm]:
            entry = stt.get(run) or {}
            cells = [_run_label(run)]
            if run in stt:
                cells.append(fmt.censored_steps(_num(entry.get("step")), bool(entry.get("censored")), horizon,
                                                notes=table.notes))
            else:
                cells.append(fmt.missing(table.notes, "not in the register"))
            cells.append(fmt.prop(_num(sec.opt("auc", run, curve)), 3, table.notes, "not evaluated"))
            for regime in final_regimes:
                cells.append(fmt.prop(_num(sec.opt("final", run, regime)), 3, table.notes, "not evaluated"))
            for regime in RECOVERY_SETS:
                cells.append(fmt.prop(_num(sec.opt("recovery_success", run, regime)), 3, table.notes,
                                      "no exposed episode (or not in the register)"))
            for regime in RECOVERY_SETS:
                cells.append(fmt.prop(_num(sec.opt("exposure", run, regime)), 3, table.notes,
                                      "exposure not in the register"))
            table.add(cells)
        summary = sec.opt("steps_to_threshold_by_arm", arm) or {}
        reached = summary.get("reached")
        total = summary.get("runs")
        median = _num(summary.get("median_reached"))
        steps_cell = (Tex(f"{fmt.prop(median, 1) if median is not None else '---'} ({fmt.integer(int(reached))}/"
                          f"{fmt.integer(int(total))})") if reached is not None and total is not None else Tex(""))
        cells = [Tex(r"\textit{mean}"), steps_cell, fmt.prop(_num(sec.opt("arms", arm, "auc", curve)), 3,
                                                              table.notes, "not evaluated")]
        for regime in final_regimes:
            cells.append(fmt.prop(_num(sec.opt("arms", arm, "final", regime)), 3, table.notes, "not evaluated"))
        table.add(cells + [Tex("")] * (2 * len(RECOVERY_SETS)))
    table.extra_notes.append(Tex(
        f"Steps to $T$: first evaluated step whose {regime_label(curve)} success reaches $T$, linearly "
        f"interpolated; $>${horizon if horizon is not None else '?'} = never reached (censored). "
        "Mean rows: median over the runs that reached $T$ (reached/runs), and means over seeds. Recovery success: "
        "true success among the final episodes that met at least one fault; exposed: the share of final episodes "
        "that met one."))
    return table


# ---------------------------------------------------------------- episode-based tables


def _episodes(ctx: Context, what: str) -> list[src.RunEpisodes]:
    runs = src.load_episodes(ctx.inputs.files("episodes"))
    if not runs:
        raise UserError(f"{what}: the episode files hold no periodic or final records")
    return src.single_runs(runs, what)


def build_table8(ctx: Context) -> TableModel:
    runs = _episodes(ctx, "table 8")
    # at_training is the C4 runs' own regime (grader flips at q = 0.10); the other runs are not evaluated there
    regimes = ["clean", "noisy_p010", "noisy_p025", "heldout_types", "challenge", "at_training"]
    table = TableModel(
        "Policies trained with grader noise (C4) under tool faults",
        [Tex("Run")] + [regime_label(r) for r in regimes],
        ["l"] + ["r"] * len(regimes),
        groups=[(Tex(""), 1), (Tex("Final test success"), len(regimes))],
        size=r"\small",
    )
    groups: dict[tuple[str, str], list[src.RunEpisodes]] = defaultdict(list)
    for run in runs:
        groups[(run.condition, run.arm)].append(run)
    order = sorted(groups, key=lambda k: ({"C4": 0, "C2": 1, "C0": 2}.get(k[0], 9), src.ARM_ORDER.get(k[1], 9)))
    means: dict[tuple[str, str], dict[str, float | None]] = {}
    for index, key in enumerate(order):
        if index:
            table.rule()
        table.section(f"{key[0]}, {ARM_LABELS.get(key[1], key[1])}")
        for run in groups[key]:
            table.add([_run_label(run.run)] + [fmt.prop(run.final(r), 3, table.notes, "not evaluated")
                                               for r in regimes])
        means[key] = {r: _mean([run.final(r) for run in groups[key]]) for r in regimes}
        table.add([Tex(r"\textit{mean}")] + [fmt.prop(means[key][r], 3, table.notes, "not every seed evaluated")
                                             for r in regimes])
    comparisons = []
    for arm in ("paired", "independent"):
        if ("C4", arm) in means:
            if ("C0", "clean") in means:
                comparisons.append((f"C4 {arm} $-$ C0", ("C4", arm), ("C0", "clean")))
            if ("C2", arm) in means:
                comparisons.append((f"C4 {arm} $-$ C2 {arm}", ("C4", arm), ("C2", arm)))
    if comparisons:
        table.rule()
        table.section("differences of the means")
        for label, a, b in comparisons:
            table.add([Tex(label)] + [fmt.signed(_diff(means[a][r], means[b][r]), 3, table.notes,
                                                 "not every seed evaluated") for r in regimes])
    return table


@dataclass(frozen=True)
class RunCurves:
    """One run's curves and AUC as its run register holds them (stats/run_register.py computes them)."""

    run: str
    condition: str
    arm: str
    seed: int
    curves: dict[str, dict[int, float]]
    auc: dict[str, float | None]
    final: dict[str, float | None]

    def value(self, step: int, regime: str) -> float | None:
        return self.curves.get(regime, {}).get(step)

    def steps(self) -> list[int]:
        return sorted({s for curve in self.curves.values() for s in curve})


def _run_curves(path: Path) -> RunCurves:
    doc = src.load_run_register(path)
    return RunCurves(
        str(doc.req("run")), str(doc.req("condition")).upper(), str(doc.req("arm")), int(doc.req("seed")),
        {regime: {int(k): float(v) for k, v in curve.items()} for regime, curve in doc.req("curves").items()},
        {regime: _num(v) for regime, v in doc.req("auc").items()},
        {regime: _num(v) for regime, v in doc.req("final").items()})


def _pick_pair(runs: list[RunCurves], settings: dict[str, Any]) -> tuple[RunCurves, RunCurves]:
    condition = str(settings.get("condition", "")).upper() or None
    seed = settings.get("seed")
    candidates: dict[tuple[str, int], dict[str, RunCurves]] = defaultdict(dict)
    for run in runs:
        if run.arm in candidates[(run.condition, run.seed)]:
            raise UserError(f"table 9: two run registers for {run.condition} {run.arm} seed {run.seed}; pass one")
        candidates[(run.condition, run.seed)][run.arm] = run
    pairs = sorted((k for k, v in candidates.items() if {"paired", "independent"} <= set(v)
                    and (condition is None or k[0] == condition) and (seed is None or k[1] == int(seed))),
                   key=lambda k: (src.CONDITION_ORDER.get(k[0], 9), k[1]))
    if not pairs:
        raise UserError("table 9: the run registers hold no paired/independent seed pair"
                        + (f" for condition {condition}" if condition else "")
                        + (f" and seed {seed}" if seed is not None else "")
                        + "; pass both runs' results/runs/RUN/register.json")
    chosen = candidates[pairs[0]]
    return chosen["paired"], chosen["independent"]


def build_table9(ctx: Context) -> TableModel:
    runs = [_run_curves(p) for p in ctx.inputs.files("registers")]
    paired, independent = _pick_pair(runs, ctx.settings)
    regimes = [r for r in src.PERIODIC_REGIMES if paired.curves.get(r) or independent.curves.get(r)]
    headers = [Tex("Step")]
    for _ in regimes:
        headers += [P, I_, DELTA]
    table = TableModel(
        f"Validation curves of one seed pair ({paired.condition}, seed {paired.seed})",
        headers, ["r"] + ["r"] * (3 * len(regimes)),
        groups=[(Tex(""), 1)] + [(regime_label(r), 3) for r in regimes],
        size=r"\small",
    )
    for step in sorted(set(paired.steps()) | set(independent.steps())):
        cells = [fmt.integer(step)]
        for regime in regimes:
            a, b = paired.value(step, regime), independent.value(step, regime)
            cells += [fmt.prop(a, 3, table.notes, "not evaluated"), fmt.prop(b, 3, table.notes, "not evaluated"),
                      fmt.signed(_diff(a, b), 3, table.notes, "not evaluated")]
        table.add(cells)
    table.rule()
    cells = [Tex("AUC")]
    for regime in regimes:
        a, b = paired.auc.get(regime), independent.auc.get(regime)
        cells += [fmt.prop(a, 3, table.notes, "not evaluated"), fmt.prop(b, 3, table.notes, "not evaluated"),
                  fmt.signed(_diff(a, b), 3, table.notes, "not evaluated")]
    table.add(cells)
    table.extra_notes.append(Tex(
        f"\\textsc{{p}} = \\texttt{{{fmt.escape(paired.run)}}}, \\textsc{{i}} = \\texttt{{{fmt.escape(independent.run)}}}; "
        "$\\Delta$ = \\textsc{p} $-$ \\textsc{i}."))
    return table


# ---------------------------------------------------------------- table 10: constant-reward groups


def spurious_formula(q: float, g: int) -> float:
    """Chance that an all-correct group of G shows differing observed rewards: 1-(1-q)^G-q^G."""
    return 1.0 - (1.0 - q) ** g - q**g


def build_table10(ctx: Context) -> TableModel:
    table = TableModel(
        "Constant-reward groups and spurious variance in training",
        [Tex("Run"), Tex("Groups"), Tex("Const."), Tex("All-correct"), Tex("Spurious"), Tex("Rate"),
         Tex("Expected"), Tex("Seeds")],
        ["l", "r", "r", "r", "r", "r", "r", "l"],
        groups=[(Tex(""), 2), (Tex("fraction"), 1), (Tex("all-correct groups"), 4), (Tex(""), 1)],
        size=r"\small",
    )
    docs = [src.load_group_stats(p) for p in ctx.inputs.files("group_stats")]
    docs.sort(key=lambda d: src.RunId(str(d.req("run")), str(d.req("condition")).upper(), str(d.req("arm")),
                                      int(d.req("seed"))).order)
    pooled: dict[tuple[str, str], list[Doc]] = defaultdict(list)
    for doc in docs:
        pooled[(str(doc.req("condition")).upper(), str(doc.req("arm")))].append(doc)
    first = True
    for key, members in pooled.items():
        if not first:
            table.rule()
        first = False
        table.section(f"{key[0]}, {ARM_LABELS.get(key[1], key[1])}")
        for doc in members:
            expected = doc.opt("expected_spurious_rate")
            expected_rate = _num(expected.get("rate")) if isinstance(expected, dict) else None
            sharing = doc.opt("seed_sharing", "passes")
            table.add([
                _run_label(str(doc.req("run"))), fmt.integer(int(doc.req("groups"))),
                fmt.prop(doc.number("zero_variance_frac"), 3, table.notes, "no groups"),
                fmt.integer(int(doc.req("all_correct_groups"))), fmt.integer(int(doc.req("spurious_groups"))),
                fmt.prop(doc.number("spurious_among_all_correct") if doc.opt("spurious_among_all_correct") is not None
                         else None, 3, table.notes, "no all-correct group"),
                fmt.prop(expected_rate, 3, table.notes, "no outcome-noise level q given to group-stats"),
                Tex("as designed") if sharing is True else (Tex("\\textbf{violated}") if sharing is False
                                                            else fmt.missing(table.notes, "not applicable (clean arm)")),
            ])
        if len(members) > 1:
            groups = sum(int(d.req("groups")) for d in members)
            zero = sum(int(d.opt("zero_variance_groups") if d.opt("zero_variance_groups") is not None
                           else round(float(d.req("zero_variance_frac")) * int(d.req("groups")))) for d in members)
            correct = sum(int(d.req("all_correct_groups")) for d in members)
            spurious = sum(int(d.req("spurious_groups")) for d in members)
            table.add([Tex(r"\textit{pooled}"), fmt.integer(groups),
                       fmt.prop(zero / groups if groups else None, 3, table.notes, "no groups"),
                       fmt.integer(correct), fmt.integer(spurious),
                       fmt.prop(spurious / correct if correct else None, 3, table.notes, "no all-correct group"),
                       "", ""])
    if not docs:
        raise UserError("table 10: no --input group_stats=PATH given")
    table.extra_notes.append(Tex(
        "Const.: fraction of groups whose observed rewards are all equal (zero advantage). Rate: spurious "
        "groups (all rollouts truly correct, observed rewards differ) among all-correct groups. Expected: "
        "$1-(1-q)^G-q^G$ for independent grader flips; a paired design gives 0 by construction."))
    return table


# ---------------------------------------------------------------- table 11: cross-stack replication


def build_table11(ctx: Context) -> TableModel:
    table = TableModel(
        "Cross-stack replication",
        [Tex("Run"), Tex("Stack"), Tex("AUC"), Tex("clean"), Tex("$p=0.25$"), Tex("held-out")],
        ["l", "l", "r", "r", "r", "r"],
        groups=[(Tex(""), 2), (Tex("validation"), 1), (Tex("final test success"), 3)],
        size=r"\small",
    )
    from paired_rollouts.records import read_run_manifest

    stacks: dict[tuple[str, str], str] = {}
    for path in ctx.inputs.files("manifests"):
        manifest = read_run_manifest(path)
        label = manifest.gpu or manifest.device
        if "torch" in manifest.versions:
            label += f", torch {manifest.versions['torch']}"
        root = str(Path(path).resolve().parent.parent.parent)  # results/runs/RUN/manifest.json -> results
        stacks[(root, manifest.run)] = label
    registers: dict[tuple[str, str], RunCurves] = {}
    for path in ctx.inputs.files("registers"):
        curves = _run_curves(path)
        registers[(str(Path(path).resolve().parent.parent.parent), curves.run)] = curves
    by_ident: dict[tuple[str, str, int], list[tuple[str, RunCurves | None, str]]] = defaultdict(list)
    for (root, run), label in sorted(stacks.items()):
        parsed = src.parse_run(run)
        if parsed is None:
            continue
        by_ident[parsed[:3]].append((run, registers.get((root, run)), label))
    replicated = {k: v for k, v in by_ident.items() if len({label for _, _, label in v}) > 1}
    if not replicated:
        labels = sorted({label for v in by_ident.values() for _, _, label in v})
        table.add([Tex(r"\textit{not run}"), fmt.escape("; ".join(labels) or "no manifest"), "", "", "", ""])
        table.extra_notes.append(fmt.escape(
            f"No run of this study was repeated on a second accelerator stack ({len(stacks)} run manifest(s), "
            f"stack(s): {', '.join(labels) or 'none'}); the comparison is not run at this scale."))
        return table
    for index, (ident, members) in enumerate(sorted(replicated.items())):
        if index:
            table.rule()
        values = []
        for run, entry, label in members:
            regime = "at_training" if ident[0] == "C2" else "clean"
            row = [entry.auc.get(regime) if entry else None] + [
                entry.final.get(r) if entry else None for r in ("clean", "noisy_p025", "heldout_types")]
            values.append(row)
            table.add([_run_label(run), fmt.escape(label)] + [fmt.prop(v, 3, table.notes, "no run register given")
                                                             for v in row])
        if len(values) == 2:
            table.add([Tex(r"\textit{difference}"), ""] + [fmt.signed(_diff(a, b), 3, table.notes,
                                                                       "no run register given")
                                                           for a, b in zip(values[0], values[1], strict=True)])
    return table


# ---------------------------------------------------------------- table 12: outcome-probe traces


def _exponent(values: Sequence[float | None]) -> int:
    finite = [abs(v) for v in values if v is not None and v != 0 and math.isfinite(v)]
    return int(math.floor(math.log10(max(finite)))) if finite else 0


def build_table12(ctx: Context) -> TableModel:
    probes = sorted((src.load_probe(p) for p in ctx.inputs.files("probe")), key=lambda d: str(d.req("trajectory")))
    if not probes:
        raise UserError("table 12: no --input probe=PATH given")
    rows = []
    for probe in probes:
        for step in src.probe_steps(probe):
            cp = probe.sub("checkpoints", str(step))
            out = cp.sub("outcome")
            g = int(out.number("G") or 0)
            counts = out.opt("success_counts")
            if counts is None:
                counts = [t.get("k_success") for t in (out.opt("table") or [])]
            counts = [int(k) for k in counts if k is not None]
            success = sum(counts) / (g * len(counts)) if counts and g else None
            nonzero = sum(1 for k in counts if 0 < k < g) / len(counts) if counts and g else None
            rows.append((str(probe.req("trajectory")), step, out.number("lhs_mean"), out.number("rhs_mean"),
                         out.number("mean_centered", "trace_var", "paired"),
                         out.number("mean_centered", "trace_var", "independent"),
                         success, cp.opt("counts", "rho_zero_fraction"), nonzero,
                         _num(out.opt("implemented", "trace_var", "paired")),
                         _num(out.opt("implemented", "trace_var", "independent")),
                         _num(out.opt("mean_centered", "identity_residual"))))
    unit_exp = ctx.settings.get("unit_exponent")
    if unit_exp is None:
        unit_exp = _exponent([v for r in rows for v in r[2:6]])
    unit = 10.0 ** int(unit_exp)
    table = TableModel(
        "Outcome-noise probe traces",
        [Tex("Step"), Tex("$LL$"), Tex("$RR$"), Tex("paired"), Tex("indep."), Tex("success"), Tex("masked"),
         Tex("non-zero"), Tex("paired"), Tex("indep."), Tex("residual")],
        ["r"] * 11,
        groups=[(Tex(""), 1), (Tex(f"$\\times 10^{{{int(unit_exp)}}}$"), 2),
                (Tex(f"MC Tr\\,Var $\\times 10^{{{int(unit_exp)}}}$"), 2), (Tex("fractions"), 3),
                (Tex("SW Tr\\,Var"), 2), (Tex("identity"), 1)],
        size=r"\footnotesize",
    )
    current = None
    for r in rows:
        if r[0] != current:
            if current is not None:
                table.rule()
            current = r[0]
            table.section(Tex(r"trajectory \texttt{" + fmt.escape(current) + "}"))
        table.add([fmt.integer(r[1])] + [fmt.scaled(v, unit, 3, table.notes, "not available") for v in r[2:6]]
                  + [fmt.prop(r[6], 3, table.notes, "no clean groups"),
                     fmt.prop(_num(r[7]), 3, table.notes, "not recorded by the probe"),
                     fmt.prop(r[8], 3, table.notes, "no clean groups")]
                  + [_sci(v, table.notes) for v in r[9:12]])
    table.extra_notes.append(Tex(
        "$LL$ = mean $\\|g_c\\|^2$ of the clean group gradient; $RR$ = mean $G^{-2}\\sum_i r_i\\|S_i-\\bar S\\|^2$; "
        "pairing lowers the MC variance iff $LL<RR$. Success: mean true success of the clean rollouts. Masked: "
        "fraction of rollouts whose importance ratio is 0. Non-zero: fraction of clean groups with mixed "
        "outcomes ($0<k<G$), i.e.\\ non-zero MC weights. SW: the implemented (standardised, importance-weighted) "
        "estimator's traces. Identity residual: MC Tr\\,Var paired $-$ independent $- q(1-q)(LL-RR)$ (zero up to "
        "rounding)."))
    _by_k_rows(table, probes)
    return table


# ---------------------------------------------------------------- surrogate scales


def build_table13(ctx: Context) -> TableModel:
    doc = src._load_json(ctx.inputs.files("power")[0], "power table")
    hyps = doc.req("hypotheses")
    sizes = sorted({int(n) for h in hyps.values() for n in h["power"]})
    table = TableModel("Power of the registered rules by design size",
                       [Tex("Hypothesis"), Tex("Condition"), Tex("passes (all pairs)")]
                       + [Tex(f"$n={n}$") for n in sizes],
                       ["l", "l", "c"] + ["r"] * len(sizes),
                       groups=[(Tex(""), 1), (Tex(""), 1), (Tex(""), 1),
                               (Tex("P(rule passes) with $n$ seed pairs"), len(sizes))])
    for name in ("H2a", "H3", "H5", "H2b"):
        if name not in hyps:
            continue
        h = hyps[name]
        table.add([name, h["condition"], fmt.mark(h["passes_full"])]
                  + [fmt.prop(h["power"].get(str(n)), 3, table.notes, "not estimated") for n in sizes])
    table.extra_notes.append(Tex(
        f"Each cell: the share of {int(doc.req('draws'))} draws of $n$ seed pairs (with replacement, from the "
        f"{int(doc.req('full_pairs'))} admitted pairs) on which the registered rule passes; H5's interval uses "
        f"{int(doc.req('bootstrap_resamples'))} bootstrap resamples per draw. $n=3$ is the paper's design."))
    return table


def build_table14(ctx: Context) -> TableModel:
    doc = src._load_json(ctx.inputs.files("calibration")[0], "calibration register")
    table = TableModel("Surrogate calibration to the paper's step-0 agent",
                       [Tex("Target"), Tex("paper"), Tex("tolerance"), Tex("achieved"), Tex("passes")],
                       ["l", "r", "r", "r", "c"])
    for row in doc.req("targets"):
        table.add([fmt.escape(str(row["target_name"]).replace("_", " ")), fmt.prop(row["target"], 3),
                   Tex("$\\pm$" + str(fmt.prop(row["tolerance"], 3))),
                   fmt.prop(row["achieved"], 3, table.notes, "undefined"), fmt.mark(row["passes"])])
    knobs = doc.req("knobs")
    table.extra_notes.append(Tex("Fitted knobs: " + ", ".join(
        f"{fmt.escape(k)} {v:.3f}" for k, v in sorted(knobs.items())) + f". Parameters: {len(doc.req('theta'))}."))
    return table
def _sci(value: float | None, notes: fmt.Notes) -> Tex:
    """A number of any magnitude in scientific notation (traces of the SW estimator, residuals)."""
    if value is None:
        return fmt.missing(notes, "not in the probe register")
    if value == 0:
        return Tex("0")
    mantissa, exponent = f"{value:.2e}".split("e")
    return Tex(f"${mantissa}\\times 10^{{{int(exponent)}}}$")


def _by_k_rows(table: TableModel, probes: list[Doc]) -> None:
    """Clean groups by success count k: how many, and their mean L/R (the probe register's `by_k`)."""
    for probe in probes:
        steps = src.probe_steps(probe)
        ks = sorted({int(k) for step in steps for k in (probe.opt("checkpoints", str(step), "outcome", "by_k") or {})})
        if not ks:
            continue
        table.rule()
        table.section(Tex(r"by success count $k$, trajectory \texttt{" + fmt.escape(str(probe.req("trajectory")))
                          + r"}: groups and mean $L/R$ per $k$"))
        for step in steps:
            by_k = probe.opt("checkpoints", str(step), "outcome", "by_k") or {}
            text = "; ".join(f"k={k}: {int(by_k[str(k)].get('count', 0))}, "
                             + (f"{by_k[str(k)]['lhs_over_rhs']:.3f}" if by_k[str(k)].get("lhs_over_rhs") is not None
                                else "n/a")
                             for k in ks if str(k) in by_k)
            table.add([fmt.integer(step), Tex(r"\multicolumn{10}{l}{" + fmt.escape(text) + "}")], kind="span")


# ---------------------------------------------------------------- registry

_EPISODES = KeySpec("episode records: results/evals/RUN/*.jsonl files (or folders)")
_DECISIONS = KeySpec("decision registers results/decisions/{c2,c4}.json")
_PROBE = KeySpec("probe registers results/probe/TRAJECTORY.json")
_PUBLISHED = KeySpec("data/published/paper.yaml: the paper's values, shown under the reproduced ones", required=False,
                     many=False)

TABLES: dict[int, TableSpec] = {
    1: TableSpec(1, "Run matrix", {"manifests": KeySpec("run manifests results/runs/RUN/manifest.json")},
                 build_table1),
    2: TableSpec(2, "Registered outcomes", {
        "decisions": _DECISIONS,
        "probe": KeySpec("probe registers (H1b)", required=False),
        "rules": KeySpec("prereg/decision_rules.yaml (hash checked against the registers)", required=False,
                         many=False),
    }, build_table2),
    3: TableSpec(3, "C2 primary endpoints by seed", {"decisions": KeySpec("the C2 decision register"),
                                                     "published": _PUBLISHED}, build_table3),
    4: TableSpec(4, "C4 primary endpoints by seed",
                 {"decisions": KeySpec("the C4 decision register (its secondary block holds the C0 reference)"),
                  "published": _PUBLISHED}, build_table4),
    5: TableSpec(5, "Probe ratios by checkpoint", {"probe": _PROBE}, build_table5),
    6: TableSpec(6, "Registered predictions and outcomes", {
        "predictions": KeySpec("the predictions register results/<scale>/decisions/predictions.json", many=False),
    }, build_table6),
    7: TableSpec(7, "C2 secondary endpoints", {
        "decisions": KeySpec("the C2 decision register (its secondary block)"),
        "episodes": KeySpec("accepted for the integrator's convenience; not read (the register holds the numbers)",
                            required=False),
    }, build_table7),
    8: TableSpec(8, "C4 policies under tool faults", {"episodes": _EPISODES}, build_table8),
    9: TableSpec(9, "Per-step validation curves of a seed pair",
                 {"registers": KeySpec("run registers results/runs/RUN/register.json of the seed pair")}, build_table9,
                 settings={"condition": "condition of the pair (default: C2 if present)",
                           "seed": "seed of the pair (default: the smallest with both arms)"}),
    10: TableSpec(10, "Constant-reward groups and spurious rates",
                  {"group_stats": KeySpec("results/runs/RUN/group_stats.json")}, build_table10),
    11: TableSpec(11, "Cross-stack replication", {
        "manifests": KeySpec("run manifests (their accelerator/versions identify the stack)"),
        "registers": KeySpec("run registers results/runs/RUN/register.json (AUC and final sets)", required=False),
    }, build_table11),
    12: TableSpec(12, "Outcome-probe traces", {"probe": _PROBE}, build_table12,
                  settings={"unit_exponent": "power of ten for LL, RR and MC (default: from the data; 5 at paper scale)"}),
    13: TableSpec(13, "Power of the registered rules (surrogate scales)",
                  {"power": KeySpec("results/<scale>/decisions/power.json", many=False)}, build_table13),
    14: TableSpec(14, "Surrogate calibration register",
                  {"calibration": KeySpec("results/<scale>/models/surrogate/calibration.json", many=False)},
                  build_table14),
    15: TableSpec(15, "Registered predictions with the later tiers", {
        "predictions": KeySpec("results/<scale>/decisions/tiers/predictions.json", many=False)}, build_table15),
    16: TableSpec(16, "Registered tiers by comparison", {
        "decisions": KeySpec("decision registers of tier 1 and of the tiers (results/<scale>/decisions/tiers/*.json)")},
        build_table16),
}


def table_inputs(number: int) -> dict[str, KeySpec]:
    """The ``--input`` keys table ``number`` reads (for Snakemake rules and docs)."""
    return dict(spec_for(number).keys)


def spec_for(number: int) -> TableSpec:
    if number not in TABLES:
        raise UserError(f"--number {number}: the tables are 1-{len(TABLES)} (13-14 at surrogate scales, 15-16 with the tiers)")
    return TABLES[number]


def build(number: int, given: dict[str, list[Path]], scale: str, settings: dict[str, Any]) -> tuple[TableModel, Inputs]:
    spec = spec_for(number)
    unknown = sorted(set(settings) - set(spec.settings))
    if unknown:
        raise UserError(f"table {number}: unknown --settings key(s) {', '.join(unknown)}; it accepts "
                        f"{', '.join(sorted(spec.settings)) or 'none'}")
    inputs = Inputs(given, spec.keys, f"table {number}")
    model = spec.build(Context(inputs, scale, settings))
    return model, inputs


def render_table(number: int, given: dict[str, list[Path]], scale: str, settings: dict[str, Any] | None = None) -> str:
    """The LaTeX text of table ``number`` (does not write anything)."""

    model, inputs = build(number, given, scale, settings or {})
    return render_model(number, model, inputs, scale)


def used_sources(inputs: Inputs) -> list[Path]:
    return [p for key, spec in inputs.declared.items() if "not read" not in spec.description for p in inputs.files(key)]


def render_model(number: int, model: TableModel, inputs: Inputs, scale: str) -> str:
    """The LaTeX text of a built table."""
    from paired_rollouts.render import tex

    used = used_sources(inputs)
    context = model.context()
    context.update(
        number=Tex(str(number)),
        label=Tex(f"table{number}"),
        scale=fmt.escape(scale),
        sources=src.describe_sources(used),
    )
    return tex.render(spec_for(number).template, **context)


__all__ = ["TABLES", "TableSpec", "TableModel", "build", "render_table", "table_inputs", "spurious_formula"]
