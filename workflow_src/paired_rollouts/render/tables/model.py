"""The table model every builder fills, and the helpers the builders share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from paired_rollouts.errors import UserError
from paired_rollouts.records import DecisionRegister, Hypothesis, ProbeVerdict
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.sources import Inputs, KeySpec

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


@dataclass
class Row:
    cells: list[Tex]
    kind: str = "data"  # data | rule | section


@dataclass
class TableModel:
    """What a template needs: columns, header groups, rows, footnotes. ``title`` is set from the
    registry's :class:`TableSpec` (one title per table); ``title_detail`` is what a builder appends."""

    headers: list[Tex]
    aligns: list[str]
    rows: list[Row] = field(default_factory=list)
    groups: list[tuple[Tex, int]] = field(default_factory=list)  # header groups over columns
    notes: fmt.Notes = field(default_factory=fmt.Notes)
    extra_notes: list[Tex] = field(default_factory=list)
    size: str = r"\small"
    tabcolsep: str = "4pt"
    landscape: bool = False
    title: str = ""
    title_detail: str = ""

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

    def int_setting(self, table: int, name: str, low: int, high: int) -> int | None:
        """A ``--settings`` integer (None when not given); a bool, a string, a fraction or a value outside
        [low, high] is one UserError naming the key."""
        value = self.settings.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UserError(
                f"table {table}: --settings {name} must be an integer from {low} to {high}, got {value!r}"
            )
        return value


@dataclass(frozen=True)
class TableSpec:
    """One table of the registry: its number, its one title, the inputs and settings it reads, its builder."""

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


def _decisions(ctx: Context) -> list[DecisionRegister]:
    return src.decisions(ctx.inputs.files("decisions"))


def _not_computed(block: Hypothesis | None) -> str | None:
    """The reason a hypothesis block cannot be shown, or None when it can."""
    if block is None:
        return "hypothesis absent from the decision register"
    if block.computed is False:
        return f"not computed: {block.reason or 'no reason given'}"
    return None


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


NON_PAPER_POOLS = (
    "The task pools are NOT the paper's (their hashes differ from the paper's frozen pools): "
    "these are not the paper's experiment."
)


def _verdict(block: Hypothesis | ProbeVerdict) -> bool | None:
    """A registered outcome: true/false when decided; None (shown "not decided") on partial evidence."""
    return block.passes


def _verdict_word(block: Hypothesis | ProbeVerdict) -> str:
    passes = _verdict(block)
    return "is not decided" if passes is None else ("passes" if passes else "misses")
