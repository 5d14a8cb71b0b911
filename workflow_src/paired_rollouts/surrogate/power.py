"""Power table: how often each registered rule passes with n seed pairs, by resampling seed pairs.

For each hypothesis (H2a, H3, H5 under C2; H2b under C4) and each design size n (the paper's 3 and the
full 16), draw n seed pairs with replacement from the admitted pairs of the decision register, apply the
registered rule (``stats.decisions.hypothesis_*``, the functions the decision stage calls, with the
rules file's thresholds) to the drawn pairs, and count passes. Only H5's rule reads a bootstrap interval;
it is computed with ``bootstrap_resamples`` resamples per draw (the decision itself uses the rules'
10,000). It answers how much a 3-seed design could tell.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from paired_rollouts.errors import UserError

if TYPE_CHECKING:
    from paired_rollouts.records import DecisionRegister


def _cached(ev: Any) -> Any:
    """Memoise a RunEvidence's curve/final_scores: the same pair enters many draws."""
    curve, final = ev.curve, ev.final_scores
    memo: dict[tuple, np.ndarray] = {}

    def cached_curve(regime: str, steps: Any, tasks: Any) -> np.ndarray:
        key = ("c", regime, tuple(steps), tuple(tasks))
        if key not in memo:
            memo[key] = curve(regime, steps, tasks)
        return memo[key]

    def cached_final(regime: str, tasks: Any) -> np.ndarray:
        key = ("f", regime, tuple(tasks))
        if key not in memo:
            memo[key] = final(regime, tasks)
        return memo[key]

    ev.curve, ev.final_scores = cached_curve, cached_final
    return ev


def _admitted_pairs(path: Any, register: DecisionRegister) -> list[tuple[Any, Any]]:
    """The decision's admitted seed pairs as evidence, each episode file the one its completeness check
    hashed (results root: the decision register's grandparent)."""
    from paired_rollouts.records import read_completeness
    from paired_rollouts.stats.decisions import load_episodes

    root = Path(path).parent.parent
    runs = [r for pair in register.seed_pairs for r in pair]
    evidence = load_episodes([root / "evals" / run for run in runs])
    for run in runs:
        checked = read_completeness(root / "runs" / run / "complete.json").files
        for rel, digest in evidence[run].files.items():
            if checked.get(rel) != digest:
                raise UserError(f"{root}/{rel}: not the file the completeness check saw; rerun the study")
    return [(_cached(evidence[p]), _cached(evidence[i])) for p, i in register.seed_pairs]


def _power(
    test: Any, pairs: list[Any], sizes: list[int], args: Any
) -> tuple[dict[str, float], dict[str, int]]:
    """Share (and count) of ``args.draws`` draws of n seed pairs, with replacement, on which ``test`` passes."""
    power, counts = {}, {}
    rng = np.random.default_rng(args.seed)
    for n in sizes:
        passes = 0
        for _ in range(args.draws):
            pick = rng.integers(0, len(pairs), size=n)
            passes += bool(test([pairs[k] for k in pick])["passes"])
        power[str(n)] = passes / args.draws
        counts[str(n)] = passes
    return power, counts


def power_table(args: Any, progress: bool = False) -> dict[str, Any]:
    from paired_rollouts.design import decided_comparisons
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import DecisionRules, load_rules
    from paired_rollouts.records import read_decision_register
    from paired_rollouts.stats.decisions import hypothesis_h2, hypothesis_h3, hypothesis_h5

    rules = load_rules(args.rules)
    raw = dict(rules.raw)
    raw["bootstrap"] = {**raw["bootstrap"], "resamples": int(args.bootstrap_resamples)}
    fast = DecisionRules(raw, rules.source, rules.sha256)
    hypotheses: dict[str, Any] = {}
    full_pairs = None
    sources = {}
    for path in args.decisions:
        register = read_decision_register(path)
        condition = register.condition
        if condition not in decided_comparisons() or not register.seed_pairs:
            raise UserError(f"{path}: not a decision register with admitted seed pairs; run the decide stage")
        if register.rules_sha256 != rules.sha256:
            raise UserError(
                f"{path}: decided with rules of sha256 {register.rules_sha256}, --rules {args.rules} "
                f"has {rules.sha256}; the power of a rule is estimated with the rules that decided"
            )
        if not register.decided:
            raise UserError(
                f"{path}: the decision is not decided ({len(register.missing)} problem(s) under 'missing'); "
                "power is estimated on a whole study only"
            )
        sources[str(path)] = sha256_file(path)
        pairs = _admitted_pairs(path, register)
        n_full = len(pairs)
        full_pairs = n_full if full_pairs is None else min(full_pairs, n_full)
        tests = (
            {
                "H2a": lambda ps: hypothesis_h2(ps, "C2", fast),
                "H3": lambda ps: hypothesis_h3(ps, fast),
                "H5": lambda ps: hypothesis_h5(ps, fast),
            }
            if condition == "C2"
            else {"H2b": lambda ps: hypothesis_h2(ps, "C4", fast)}
        )
        for name, test in tests.items():
            full = test(pairs)
            if full.get("computed") is False:
                raise UserError(
                    f"{path}: {name} cannot be computed ({full.get('reason')}); no power to estimate"
                )
            power, counts = _power(test, pairs, sorted(set(args.pairs) | {n_full}), args)
            hypotheses[name] = {
                "condition": condition,
                "passes_full": bool(register.hypothesis(name).passes),
                "passes_full_recomputed": bool(full["passes"]),
                "seed_pairs": n_full,
                "power": power,
                "passes_counted": counts,
                "draws": args.draws,
            }
            if progress:
                print(f"{name}: {power}")
    return {
        "hypotheses": hypotheses,
        "full_pairs": full_pairs,
        "pairs": sorted(set(args.pairs)),
        "draws": args.draws,
        "seed": args.seed,
        "bootstrap_resamples": int(args.bootstrap_resamples),
        "method": "n seed pairs drawn with replacement from the admitted pairs; the registered rule applied "
        "to the drawn pairs; power = share of draws that pass",
        "decisions": sources,
        "rules_sha256": rules.sha256,
    }
