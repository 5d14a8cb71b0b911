"""Table 18: replay determinism of each run's final checkpoint (the replay registers, LLM scales)."""

from __future__ import annotations

from paired_rollouts import design, records
from paired_rollouts.render import format as fmt
from paired_rollouts.render import sources as src
from paired_rollouts.render.format import Tex
from paired_rollouts.render.tables.model import Context, TableModel, _run_label


def _divergence(found: dict[str, int] | None) -> Tex:
    return Tex("none") if found is None else Tex(f"turn {found['turn']}, token {found['token']}")


def replay_table(ctx: Context) -> TableModel:
    registers = [records.read_replay(p) for p in ctx.inputs.files("replay")]

    def order(register: records.ReplayRegister) -> tuple:
        run = design.parse_run(register.run)
        return src.run_order(register.run, run.condition, run.arm, run.seed)

    table = TableModel(
        [
            Tex("Run"),
            Tex("Step"),
            Tex("Backend"),
            Tex("Episodes"),
            Tex("Exact"),
            Tex("Outcome changed"),
            Tex("First divergence"),
            Tex("Matches evaluation"),
        ],
        ["l", "r", "l", "r", "r", "r", "l", "r"],
        size=r"\footnotesize",
    )
    for register in sorted(registers, key=order):
        summary = register.summary
        table.add(
            [
                _run_label(register.run),
                fmt.integer(register.step),
                fmt.escape(f"{register.backend} ({register.device}, {register.dtype})"),
                fmt.integer(summary.episodes),
                fmt.integer(summary.exact),
                fmt.integer(summary.outcome_changed),
                _divergence(summary.first_divergence),
                fmt.integer(summary.matches_evaluation),
            ]
        )
    return table
