"""The paper's figures, drawn with matplotlib (Agg): a PDF for LaTeX and a PNG beside it.

Each figure is a :class:`FigureSpec` in :data:`FIGURES` with the ``--input`` keys it reads. Output is
deterministic (no creation date in the PDF), and the PDF's Subject metadata carries the caption text
(description, scale, sources) that ``render document`` prints under the figure.
"""

from __future__ import annotations

import io as _io
import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paired_rollouts import design, io, records
from paired_rollouts.errors import UserError
from paired_rollouts.records import DecisionRegister
from paired_rollouts.render import sources as src
from paired_rollouts.render.sources import Inputs, KeySpec

ARM_COLORS = {"paired": "#1b6ca8", "independent": "#d1495b", "clean": "#3a7d44"}
CONDITION_STYLES = {"C2": "-", "C4": "--", "C0": ":"}
REGIME_TITLES = {
    "clean": "clean validation",
    "at_training": "at-training noise",
    "challenge": "challenge set",
}


@dataclass(frozen=True)
class FigureSpec:
    name: str
    description: str
    keys: dict[str, KeySpec]
    draw: Callable[[Any, Inputs, str], None]  # (matplotlib Figure, inputs, scale) -> None


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logging.getLogger("fontTools").setLevel(logging.WARNING)
    plt.rcParams.update(
        {
            "font.size": 8,
            "axes.titlesize": 9,
            "legend.fontsize": 7,
            "figure.dpi": 100,
            "pdf.fonttype": 42,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


# ---------------------------------------------------------------- validation curves


def _curves(condition: str) -> Callable[[Any, Inputs, str], None]:
    def draw(fig, inputs: Inputs, scale: str) -> None:
        what = f"figure curves_{condition.lower()}"
        runs = src.single_runs(inputs.files("registers"), what)
        chosen = [r for r in runs if r.condition in (condition, "C0")]
        if not any(r.condition == condition for r in chosen):
            raise UserError(f"{what}: no run register of condition {condition} among the inputs")
        means = src.arm_means(inputs.files("curves"), chosen, what)
        regimes = [g for g in design.PERIODIC_REGIMES if any(r.curve(g) for r in chosen)]
        axes = fig.subplots(1, len(regimes), sharey=True, squeeze=False)[0]
        for ax, regime in zip(axes, regimes, strict=True):
            arms: set[str] = set()
            for run in chosen:
                curve = run.curve(regime)
                if not curve:
                    continue
                arms.add(run.arm)
                xs, ys = zip(*curve, strict=True)
                ax.plot(xs, ys, color=ARM_COLORS.get(run.arm, "grey"), lw=0.7, alpha=0.35)
            for arm in sorted(arms, key=src.arm_rank):
                mean = _arm_mean(means, "C0" if arm == "clean" else condition, arm, regime, what)
                label = f"{arm} (C0)" if arm == "clean" else arm
                steps, values = zip(*mean.curve(regime), strict=True)
                ax.plot(
                    steps,
                    values,
                    color=ARM_COLORS.get(arm, "grey"),
                    lw=2,
                    marker="o",
                    ms=3,
                    label=f"{label}, mean of {mean.curve_runs[regime]}",
                )
            ax.set_title(REGIME_TITLES.get(regime, regime))
            ax.set_xlabel("training step")
            ax.grid(alpha=0.3, lw=0.5)
        axes[0].set_ylabel("true success")
        # Below the panels, not inside one: with few steps the curves fill the whole panel.
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=max(1, len(labels)), frameon=False)
        fig.suptitle(f"{condition} validation curves (thin: single seeds) -- {scale} scale", fontsize=9)

    return draw


def _arm_mean(means: dict[tuple[str, str], Any], condition: str, arm: str, regime: str, what: str) -> Any:
    """The curves register's mean of (condition, arm) on ``regime``; its absence names the file to pass."""
    mean = means.get((condition, arm))
    if mean is None or not mean.curves.get(regime):
        raise UserError(
            f"{what}: no {regime} mean curve of {condition} {arm} among the curves registers; pass "
            f"results/curves/{condition.lower()}.json (paired-rollouts curves-register)"
        )
    return mean


# ---------------------------------------------------------------- luck share


def luck_series(paths: list[Path]) -> dict[str, dict[str, list[tuple[int, float, list]]]]:
    """{condition: {run: [(step, lam, ci95)]}} of the luck-share files with a luck share, conditions in
    the study's order and each condition's runs by name (tier runs under their own conditions)."""
    by_run: dict[str, list[tuple[int, float, list]]] = defaultdict(list)
    for record in (records.read_luck(p) for p in paths):
        if record.lam is not None:
            by_run[record.run].append((record.step, float(record.lam), record.ci95))
    by_condition: dict[str, dict[str, list[tuple[int, float, list]]]] = defaultdict(dict)
    for run in sorted(by_run):
        by_condition[design.parse_run(run).condition][run] = sorted(by_run[run])
    return {c: by_condition[c] for c in sorted(by_condition, key=src.condition_rank)}


def _luck_share(fig, inputs: Inputs, scale: str) -> None:
    files = inputs.files("luck")
    if not files:
        raise UserError("figure luck_share: no --input luck=PATH given")
    series = luck_series(files)
    axes = fig.subplots(1, max(1, len(series)), sharey=True, squeeze=False)[0]
    for ax, (condition, runs) in zip(axes, series.items(), strict=False):
        for index, (run, points) in enumerate(runs.items()):
            arm = design.parse_run(run).arm
            offset = (index - (len(runs) - 1) / 2) * 0.6
            xs = [s + offset for s, _, _ in points]
            ys = [v for _, v, _ in points]
            lo = [v - c[0] if c[0] is not None else 0 for _, v, c in points]
            hi = [c[1] - v if c[1] is not None else 0 for _, v, c in points]
            ax.errorbar(
                xs,
                ys,
                yerr=[lo, hi],
                color=ARM_COLORS.get(arm, "grey"),
                marker="o",
                ms=3,
                lw=1,
                capsize=2,
                label=run,
                alpha=0.9,
            )
        ax.axhline(0.15, color="black", lw=0.6, ls="--")
        ax.set_title(f"{condition}")
        ax.set_xlabel("checkpoint step")
        ax.grid(alpha=0.3, lw=0.5)
        ax.legend(frameon=False, fontsize=6)
    axes[0].set_ylabel(r"luck share $\lambda$ (95% CI)")
    fig.suptitle(f"Luck share by checkpoint (dashed: registered 0.15) -- {scale} scale", fontsize=9)


# ---------------------------------------------------------------- spurious variance


def spurious_rate(q: float, g: int) -> float:
    return 1.0 - (1.0 - q) ** g - q**g


def _spurious(fig, inputs: Inputs, scale: str) -> None:
    stats = [records.read_group_stats(p) for p in inputs.files("group_stats")]
    if not stats:
        raise UserError("figure spurious_variance: no --input group_stats=PATH given")
    ax = fig.subplots()
    sizes = sorted({one.group_size for one in stats})
    qs = [i / 200 for i in range(0, 101)]
    for g in sizes:
        ax.plot(qs, [spurious_rate(q, g) for q in qs], color="black", lw=1, label=f"$1-(1-q)^G-q^G$, G={g}")
    seen = set()
    for one in stats:
        rate = one.spurious_among_all_correct
        if rate is None:
            continue
        expected = one.expected_spurious_rate
        q = 0.0 if expected is None else float(expected.q)  # no outcome noise in training: no expected rate
        arm = one.arm
        label = arm if arm not in seen else None
        seen.add(arm)
        ax.scatter(
            [q],
            [float(rate)],
            color=ARM_COLORS.get(arm, "grey"),
            s=18,
            zorder=3,
            label=label,
            marker="o" if arm != "paired" else "s",
        )
    ax.set_xlabel("grader flip probability $q$")
    ax.set_ylabel("spurious rate among all-correct groups")
    ax.set_xlim(-0.01, 0.5)
    ax.set_ylim(-0.02, 1.0)
    ax.grid(alpha=0.3, lw=0.5)
    ax.legend(frameon=False)
    ax.set_title(f"Spurious reward variance vs the closed form -- {scale} scale")


# ---------------------------------------------------------------- probe ratios


def _probe_ratios(fig, inputs: Inputs, scale: str) -> None:
    probes = src.probes(inputs.files("probe"))
    if not probes:
        raise UserError("figure probe_ratios: no --input probe=PATH given")
    axes = fig.subplots(1, 2, sharey=True)
    markers = ["o", "s", "^", "D", "v"]
    for ax, estimator, title in (
        (axes[0], "mean_centered", "MC (decision)"),
        (axes[1], "implemented", "SW (reported)"),
    ):
        for index, probe in enumerate(probes):
            for noise, color in (("outcome", "#1b6ca8"), ("transition", "#d1495b")):
                points = [
                    (step, float(y))
                    for step, checkpoint in probe.checkpoints.items()
                    if (y := checkpoint.estimator(noise, estimator).ratio_paired_over_independent) is not None
                ]
                if points:
                    xs, vs = zip(*points, strict=True)
                    ax.plot(
                        xs,
                        vs,
                        color=color,
                        marker=markers[index % len(markers)],
                        ms=3,
                        lw=1,
                        ls="-" if index == 0 else "--",
                        label=f"{noise}, {probe.trajectory}",
                    )
        ax.axhline(1.0, color="black", lw=0.6)
        ax.set_title(title)
        ax.set_xlabel("checkpoint step")
        ax.grid(alpha=0.3, lw=0.5)
    axes[0].set_ylabel("Tr Var paired / independent")
    axes[0].legend(frameon=False, fontsize=6)
    fig.suptitle(f"Gradient-probe variance ratios (below 1: pairing helps) -- {scale} scale", fontsize=9)


# The final sets in the order the figure shows them (at_training: the set of a condition whose noise is
# none of the standard ones, design.final_regimes).
FINAL_SETS = (*design.FINAL_REGIMES, "at_training")
FINAL_TITLES = {
    "clean": "clean",
    "noisy_p010": "p=0.10",
    "noisy_p025": "p=0.25",
    "heldout_types": "held-out",
    "challenge": "challenge",
    "at_training": "at training",
}


def final_by_arm(decision: DecisionRegister) -> dict[str, list[dict[str, float]]]:
    """{arm: each run's final success per set} of a decision register's secondary block, arms in design
    order (a tier's runs under their own arms)."""
    by_arm: dict[str, list[dict[str, float]]] = defaultdict(list)
    for run, values in sorted(decision.secondary.final.items()):
        by_arm[design.parse_run(run).arm].append({k: float(v) for k, v in values.items() if v is not None})
    return {arm: by_arm[arm] for arm in sorted(by_arm, key=src.arm_rank)}


def _final_panel(ax: Any, decision: DecisionRegister) -> None:
    """One condition's panel: per set and arm, the mean over seeds (bar) and each seed (dots)."""
    by_arm = final_by_arm(decision)
    sets = [g for g in FINAL_SETS if any(g in v for runs in by_arm.values() for v in runs)]
    width = 0.8 / max(len(by_arm), 1)
    for j, (arm, runs) in enumerate(by_arm.items()):
        means = decision.secondary.arms.get(arm)
        for i, regime in enumerate(sets):
            values = [v[regime] for v in runs if regime in v]
            if not values:
                continue
            x = i - 0.4 + width * (j + 0.5)
            mean = means.final.get(regime) if means is not None else None
            if mean is not None:  # not every seed has the set: dots only
                ax.bar(
                    x,
                    float(mean),
                    width * 0.9,
                    color=ARM_COLORS.get(arm, "grey"),
                    alpha=0.45,
                    label=(f"{arm} (C0)" if arm == "clean" else arm) if i == 0 else None,
                )
            ax.plot([x] * len(values), values, "o", color=ARM_COLORS.get(arm, "grey"), ms=3)
    ax.set_xticks(range(len(sets)), [FINAL_TITLES.get(g, g) for g in sets], rotation=30)
    ax.set_title(f"{decision.condition}-trained policies")
    ax.grid(axis="y", alpha=0.3, lw=0.5)


def _final_success(fig, inputs: Inputs, scale: str) -> None:
    """The paper's figure 3: final test success per set, arm and seed (bars: the decision register's
    mean over seeds, ``secondary.arms.ARM.final``; dots: its seeds, ``secondary.final``)."""
    panels = [
        d
        for d in sorted(src.decisions(inputs.files("decisions")), key=lambda d: d.condition)
        if d.secondary.final
    ]
    if not panels:
        raise UserError("figure final_success: no decision register with secondary.final values")
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, decision in zip(axes, panels, strict=True):
        _final_panel(ax, decision)
    axes[0].set_ylabel("final true success")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    fig.suptitle(f"Final test success per set, arm and seed -- {scale} scale", fontsize=9)


@dataclass(frozen=True)
class DosePoint:
    """One comparison of the dose response: its step-0 luck share against its AUC gap and interval."""

    name: str
    luck: float
    gap: float
    ci: list[float | None]
    complete: bool


def comparison_points(decisions: list[DecisionRegister]) -> list[DosePoint]:
    """Per comparison: its name, step-0 luck share, AUC gap and interval (the dose-response points)."""
    points = []
    for register in decisions:
        if "blocking" in register.name:
            continue  # blocking pairs compare two hybrid designs, not pairing against independence
        gap, luck = register.gap, register.step0_luck_share
        if gap is None or gap.auc_difference_mean is None or luck is None:
            continue
        ci = gap.auc_difference_ci95 or [None, None]
        points.append(DosePoint(register.name, luck, gap.auc_difference_mean, ci, register.complete))
    return sorted(points, key=lambda p: (p.luck, p.name))


def _dose_response(fig, inputs: Inputs, scale: str) -> None:
    """Paired-minus-independent AUC gap with its interval for every condition, ordered by step-0 luck share."""
    points = comparison_points(src.decisions(inputs.files("decisions")))
    if not points:
        raise UserError("figure dose_response: no decision register with an AUC gap and a step-0 luck share")
    ax = fig.subplots()
    for x, point in enumerate(points):
        lo, hi = point.ci
        if lo is not None and hi is not None:
            ax.plot([x, x], [lo, hi], color="#1b6ca8", lw=1.2)
        ax.plot(x, point.gap, "o" if point.complete else "x", color="#1b6ca8", ms=5)
    ax.axhline(0.0, color="grey", lw=0.6)
    ax.set_xticks(range(len(points)), [f"{p.name}\n$\\lambda_0$={p.luck:.2f}" for p in points], fontsize=7)
    ax.set_ylabel("AUC gap (paired - independent)")
    ax.grid(axis="y", alpha=0.3, lw=0.5)
    ax.set_title(f"Dose response: gap against the step-0 luck share -- {scale} scale", fontsize=9)


def _probe_decomposition(fig, inputs: Inputs, scale: str) -> None:
    """The paper's figure 5: each trace split into its within-group and between-group parts."""
    probes = src.probes(inputs.files("probe"))
    if not probes:
        raise UserError("figure probe_decomposition: no --input probe=PATH given")
    axes = fig.subplots(1, 2)
    for ax, noise, designs in (
        (axes[0], "outcome", ("paired", "independent")),
        (axes[1], "transition", ("paired", "independent_resampled")),
    ):
        labels, x, seen = [], 0, set()
        for probe in probes:
            for step, checkpoint in probe.checkpoints.items():
                mc = checkpoint.estimator(noise, "mean_centered")
                for k, name in enumerate(designs):
                    within, between = mc.trace_var_within.get(name), mc.trace_var_between.get(name)
                    if within is None or between is None:
                        continue
                    color = ARM_COLORS["paired" if k == 0 else "independent"]
                    first = name not in seen
                    seen.add(name)
                    ax.bar(x + 0.4 * k, within, 0.38, color=color, label="within, " + name if first else None)
                    ax.bar(
                        x + 0.4 * k,
                        between,
                        0.38,
                        bottom=within,
                        color=color,
                        alpha=0.35,
                        label="between, " + name if first else None,
                    )
                labels.append((x + 0.2, f"{probe.trajectory}{step}"))
                x += 1
        if labels:
            ax.set_xticks([p for p, _ in labels], [t for _, t in labels], rotation=45, fontsize=6)
        ax.set_title(f"{noise} noise: MC Tr Var")
        ax.grid(axis="y", alpha=0.3, lw=0.5)
        if seen:
            ax.legend(frameon=False, fontsize=6)
        else:
            ax.text(
                0.5,
                0.5,
                "no within/between traces in the probe register",
                ha="center",
                va="center",
                transform=ax.transAxes,
                fontsize=7,
            )
    fig.suptitle(f"Gradient-probe trace decomposition (within / between groups) -- {scale} scale", fontsize=9)


# Each key names its files as a look-up on the scale's Layout, so one input function (rules/common.smk)
# serves every figure.
_REGISTERS = KeySpec(
    "run registers results/runs/RUN/register.json (the condition's runs and the C0 runs)",
    files=lambda layout: layout.files(layout.register),
)
_CURVES = KeySpec(
    "curves registers results/curves/CONDITION.json (the condition's and C0's)",
    files=lambda layout: layout.curves_files(),
)
_PROBE = KeySpec("probe registers results/probe/TRAJECTORY.json", files=lambda layout: layout.probe_files())

# ---------------------------------------------------------------- surrogate beside the paper


def _surrogate_curves(fig, inputs: Inputs, scale: str) -> None:
    """Three panels (C2 noisy validation, C2 challenge, C4 clean validation): this scale's arm means (solid)
    and the paper's published curves (dashed, hollow markers)."""
    from paired_rollouts.compare.published import CURVE_ARMS, load_published_curves

    published = load_published_curves(inputs.files("published_curves")[0])
    means = src.arm_means(inputs.files("curves"), [], "figure surrogate_curves")
    axes = fig.subplots(1, len(published.panels), squeeze=False)[0]
    for ax, panel in zip(axes, published.panels.values(), strict=True):
        for arm in CURVE_ARMS:
            color = ARM_COLORS[arm]
            mean = means.get(("C0" if arm == "clean" else panel.condition, arm))
            curve = mean.curve(panel.regime) if mean is not None else None
            if curve:
                steps, values = zip(*curve, strict=True)
                ax.plot(
                    steps,
                    values,
                    color=color,
                    lw=1.8,
                    marker="o",
                    ms=3,
                    label=f"{scale}: {arm}, mean of {mean.curve_runs[panel.regime]}",
                )
            ax.plot(
                published.steps,
                [v / 100 for v in panel.arm(arm)],
                color=color,
                lw=1.0,
                ls="--",
                marker="o",
                ms=3,
                mfc="none",
                label=f"paper: {arm}, mean of 3",
            )
        ax.set_title(panel.title, fontsize=8)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3, lw=0.5)
    axes[0].set_ylabel("true success")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False, fontsize=7)
    fig.suptitle(f"{scale} learning curves (solid) beside the paper's published curves (dashed)", fontsize=9)


SPREAD_COLORS = {"surrogate": "#1b6ca8", "paper": "#d1495b", "paper_normal": "#edae49"}
SPREAD_LABELS = {
    "surrogate": "surrogate's spread",
    "paper": "paper's 3 seeds",
    "paper_normal": "normal, paper's SD",
}


def _power_curves(fig, inputs: Inputs, scale: str) -> None:
    """Per learning hypothesis: P(rule passes) against seed pairs at the paper's effect (top) and against
    the true effect with the paper's 3 seed pairs (bottom); colour = between-seed spread, solid = the
    registered rule, dashed = without its every-seed-ahead clause."""
    register = records.read_power_curves(inputs.files("power_curves")[0])
    at = register.at_paper
    names = [n for n in ("H2a", "H3", "H2b") if n in register.hypotheses]
    axes = fig.subplots(2, len(names), squeeze=False, sharey=True)
    small = 3 if 3 in register.pairs else min(register.pairs)
    for col, name in enumerate(names):
        h = register.hypotheses[name]
        top, bottom = axes[0][col], axes[1][col]
        for spread in register.spreads:
            for variant, style in (("rule", "-"), ("without_every_seed", "--")):
                label = f"{SPREAD_LABELS.get(spread, spread)}{'' if variant == 'rule' else ', no every-seed clause'}"
                top.plot(
                    register.pairs,
                    [h.curve(spread, n, variant)[at] for n in register.pairs],
                    color=SPREAD_COLORS.get(spread),
                    ls=style,
                    marker="o",
                    ms=3,
                    lw=1.2,
                    label=label,
                )
                bottom.plot(
                    register.multipliers,
                    h.curve(spread, small, variant),
                    color=SPREAD_COLORS.get(spread),
                    ls=style,
                    lw=1.2,
                )
        top.set_xscale("log", base=2)
        top.set_xticks(register.pairs, [str(n) for n in register.pairs])
        top.set_title(f"{name}: at the paper's effect ({h.effect:+.3f})", fontsize=8)
        top.set_xlabel("seed pairs")
        bottom.axvline(1.0, color="0.6", lw=0.6)
        bottom.set_title(f"{name}: with {small} seed pairs", fontsize=8)
        bottom.set_xlabel("true effect / paper's")
        for ax in (top, bottom):
            ax.set_ylim(-0.03, 1.03)
            ax.grid(alpha=0.3, lw=0.5)
    axes[0][0].set_ylabel("P(rule passes)")
    axes[1][0].set_ylabel("P(rule passes)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False, fontsize=7)


FIGURES: dict[str, FigureSpec] = {
    "curves_c2": FigureSpec(
        "curves_c2",
        "Validation curves of the C2 runs (transition noise) and the clean-trained "
        "C0 reference: mean over seeds (thick) and single seeds (thin)",
        {"registers": _REGISTERS, "curves": _CURVES},
        _curves("C2"),
    ),
    "curves_c4": FigureSpec(
        "curves_c4",
        "Validation curves of the C4 runs (grader noise) and the clean-trained "
        "C0 reference: mean over seeds (thick) and single seeds (thin)",
        {"registers": _REGISTERS, "curves": _CURVES},
        _curves("C4"),
    ),
    "luck_share": FigureSpec(
        "luck_share",
        "Luck share (share of outcome variance due to the fault schedule) by "
        "diagnostic checkpoint, with 95 % task-bootstrap intervals",
        {
            "luck": KeySpec(
                "luck-share files results/diagnostics/RUN/luck-stepN.json",
                files=lambda layout: layout.files(layout.luck_files),
            )
        },
        _luck_share,
    ),
    "spurious_variance": FigureSpec(
        "spurious_variance",
        "Observed spurious-variance rates among all-correct "
        "training groups against the closed form for independent grader flips",
        {
            "group_stats": KeySpec(
                "results/runs/RUN/group_stats.json", files=lambda layout: layout.files(layout.group_stats)
            )
        },
        _spurious,
    ),
    "probe_ratios": FigureSpec(
        "probe_ratios",
        "Gradient-probe variance ratios (paired over independent) by "
        "checkpoint, for outcome and transition noise",
        {"probe": _PROBE},
        _probe_ratios,
    ),
    "surrogate_curves": FigureSpec(
        "surrogate_curves",
        "Learning curves of this scale (mean over seeds per arm, solid) beside the paper's "
        "published curves (Qwen3.5-2B, mean of 3 seeds, dashed): C2 validation under tool faults, C2 recovery "
        "challenge, C4 clean validation; 'clean' is the C0 reference trained without noise",
        {
            "curves": _CURVES,
            "published_curves": KeySpec(
                "data/published/curves.yaml", many=False, files=lambda layout: [layout.published_curves()]
            ),
        },
        _surrogate_curves,
    ),
    "power_curves": FigureSpec(
        "power_curves",
        "Power of the registered learning rules (H2a, H3, H2b): the share of simulated designs on which the "
        "rule passes, against seed pairs at the paper's published effect (top) and against the true effect "
        "with 3 seed pairs (bottom); colour: the between-seed spread (this scale's seed pairs at the "
        "calibrated point, the paper's three seeds resampled, a normal with their SD); dashed: the rule "
        "without its every-seed-ahead clause",
        {
            "power_curves": KeySpec(
                "results/<scale>/decisions/power_curves.json",
                many=False,
                files=lambda layout: [layout.power_curves_file()],
            )
        },
        _power_curves,
    ),
    "final_success": FigureSpec(
        "final_success",
        "Final test success per set, arm and seed (paper figure 3): bars "
        "are the mean over seeds, dots single seeds",
        {
            "decisions": KeySpec(
                "decision registers results/decisions/{c2,c4}.json",
                files=lambda layout: layout.decision_files(),
            )
        },
        _final_success,
    ),
    "dose_response": FigureSpec(
        "dose_response",
        "Paired-minus-independent AUC gap (95% paired bootstrap "
        "interval) for every condition, ordered by the mean step-0 luck share of its "
        "runs; crosses mark incomplete comparisons",
        {
            "decisions": KeySpec(
                "decision registers of tier 1 and the tiers",
                files=lambda layout: layout.decision_files() + layout.tier_decision_files(),
            )
        },
        _dose_response,
    ),
    "probe_decomposition": FigureSpec(
        "probe_decomposition",
        "Gradient-probe trace decomposition (paper figure 5): "
        "within-group and between-group parts of the MC covariance trace per "
        "checkpoint and design",
        {"probe": _PROBE},
        _probe_decomposition,
    ),
}


def spec_for(name: str) -> FigureSpec:
    if name not in FIGURES:
        raise UserError(f"--name {name}: unknown figure; choose from {', '.join(FIGURES)}")
    return FIGURES[name]


def caption_text(spec: FigureSpec, inputs: Inputs, scale: str) -> str:
    sources = "; ".join(src.describe_sources(inputs.all_files()))
    return f"{spec.description}. Scale: {scale}. Sources: {sources}."


def render_figure(name: str, given: dict[str, list[Path]], scale: str, out: Path) -> tuple[Path, Path]:
    """Draw figure ``name`` and write ``out`` (PDF) and the PNG beside it, atomically."""
    spec = spec_for(name)
    if Path(out).suffix.lower() != ".pdf":
        raise UserError(f"--out {out}: a figure is written as .pdf (the .png goes beside it)")
    inputs = Inputs(given, spec.keys, f"figure {name}")
    plt = _plt()
    size = {"spurious_variance": (4.6, 3.4), "surrogate_curves": (7.0, 3.6), "power_curves": (7.0, 5.0)}.get(
        name, (7.0, 2.8)
    )
    fig = plt.figure(figsize=size, layout="constrained")
    try:
        spec.draw(fig, inputs, scale)
        caption = caption_text(spec, inputs, scale)
        pdf, png = _io.BytesIO(), _io.BytesIO()
        fig.savefig(pdf, format="pdf", metadata={"CreationDate": None, "Subject": caption, "Title": name})
        fig.savefig(png, format="png", dpi=150, metadata={"Software": None})
    finally:
        plt.close(fig)
    out = Path(out)
    png_path = out.with_suffix(".png")
    io.atomic_write_all([(png_path, png.getvalue()), (out, pdf.getvalue())])  # both or neither
    return out, png_path


def read_caption(pdf: Path) -> str | None:
    """The caption stored in a figure PDF's Subject (None when absent, e.g. a PDF made elsewhere)."""
    import re

    data = Path(pdf).read_bytes()
    match = re.search(rb"/Subject\s*\((.*?)(?<!\\)\)", data, re.S)
    if not match:
        return None
    raw = match.group(1)
    text = re.sub(rb"\\([()\\])", rb"\1", raw)
    try:
        return text.decode("latin-1")
    except UnicodeDecodeError:
        return None
