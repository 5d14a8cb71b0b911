"""The decision register (docs/records.md section 4): admission of each run, the seed pairs, tier 1's
hypotheses or a registered tier's measurements, and the secondary endpoints.

A run enters only if it is admitted: its completeness file says complete, its pools equal the data
manifest, and the evidence files read here are the very files that were checked (same sha256). Runs
are paired by seed; a seed enters only with both arms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from paired_rollouts.design import (
    DEFAULT_SCALING,
    PAPER_CONDITIONS,
    TIER1_HYPOTHESES,
    Comparison,
    learning_sets,
    parse_run,
)
from paired_rollouts.errors import UserError
from paired_rollouts.prereg.rules import DecisionRules
from paired_rollouts.records import Completeness, PoolManifest
from paired_rollouts.stats.completeness.expected import ExpectedEvidence
from paired_rollouts.stats.curves import round4
from paired_rollouts.stats.decisions.evidence import Luck, RunEvidence, admit, run_inputs
from paired_rollouts.stats.decisions.hypotheses import (
    H2_NAME,
    Pairs,
    base_lams,
    h1a_missing,
    hypothesis_h1a,
    hypothesis_h2,
    hypothesis_h3,
    hypothesis_h5,
    spurious_counts,
)
from paired_rollouts.stats.decisions.secondary import secondary

DesignEvidence = Callable[[str], ExpectedEvidence]  # run name -> the evidence its design calls for

HYPOTHESES = ("H1a", "H2a", "H2b", "H3", "H5")


def _is_paper(manifest: PoolManifest) -> bool:
    from paired_rollouts.backoffice.tasks import paper_pools

    return paper_pools(manifest.raw)


def tier1_comparison(condition: str) -> Comparison:
    """Tier 1's comparison of ``condition`` (paired against independent, the kind's hypotheses)."""
    if condition not in H2_NAME:
        raise UserError(f"--condition must be C2 or C4, got {condition}")
    kind = PAPER_CONDITIONS[condition].kind
    return Comparison(
        condition.lower(), condition, "paired", "independent", DEFAULT_SCALING, (), 1, TIER1_HYPOTHESES[kind]
    )


def _acceptance(
    runs: dict[str, RunEvidence],
    reference: dict[str, RunEvidence],
    complete: dict[str, Completeness],
    pools: dict[str, str],
    groups: dict[str, Any],
    luck: Luck,
    design: DesignEvidence | None,
    data_manifest: str,
) -> dict[str, dict[str, Any]]:
    """The acceptance entry of every run, in run order; the clean reference is descriptive only, so
    without a completeness file it enters unchecked."""
    acceptance = {}
    for run, ev in sorted(runs.items()):
        wanted = design(run) if design is not None else None
        entry = admit(ev, complete.get(run), pools, run_inputs(run, groups, luck), wanted, data_manifest)
        if run in reference and run not in complete:
            entry.update(admitted=True, reasons=[])
        acceptance[run] = entry
    return acceptance


def _orphans(
    episodes: dict[str, RunEvidence], groups: dict[str, Any], luck: Luck, comparison: Comparison
) -> list[str]:
    """Runs of the comparison whose training groups or luck share came without episode records."""
    out = []
    arms = (comparison.treatment, comparison.control)
    for run in sorted(set(groups) | {of_run for of_run, _ in luck}):
        ident = parse_run(run)
        if (
            run not in episodes
            and ident.condition == comparison.condition
            and ident.arm in arms
            and ident.scaling == comparison.scaling
        ):
            out.append(f"{run}: training groups or luck share given without episode records")
    return out


def _seed_pairs(
    comparison: Comparison,
    candidates: dict[str, RunEvidence],
    acceptance: dict[str, dict[str, Any]],
    design: list[int] | None,
    missing: list[str],
) -> Pairs:
    """The admitted seed pairs of the design's seeds; each seed left out says why in ``missing``."""
    seeds = sorted({ev.seed for ev in candidates.values()} | set(design or []))
    extra_seeds = sorted(set(seeds) - set(design)) if design is not None else []
    for seed in extra_seeds:
        missing.append(f"seed {seed}: runs outside the design's seeds {design}")
    pairs = []
    for seed in seeds:
        if seed in extra_seeds:
            continue
        p_name, i_name = (run.name for run in comparison.pair(seed))
        have = [n for n in (p_name, i_name) if n in candidates]
        for n in (p_name, i_name):
            if n not in candidates:
                missing.append(f"{n}: no episode records given")
        if len(have) == 2 and acceptance[p_name]["admitted"] and acceptance[i_name]["admitted"]:
            pairs.append((candidates[p_name], candidates[i_name]))
        elif len(have) == 2:
            missing.append(f"seed {seed}: left out, a run of the pair was not admitted")
        else:
            missing.append(f"seed {seed}: left out, the seed pair is not whole")
    return pairs


def _tier1_hypotheses(
    comparison: Comparison,
    pairs: Pairs,
    groups: dict[str, list[dict[str, Any]]],
    luck: Luck,
    rules: DecisionRules,
    why_undecided: str | None,
) -> dict[str, Any]:
    """Tier 1's hypothesis blocks; with ``why_undecided`` none passes or misses (partial evidence)."""
    condition = comparison.condition
    admitted = [ev for pair in pairs for ev in pair]
    blocks = {
        "H1a": hypothesis_h1a(condition, admitted, groups, luck, rules),
        H2_NAME[condition]: hypothesis_h2(pairs, condition, rules),
    }
    if "H3" in comparison.hypotheses:
        blocks["H3"] = hypothesis_h3(pairs, rules)
    if "H5" in comparison.hypotheses:
        blocks["H5"] = hypothesis_h5(pairs, rules)
    for block in blocks.values():
        if why_undecided is not None:
            block["passes"] = None
            block["reason"] = f"{block['reason']}; {why_undecided}" if block.get("reason") else why_undecided
        block["decided"] = block["passes"] is not None
    return blocks


def decide(
    condition: str,
    episodes: dict[str, RunEvidence],
    rules: DecisionRules,
    manifest: PoolManifest,
    *,
    groups: dict[str, list[dict[str, Any]]] | None = None,
    luck: Luck | None = None,
    complete: dict[str, Completeness] | None = None,
    conditions: dict[str, Any] | None = None,
    expected_seeds: Sequence[int] | None = None,
    comparison: Comparison | None = None,
    design_evidence: DesignEvidence | None = None,
    rules_verified: bool = False,
) -> dict[str, Any]:
    """Build the decision register (docs/records.md section 4) from loaded evidence.

    ``rules_verified``: the rules were found covered by a verification report (else nothing is
    decided on them). ``design_evidence`` gives the evidence the design calls for of a run; each completeness record must have
    been checked against exactly that (without it no hypothesis is decided).

    A hypothesis is *decided* (``passes`` true or false) only when the design's seeds are given and
    every seed pair of the design is admitted; otherwise its numbers describe the admitted pairs and
    ``passes`` is null with the reason: the protocol reruns incomplete runs, it never analyses them."""
    comparison = comparison or tier1_comparison(condition.upper())
    condition = comparison.condition
    groups = groups if groups is not None else {}
    luck, complete = luck or {}, complete or {}
    pools = manifest.sha256
    if not pools:
        raise UserError(
            f"{manifest.path}: no pools in the data manifest; regenerate with 'paired-rollouts tasks'"
        )
    arms = (comparison.treatment, comparison.control)
    candidates = {
        r: ev
        for r, ev in episodes.items()
        if ev.condition == condition and ev.arm in arms and ev.scaling == comparison.scaling
    }
    reference = {r: ev for r, ev in episodes.items() if ev.condition == "C0"}
    if not candidates:
        raise UserError(
            f"no episode records of comparison {comparison.name} ({condition} {' vs '.join(arms)}, "
            f"scaling {comparison.scaling}) among --episodes"
        )
    acceptance = _acceptance(
        {**candidates, **reference}, reference, complete, pools, groups, luck, design_evidence, manifest.path
    )
    missing = [
        f"{run}: {reason}" for run in acceptance if run in candidates for reason in acceptance[run]["reasons"]
    ]
    missing += _orphans(episodes, groups, luck, comparison)
    if not rules_verified:
        missing.append(
            f"the decision rules {rules.source} were not checked against a verification report "
            "(--verification); no verdict on unverified rules"
        )
    if design_evidence is None:
        missing.append(
            "the design's settings were not given (--settings or --expected); the completeness records "
            "cannot be compared with them"
        )
    design = sorted(set(expected_seeds)) if expected_seeds is not None else None
    if design is None:
        missing.append(
            "the design's seeds were not given (--seeds); a partial seed matrix cannot be told apart"
        )
    pairs = _seed_pairs(comparison, candidates, acceptance, design, missing)
    tier1 = comparison.tier == 1
    if tier1:
        admitted = [ev for pair in pairs for ev in pair]
        missing += h1a_missing(condition, admitted, groups, luck, rules.h1a_c2_step)
    decided = bool(pairs) and not missing and design is not None and len(pairs) == len(design)
    register: dict[str, Any] = {
        "condition": condition,
        **(
            {}
            if tier1
            else {
                "comparison": comparison.name,
                "tier": comparison.tier,
                "treatment": comparison.treatment,
                "control": comparison.control,
                "scaling": comparison.scaling,
            }
        ),
        "runs": [ev.run for pair in pairs for ev in pair],
        "seeds": [p.seed for p, _ in pairs],
        "design_seeds": design,
        "seed_pairs": [[p.run, i.run] for p, i in pairs],
        "bootstrap": {"resamples": rules.resamples, "seed": rules.seed},
        "pool_sha256": dict(sorted(pools.items())),
        "paper_pools": _is_paper(manifest),
        "rules_source": rules.source,
        "rules_sha256": rules.sha256,
        "acceptance": acceptance,
        "missing": missing,
        "ignored_runs": sorted(r for r in episodes if r not in candidates and r not in reference),
        "complete": decided,
        "decided": decided,
    }
    if tier1:
        why = (
            None
            if decided
            else f"not decided: {len(pairs)} of {len(design) if design is not None else '?'} seed pairs of "
            f"the design admitted ({len(missing)} problem(s) under 'missing')"
        )
        register.update(_tier1_hypotheses(comparison, pairs, groups, luck, rules, why))
    else:
        register.update(tier_statistics(pairs, comparison, conditions, groups, luck, rules))
    admitted_ref = [ev for r, ev in sorted(reference.items()) if acceptance[r]["admitted"]]
    register["secondary"] = secondary(
        [ev for pair in pairs for ev in pair], admitted_ref, rules.threshold, rules
    )
    return register


def tier_statistics(
    pairs: Pairs,
    comparison: Comparison,
    conditions: dict[str, Any] | None,
    groups: dict[str, list[dict[str, Any]]],
    luck: Luck,
    rules: DecisionRules,
) -> dict[str, Any]:
    """A registered tier's comparison, measured with tier 1's estimators: the AUC gap on the condition's
    learning set (the H2 statistic), the challenge gap and held-out non-inferiority under transition
    noise (H3, H5), the spurious-variance rate of each arm and the step-0 luck share. No frozen rule
    decides a tier comparison: the registered predictions (amendment A2) are judged on these numbers."""
    condition = (conditions or PAPER_CONDITIONS)[comparison.condition]
    out: dict[str, Any] = {
        "auc_gap": _descriptive(
            hypothesis_h2(pairs, condition.name, rules, sets=learning_sets(condition), name="auc_gap")
        ),
    }
    if condition.kind == "transition":
        out["challenge_gap"] = _descriptive(hypothesis_h3(pairs, rules))
        out["heldout"] = _descriptive(hypothesis_h5(pairs, rules))
    rates: dict[str, Any] = {}
    for arm_index, arm in enumerate((comparison.treatment, comparison.control)):
        runs = [pair[arm_index].run for pair in pairs]
        gs = [g for run in runs for g in groups.get(run, [])]
        all_correct, spurious, size = spurious_counts(gs)
        rates[arm] = {
            "groups": len(gs),
            "all_correct": all_correct,
            "spurious": spurious,
            "rate": (spurious / all_correct) if all_correct else None,
            "group_size": size,
        }
    out["spurious"] = round4({"by_arm": rates, "q": condition.q})
    lams: dict[str, Any] = {}
    for pair in pairs:
        for ev in pair:
            values, _ = base_lams(ev.run, ev, luck, 0)
            defined = values[~np.isnan(values)] if values is not None else []
            lams[ev.run] = float(defined.mean()) if len(defined) else None
    # per run only: readers average the runs they show (records.DecisionRegister.step0_luck_share)
    out["luck_share_step0"] = round4({"by_run": lams})
    return out


def _descriptive(block: dict[str, Any]) -> dict[str, Any]:
    """A tier-1 hypothesis block used as a measurement: its threshold verdict does not apply."""
    block = dict(block)
    block.pop("passes", None)
    block["rule_applies"] = False
    return block
