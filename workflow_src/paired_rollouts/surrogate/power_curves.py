"""Power curves: how often each registered learning rule passes at a chosen true effect and design size.

The power table (``surrogate/power.py``) resamples the surrogate's own seed pairs, so it measures the
power at the surrogate's effect, not at the paper's. Here the effect is set: for H2a, H2b and H3, seed k
of a simulated design has the per-seed difference ``m * E + r_k`` (and, for H2's final-direction clause,
the final-success difference ``m * F + s_k``), where E and F are the paper's published effects (means of
its three seeds), ``m`` a multiplier from 0 to 2, and ``(r_k, s_k)`` a between-seed residual drawn from
one of three spreads:

- ``surrogate``: the decision register's seed pairs at the calibrated point, centred on their mean and
  resampled with replacement (both differences of a seed drawn together);
- ``paper``: the paper's three seeds, centred and resampled the same way;
- ``paper_normal``: a normal with the paper's between-seed standard deviation (ddof 1; for H2 the
  bivariate normal with the paper's covariance of the two differences).

The registered rule (thresholds from the rules file) is applied to every draw, and the same rule without
its every-seed-ahead clause, to tell whether that clause gains or loses power as seeds grow. Each
(hypothesis, spread, n) cell draws from its own generator seeded by (seed, hypothesis, spread, n), and the
same residual draws serve every multiplier, so curves are smooth in the effect and a cell's numbers do
not depend on which other cells were computed.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from paired_rollouts.errors import UserError
from paired_rollouts.pairing.numeric import covariance, psd_factor

FORMAT = "paired-rollouts-power-curves/1"
SPREADS = ("surrogate", "paper", "paper_normal")
VARIANTS = ("rule", "without_every_seed")
MULTIPLIERS = tuple(k / 4 for k in range(9))  # 0, 0.25, ..., 2.0 of the published effect
PAIRS = (3, 5, 8, 16, 32)
DEFAULT_SEED = 20261202


@dataclass(frozen=True)
class Target:
    """One learning hypothesis: its condition, the decision register's block, and the published ids of
    the paper's per-seed values (a final-success difference only for H2, whose rule has a direction clause)."""

    name: str
    condition: str
    difference_ids: tuple[str, ...]
    final_ids: tuple[tuple[str, str], ...] = ()  # (paired, independent) per seed


def _seeds(template: str) -> tuple[str, ...]:
    return tuple(template.format(k) for k in range(3))


TARGETS = {
    "H2a": Target(
        "H2a",
        "C2",
        _seeds("c2.auc.difference.s{}"),
        tuple(zip(_seeds("c2.final.paired.s{}"), _seeds("c2.final.independent.s{}"), strict=True)),
    ),
    "H2b": Target(
        "H2b",
        "C4",
        _seeds("c4.auc.difference.s{}"),
        tuple(zip(_seeds("c4.final.paired.s{}"), _seeds("c4.final.independent.s{}"), strict=True)),
    ),
    "H3": Target("H3", "C2", _seeds("h3.difference.s{}")),
}


@dataclass(frozen=True)
class Rule:
    """A registered learning rule on per-seed differences: mean >= threshold, every seed ahead (if
    registered), and for H2 the mean final difference >= 0 (if registered)."""

    mean_at_least: float
    every_seed_positive: bool
    final_direction: bool

    def passes(self, diffs: np.ndarray, finals: np.ndarray | None, every_seed: bool = True) -> np.ndarray:
        """Per row of ``diffs`` (draws x seeds) whether the rule passes; ``every_seed=False`` drops the
        every-seed-ahead clause. Evaluated as ``stats.decisions.hypothesis_h2/h3`` evaluate it."""
        ok = diffs.mean(axis=1) >= self.mean_at_least
        if every_seed and self.every_seed_positive:
            ok &= np.all(diffs > 0, axis=1)
        if self.final_direction and finals is not None:
            ok &= finals.mean(axis=1) >= 0
        return ok


def rule_of(name: str, rules: Any) -> Rule:
    """The registered rule of H2a/H2b or H3, thresholds from the rules file."""
    if name == "H3":
        return Rule(rules.h3_mean_at_least, rules.h3_every_seed_positive, False)
    return Rule(rules.h2_mean_at_least, rules.h2_every_seed_positive, rules.h2_final_direction)


def _column(values: Sequence[float]) -> np.ndarray:
    return np.asarray(values, dtype=float)


@dataclass(frozen=True)
class Evidence:
    """Per-seed differences (and, for H2, final-success differences) of one source."""

    differences: np.ndarray
    finals: np.ndarray | None

    def effect(self) -> tuple[float, float | None]:
        return float(self.differences.mean()), None if self.finals is None else float(self.finals.mean())

    def residuals(self) -> np.ndarray:
        """Seeds x 1 (H3) or seeds x 2 (H2: difference, final difference) around their means."""
        cols = [self.differences] if self.finals is None else [self.differences, self.finals]
        stacked = np.stack(cols, axis=1)
        return stacked - stacked.mean(axis=0)


def draw_residuals(
    residuals: np.ndarray, spread: str, n: int, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """draws x n x columns residuals: resampled rows of ``residuals`` (``surrogate``, ``paper``) or
    normal with their covariance, ddof 1 (``paper_normal``)."""
    if spread == "paper_normal":
        factor = psd_factor(covariance(residuals))  # L L^T = the covariance (numeric.py: no LAPACK)
        normal = rng.standard_normal(size=(draws, n, residuals.shape[1]))
        return np.add.reduce(normal[..., None, :] * factor, axis=-1)  # each draw's L z
    pick = rng.integers(0, residuals.shape[0], size=(draws, n))
    return residuals[pick]


def cell_rng(seed: int, hypothesis: str, spread: str, n: int) -> np.random.Generator:
    """The generator of one (hypothesis, spread, n) cell, independent of every other cell."""
    return np.random.default_rng([seed, zlib.crc32(hypothesis.encode()), zlib.crc32(spread.encode()), n])


def power_cell(
    rule: Rule,
    effect: tuple[float, float | None],
    residuals: np.ndarray,
    spread: str,
    n: int,
    multipliers: Sequence[float],
    draws: int,
    rng: np.random.Generator,
) -> dict[str, list[int]]:
    """Passes counted over ``draws`` designs of n seed pairs at each multiplier, with and without the
    every-seed clause (one residual draw shared by every multiplier)."""
    drawn = draw_residuals(residuals, spread, n, draws, rng)
    counts: dict[str, list[int]] = {v: [] for v in VARIANTS}
    for m in multipliers:
        diffs = m * effect[0] + drawn[:, :, 0]
        finals = None if effect[1] is None else m * effect[1] + drawn[:, :, 1]
        counts["rule"].append(int(rule.passes(diffs, finals).sum()))
        counts["without_every_seed"].append(int(rule.passes(diffs, finals, every_seed=False).sum()))
    return counts


def published_evidence(path: Path, target: Target) -> Evidence:
    """The paper's per-seed differences of ``target`` from data/published/paper.yaml (pinned)."""
    from paired_rollouts.compare.published import load_published

    values = {e.id: e.value for e in load_published(path).entries}
    missing = [
        i for i in (*target.difference_ids, *(x for p in target.final_ids for x in p)) if i not in values
    ]
    if missing:
        raise UserError(f"{path}: no published entry {', '.join(missing)}; restore data/published/paper.yaml")
    finals = _column([values[p] - values[i] for p, i in target.final_ids]) if target.final_ids else None
    return Evidence(_column([values[i] for i in target.difference_ids]), finals)


def register_evidence(register: Any, target: Target, path: Path) -> Evidence:
    """The decision register's per-seed differences of ``target`` (its admitted seed pairs)."""
    block = register.hypothesis(target.name)
    if block is None or not block.computed:
        raise UserError(f"{path}: {target.name} was not computed; run the decide stage on a whole study")
    if target.final_ids:
        diffs, finals = _column(block.auc_difference_by_seed), _column(block.final_difference_by_seed)
    else:
        diffs, finals = _column(block.difference_by_seed), None
    if diffs.size < 2:
        raise UserError(
            f"{path}: {target.name} has {diffs.size} seed pair(s); a between-seed spread needs at least 2"
        )
    return Evidence(diffs, finals)


def _spread_summary(residuals: np.ndarray, spread: str) -> dict[str, Any]:
    sd = residuals.std(axis=0, ddof=1)
    return {
        "kind": "normal, covariance ddof 1" if spread == "paper_normal" else "resampled residuals",
        "seeds": int(residuals.shape[0]),
        "sd": float(sd[0]),
        "final_sd": float(sd[1]) if residuals.shape[1] > 1 else None,
    }


def _round(values: Sequence[float]) -> list[float]:
    return [round(float(v), 6) for v in values]


def power_curves(
    decisions: Sequence[Path],
    rules_path: Path,
    published: Path,
    *,
    draws: int,
    seed: int = DEFAULT_SEED,
    pairs: Sequence[int] = PAIRS,
    multipliers: Sequence[float] = MULTIPLIERS,
) -> dict[str, Any]:
    """The power-curves register (docs/records.md section 8.6) from the decision registers (c2, c4),
    the rules that decided them and the pinned published numbers."""
    from paired_rollouts.compare.published import require_pinned
    from paired_rollouts.io import sha256_file
    from paired_rollouts.prereg.rules import load_rules
    from paired_rollouts.records import read_decision_register

    if draws < 1 or any(n < 1 for n in pairs) or not pairs:
        raise UserError("--draws and --pairs must be integers of at least 1")
    if not multipliers or any(m < 0 for m in multipliers):
        raise UserError("--multipliers must be numbers of at least 0")
    rules = load_rules(rules_path)
    published_sha = require_pinned(published)
    by_condition: dict[str, tuple[Path, Any]] = {}
    for path in decisions:
        register = read_decision_register(path)
        if register.rules_sha256 != rules.sha256:
            raise UserError(
                f"{path}: decided with rules of sha256 {register.rules_sha256}, --rules {rules_path} has "
                f"{rules.sha256}; the power of a rule is estimated with the rules that decided"
            )
        if register.condition in by_condition:
            raise UserError(
                f"{path}: a second decision register of {register.condition}; give one per condition"
            )
        by_condition[register.condition] = (Path(path), register)
    pairs, multipliers = sorted(set(int(n) for n in pairs)), sorted(set(float(m) for m in multipliers))
    hypotheses: dict[str, Any] = {}
    for name, target in TARGETS.items():
        if target.condition not in by_condition:
            raise UserError(
                f"--decisions: no decision register of {target.condition} ({name}); give results/<scale>/decisions/"
                f"{target.condition.lower()}.json"
            )
        path, register = by_condition[target.condition]
        rule = rule_of(name, rules)
        paper = published_evidence(published, target)
        ours = register_evidence(register, target, path)
        effect = paper.effect()
        sources = {
            "surrogate": ours.residuals(),
            "paper": paper.residuals(),
            "paper_normal": paper.residuals(),
        }
        counts = {
            spread: {
                str(n): power_cell(
                    rule,
                    effect,
                    sources[spread],
                    spread,
                    n,
                    multipliers,
                    draws,
                    cell_rng(seed, name, spread, n),
                )
                for n in pairs
            }
            for spread in SPREADS
        }
        hypotheses[name] = {
            "condition": target.condition,
            "rule": {
                "mean_at_least": rule.mean_at_least,
                "every_seed_positive": rule.every_seed_positive,
                "final_direction": rule.final_direction,
            },
            "published": {
                "ids": list(target.difference_ids),
                "by_seed": _round(paper.differences),
                "final_by_seed": None if paper.finals is None else _round(paper.finals),
                "effect": round(effect[0], 6),
                "final_effect": None if effect[1] is None else round(effect[1], 6),
            },
            "surrogate": {
                "seed_pairs": int(ours.differences.size),
                "by_seed": _round(ours.differences),
                "final_by_seed": None if ours.finals is None else _round(ours.finals),
                "effect": round(ours.effect()[0], 6),
            },
            "spreads": {spread: _spread_summary(sources[spread], spread) for spread in SPREADS},
            "passes_counted": counts,
            "power": {
                spread: {n: {v: [c / draws for c in row[v]] for v in VARIANTS} for n, row in by_n.items()}
                for spread, by_n in counts.items()
            },
        }
    return {
        "format": FORMAT,
        "hypotheses": hypotheses,
        "multipliers": multipliers,
        "pairs": pairs,
        "spreads": list(SPREADS),
        "variants": list(VARIANTS),
        "draws": draws,
        "seed": seed,
        "method": (
            "seed k's difference = multiplier x the paper's mean effect + a between-seed residual drawn from "
            "the spread (surrogate: the decision register's seeds centred and resampled; paper: the paper's "
            "three seeds centred and resampled; paper_normal: normal with the paper's covariance, ddof 1); "
            "power = share of draws of n seeds on which the registered rule passes (rule) and on which it "
            "passes without its every-seed-ahead clause (without_every_seed)"
        ),
        "decisions": {str(p): sha256_file(p) for p, _ in by_condition.values()},
        "rules": {str(rules_path): rules.sha256},
        "published_file": {str(published): published_sha},
    }
