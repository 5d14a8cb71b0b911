"""What a complete run must contain: the evaluation sets, diagnostic sets and training groups its design
calls for, derived from the scale's settings and the run's name, or spelled out (``--expected``).

``complete.json`` records the expected evidence under ``settings`` in the form :meth:`ExpectedEvidence.record`
writes and :meth:`ExpectedEvidence.from_record` reads (per phase: ``periodic``, ``final``, ``diagnostic``,
``training``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from paired_rollouts import design
from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl
from paired_rollouts.layout import diagnostic_steps_of, periodic_steps
from paired_rollouts.settings import Settings

EXPECTED_HELP = """\
expected evidence: --settings, the scale's sections as the workflow passes them ({"task_filter": ...,
"training": {...}, "evaluation": {...}, "diagnostics": {... "steps": {"seed0": [...], "other": [...]}}}),
from which it follows with the run's name and --conditions; or --expected, spelled out as complete.json
records it under "settings":
  {"run": R, "task_filter": F,
   "periodic": {"steps": [...], "pool": "validation", "tasks": N, "regimes": {REGIME: [indices]}},
   "final": {"step": S, "pool": "test", "tasks": N, "regimes": {REGIME: [indices]}},
   "diagnostic": {"steps": [...], "pool": P, "tasks": N, "schedules": K, "samples": M},
   "training": {"steps": S, "prompts": P, "generations": G}}
(every block optional; tasks are the first N task_ids of data/tasks/{pool}.jsonl after task_filter)"""

# One line per error: the form itself is in `paired-rollouts completeness --help` (EXPECTED_HELP).
FORM = "the form is in 'paired-rollouts completeness --help'"

Regimes = Mapping[str, tuple[int, ...]]


def _fail(where: str, problem: str) -> UserError:
    return UserError(f"expected evidence: '{where}' {problem}; {FORM}")


def _int(value: Any, where: str) -> int:
    """A count or step: an integer (``2.0`` or ``"2"`` are refused, not rounded)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"is {value!r}, expected an integer")
    return value


def _ints(values: Any, where: str) -> tuple[int, ...]:
    if not isinstance(values, list):
        raise _fail(where, f"is {values!r}, expected a list of integers")
    return tuple(_int(v, where) for v in values)


def _count(value: Any, where: str) -> int | None:
    """A diagnostic count may be null: the diagnostic files are then not checked (listed as skipped)."""
    return None if value is None else _int(value, where)


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(where, f"is {value!r}, expected a string")
    return value


def _regimes(value: Any, where: str) -> dict[str, tuple[int, ...]]:
    """The one shape: a mapping regime -> schedule indices, of the design's regimes."""
    if not isinstance(value, dict):
        raise _fail(
            where, f'is {value!r}; give a mapping regime -> schedule indices, e.g. {{"clean": [1, 2]}}'
        )
    unknown = sorted(set(value) - set(design.EVALUATION_REGIMES))
    if unknown:
        raise _fail(
            where,
            f"names unknown regime(s) {unknown}; the regimes are {', '.join(design.EVALUATION_REGIMES)}",
        )
    return {str(k): _ints(v, f"{where}.{k}") for k, v in value.items()}


class _Block:
    """A phase block of the record: every key required, no other key, each read by its reader."""

    READERS: dict[str, Callable[[Any, str], Any]] = {}

    @classmethod
    def from_record(cls, node: Any, where: str) -> Any:
        if not isinstance(node, dict):
            raise _fail(where, f"is {node!r}, expected an object")
        extra = sorted(set(node) - set(cls.READERS))
        if extra:
            raise _fail(where, f"has unknown keys {extra}")
        missing = [key for key in cls.READERS if key not in node]
        if missing:
            raise _fail(f"{where}.{missing[0]}", "is required")
        return cls(**{key: read(node[key], f"{where}.{key}") for key, read in cls.READERS.items()})

    def record(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = {k: list(v) for k, v in value.items()}
            out[f.name] = value
        return out


@dataclass(frozen=True)
class PeriodicSets(_Block):
    """Validation sets at each periodic checkpoint."""

    steps: tuple[int, ...]
    pool: str
    tasks: int
    regimes: Regimes

    READERS = {"steps": _ints, "pool": _str, "tasks": _int, "regimes": _regimes}


@dataclass(frozen=True)
class FinalSets(_Block):
    """Test sets at the last step."""

    step: int
    pool: str
    tasks: int
    regimes: Regimes

    READERS = {"step": _int, "pool": _str, "tasks": _int, "regimes": _regimes}


@dataclass(frozen=True)
class DiagnosticSets(_Block):
    """K schedules x M samples per diagnostic task at each diagnosed checkpoint."""

    steps: tuple[int, ...]
    pool: str
    tasks: int | None
    schedules: int | None
    samples: int | None

    READERS = {"steps": _ints, "pool": _str, "tasks": _count, "schedules": _count, "samples": _count}

    @property
    def counted(self) -> bool:
        return None not in (self.tasks, self.schedules, self.samples)


@dataclass(frozen=True)
class TrainingGroups(_Block):
    """One group of G rollouts per (step, prompt)."""

    steps: int
    prompts: int
    generations: int

    READERS = {"steps": _int, "prompts": _int, "generations": _int}


_PHASES: dict[str, type[_Block]] = {
    "periodic": PeriodicSets,
    "final": FinalSets,
    "diagnostic": DiagnosticSets,
    "training": TrainingGroups,
}


@dataclass(frozen=True)
class ExpectedEvidence:
    """A run's expected evidence, per phase (None: the phase is not checked)."""

    run: str | None = None
    task_filter: str | None = None
    periodic: PeriodicSets | None = None
    final: FinalSets | None = None
    diagnostic: DiagnosticSets | None = None
    training: TrainingGroups | None = None

    @property
    def selection(self) -> str:
        """The task filter the sets were selected with (all, when the record does not say)."""
        return self.task_filter or "all"

    SECTIONS = ("training", "evaluation", "diagnostics")

    @classmethod
    def derivable_from(cls, settings: Settings) -> None:
        """Refuse settings that do not give the sections the expected evidence follows from: their
        defaults (the embedded stand-in's) would be checked instead of the scale's."""
        absent = [name for name in cls.SECTIONS if name not in settings.given]
        if absent:
            raise UserError(
                f"--settings gives no {', '.join(absent)} section(s); the expected evidence follows from the "
                f"scale's {', '.join(cls.SECTIONS)} sections (the workflow passes them); {FORM}"
            )

    def require_some(self) -> None:
        """An expectation of nothing would make any folder complete: at least one phase is required."""
        if all(getattr(self, name) is None for name in _PHASES):
            raise UserError(
                f"expected evidence: no phase ({', '.join(_PHASES)}); nothing would be checked; {FORM}"
            )

    @classmethod
    def of_run(
        cls, run: str, settings: Settings, conditions: Mapping[str, design.Condition] | None = None
    ) -> ExpectedEvidence:
        """From the scale's settings (task_filter, training, evaluation, diagnostics with its steps) and
        the run's name: its condition's final sets, its seed's diagnosed steps (design.py, layout.py)."""
        known = dict(conditions) if conditions is not None else dict(design.PAPER_CONDITIONS)
        ident = design.parse_run(run, known)
        training, evaluation, diagnostics = settings.training, settings.evaluation, settings.diagnostics
        diagnosed = diagnostic_steps_of(diagnostics.steps, ident.seed)
        return cls(
            run=run,
            task_filter=settings.task_filter,
            periodic=PeriodicSets(
                tuple(periodic_steps(training.steps, training.checkpoint_every)),
                design.PHASE_POOL["periodic"],
                evaluation.eval_tasks,
                dict(design.PERIODIC_REGIMES),
            ),
            final=FinalSets(
                training.steps,
                design.PHASE_POOL["final"],
                evaluation.final_tasks,
                design.final_regimes(known[ident.condition]),
            ),
            diagnostic=DiagnosticSets(
                tuple(diagnosed),
                diagnostics.pool,
                diagnostics.tasks,
                diagnostics.schedules,
                diagnostics.samples,
            )
            if diagnosed
            else None,
            training=TrainingGroups(training.steps, training.prompts_per_step, training.num_generations),
        )

    @classmethod
    def from_record(cls, data: Any) -> ExpectedEvidence:
        """The form ``record`` writes (complete.json's ``settings``); any other key or shape is an error."""
        if not isinstance(data, dict):
            raise UserError(f"expected evidence: expected a JSON object; {FORM}")
        unknown = sorted(set(data) - {"run", "task_filter", *_PHASES})
        if unknown:
            raise UserError(f"expected evidence: unknown keys {unknown}; {FORM}")
        blocks = {
            name: block.from_record(data[name], name) for name, block in _PHASES.items() if name in data
        }
        run, task_filter = data.get("run"), data.get("task_filter")
        return cls(
            run=None if run is None else _str(run, "run"),
            task_filter=None if task_filter is None else _str(task_filter, "task_filter"),
            **blocks,
        )

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in (("run", self.run), ("task_filter", self.task_filter)) if v}
        for name in _PHASES:
            block = getattr(self, name)
            if block is not None:
                out[name] = block.record()
        return out


def pool_task_ids(tasks_dir: Path, pool: str, count: int, task_filter: str = "all") -> list[str]:
    """The first ``count`` task ids of a pool after the run's task selection (the diagnostic pool is
    never filtered)."""
    from paired_rollouts.backoffice.tasks import first_selected

    path = tasks_dir / f"{pool}.jsonl"
    return [
        str(rec["task_id"]) for rec in first_selected(list(iter_jsonl(path)), pool, count, task_filter, path)
    ]
