"""The results layout of one scale: where every per-run record, register and benchmark lies, which
checkpoints each stage reads, and how the surrogate's runs are grouped into jobs (docs/records.md).

The workflow builds one :class:`Layout` (rules/common.smk ``LAYOUT``) and its input functions only look
paths up here; the package's own readers of the same files (completeness, the surrogate's one-process
jobs) use the same functions, so each path and step set is written once. Built from the design
(:mod:`paired_rollouts.design`) and the scale block (:func:`paired_rollouts.settings.scale_block`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from paired_rollouts import design as study
from paired_rollouts.errors import UserError
from paired_rollouts.settings import scale_block

CONFIG_FILE = "config/config.yaml"
# One surrogate job trains (and one computes the statistics of) a chunk of this many seeds of an arm.
SURROGATE_SEEDS_PER_JOB = 8
# The paper's published learning curves, drawn beside a surrogate scale's own (figure surrogate_curves).
PUBLISHED_CURVES = "data/published/curves.yaml"
# Table 8 shows the C4 means minus the C0 and C2 ones: the C4 curves register takes theirs.
CURVES_COMPARED = {"c4": ("c0", "c2")}
# A run's TensorBoard event files (training metrics to watch; not records: docs/records.md, last section).
TENSORBOARD = "tensorboard"


def results_root(scale: str) -> str:
    """Each scale writes under its own root, so a stand-in run never stands in for a paper run: the paper
    scale keeps `results/`, every other scale `results/<scale>/`."""
    return "results" if scale == "paper" else f"results/{scale}"


# The folders a results root holds (`results/` itself at paper scale): the cpu profile's freeze folder,
# which its rule deletes and remakes, may overlap none of them, nor another scale's root.
RESULTS_FOLDERS = (
    "benchmarks",
    "calibration",
    "curves",
    "decisions",
    "diagnostics",
    "evals",
    "examples",
    "figures",
    "logs",
    "map",
    "models",
    "paper",
    "prereg/a3",
    "probe",
    "reference",
    "replay",
    "runs",
    "tables",
)


def periodic_steps(steps: int, every: int) -> list[int]:
    """Checkpoints evaluated on the validation pool: 0, every `every` steps, and the last."""
    return sorted(set(range(0, steps + 1, every)) | {steps})


def diagnostic_steps_of(steps: Mapping[str, Sequence[int]], seed: int) -> list[int]:
    """The checkpoints a run is diagnosed at: `seed0` for the seed-0 runs, `other` for the rest."""
    return list(steps["seed0"] if seed == 0 else steps["other"])


@dataclass(frozen=True)
class Layout:
    """Paths and step sets of one scale's results; per-run paths need only `root`."""

    root: str
    scale: Mapping[str, Any] = field(default_factory=dict)
    design: study.Design | None = None
    name: str = ""
    accelerator: str = "cpu"
    prereg: Mapping[str, Any] = field(default_factory=dict)
    # the study's inputs outside the results root (config keys tasks_dir, decision_rules, published)
    tasks_dir: str = "data/tasks"
    decision_rules: str = "prereg/decision_rules.yaml"
    published: str = "data/published/paper.yaml"
    # how refusals name the configuration: config/config.yaml, or the files merged ("a + b", config_files)
    source: str = CONFIG_FILE
    # every scale the config defines (`scales:`), whose results roots the freeze folder must not overlap
    scale_names: tuple[str, ...] = ()

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any], scale: str, accelerator: str, source: str = CONFIG_FILE
    ) -> Layout:
        """The scale's block (`study:` merged under it) and design; UserError names ``source``."""
        try:
            block = scale_block(dict(config), scale)
        except UserError as error:
            raise UserError(f"{source}: {error}") from None
        design = study.Design.from_config(config, scale, source)
        inputs = {key: config[key] for key in ("tasks_dir", "decision_rules", "published") if key in config}
        return cls(
            results_root(scale),
            block,
            design,
            scale,
            accelerator,
            config.get("prereg") or {},
            **inputs,
            source=source,
            scale_names=tuple(config.get("scales") or ()),
        )

    def res(self, path: str) -> str:
        """A path under this scale's results root (wildcards in `path` are kept for Snakemake)."""
        return f"{self.root}/{path}"

    def files(self, path: Callable[[str], str | list[str]], runs: Sequence[str] | None = None) -> list[str]:
        """The `path` files (a per-run method, e.g. ``Layout.register``) of each run, run by run; the
        runs of tier 1 unless given."""
        out: list[str] = []
        for run in self.runs("study") if runs is None else runs:
            found = path(run)
            out += [found] if isinstance(found, str) else found
        return out

    # -- job logs and benchmarks --------------------------------------------------------------------
    # A job is named by its rule's stage and wildcards ("train/{run}", "evaluate/{run}/periodic-step{step}"):
    # every rule's `log:` and `benchmark:` come from here, and the cost ledger reads the names back.
    def log(self, job: str) -> str:
        return self.res(f"logs/{job}.log")

    def benchmark(self, job: str) -> str:
        return self.res(f"benchmarks/{job}.tsv")

    def benchmark_job(self, path: str | Path) -> tuple[str, str | None]:
        """The stage of a benchmark file (its job name's first part) and the run it names, if any."""
        folder = Path(self.res("benchmarks"))
        if not Path(path).is_relative_to(folder):
            raise UserError(f"{path}: not a benchmark file of {folder}; give the results root that holds it")
        job = Path(path).relative_to(folder).with_suffix("").as_posix()
        parts = job.split("/")
        return parts[0], next((part for part in parts[1:] if study.RUN_NAME.match(part)), None)

    # -- the study's inputs -------------------------------------------------------------------------
    def pools(self) -> list[str]:
        return [f"{self.tasks_dir}/{pool}.jsonl" for pool in study.POOLS]

    def pool_manifest(self) -> str:
        return f"{self.tasks_dir}/MANIFEST.json"

    def published_curves(self) -> str:
        return PUBLISHED_CURVES

    def models_dir(self) -> str:
        """This scale's models: the stand-in's tokenizer and model, or the real model's prepared snapshot."""
        return self.res(f"models/{self.name}")

    # -- the design ---------------------------------------------------------------------------------
    @property
    def matrix(self) -> study.Design:
        if self.design is None:
            raise UserError("this layout was built without the design; use Layout.from_config")
        return self.design

    def runs(self, tier: str = "study") -> list[str]:
        return self.matrix.run_names(tier)

    def runs_of(self, condition: str, tier: str = "study") -> list[str]:
        return [run.name for run in self.matrix.runs_of(condition, tier)]

    def comparison_runs(self, name: str) -> list[str]:
        """The runs a decision reads: every tier-1 run of a decided comparison's condition (its seeds as
        the design lists them), or a tier comparison's seed pairs."""
        comparison = self.matrix.comparison(name)
        if comparison.tier == 1:
            return self.runs_of(comparison.condition)
        return [run.name for run in comparison.runs()]

    def decided_runs(self) -> list[str]:
        """The runs of the comparisons tier 1 decides (study.decided_comparisons: C2, C4), condition by condition."""
        return [run for condition in study.decided_comparisons() for run in self.runs_of(condition)]

    def final_regimes(self, run: str) -> list[str]:
        """A run whose training noise is none of the final regimes (C3, C4, C2r) adds its own `at_training`."""
        return list(study.final_regimes(self.matrix.condition(self.matrix.run(run).condition)))

    def decision_conditions(self) -> list[str]:
        return [c.name for c in self.matrix.comparisons("study")]

    def tier_comparisons(self) -> list[str]:
        return [c.name for c in self.matrix.comparisons("tiers")]

    # -- steps --------------------------------------------------------------------------------------
    @property
    def final_step(self) -> int:
        return int(self.scale["training"]["steps"])

    def periodic_steps(self) -> list[int]:
        training = self.scale["training"]
        return periodic_steps(int(training["steps"]), int(training["checkpoint_every"]))

    def diagnostic_steps(self, run: str) -> list[int]:
        return diagnostic_steps_of(self.scale["diagnostics"]["steps"], study.parse_run(run).seed)

    def checkpoint_steps(self) -> list[int]:
        """Every step any stage needs weights for: periodic, diagnostic and probe steps."""
        steps = set(self.periodic_steps())
        for listed in self.scale["diagnostics"]["steps"].values():
            steps |= set(listed)
        for trajectory in self.trajectories.values():
            steps |= set(trajectory["steps"])
        return sorted(s for s in steps if s <= self.final_step)

    def extra_checkpoint_steps(self) -> list[int]:
        """Checkpoints off the regular grid that the trainer must save (diagnostic and probe steps)."""
        every = int(self.scale["training"]["checkpoint_every"])
        return [s for s in self.checkpoint_steps() if s > 0 and s % every]

    # -- one run's records --------------------------------------------------------------------------
    def run_dir(self, run: str) -> str:
        return f"{self.runs_dir()}/{run}"

    def groups(self, run: str) -> str:
        return f"{self.run_dir(run)}/groups.jsonl"

    def manifest(self, run: str) -> str:
        return f"{self.run_dir(run)}/manifest.json"

    def complete(self, run: str) -> str:
        return f"{self.run_dir(run)}/complete.json"

    def group_stats(self, run: str) -> str:
        return f"{self.run_dir(run)}/group_stats.json"

    def register(self, run: str) -> str:
        return f"{self.run_dir(run)}/register.json"

    def runs_dir(self) -> str:
        """Every run's folder: ``tensorboard --logdir`` here shows all runs side by side."""
        return f"{self.root}/runs"

    def tensorboard_dir(self, run: str) -> str:
        """The run's TensorBoard event files (one file per training session; never hashed or read back)."""
        return f"{self.run_dir(run)}/{TENSORBOARD}"

    def curve_conditions(self) -> list[str]:
        """The tier-1 conditions (lower case) that get a curves register: the mean curves of each arm."""
        return sorted({self.matrix.run(run).condition.lower() for run in self.runs("study")})

    def curve_runs(self, condition: str) -> list[str]:
        """The tier-1 runs a curves register averages (`condition` lower case, as in its file name)."""
        return [run for run in self.runs("study") if self.matrix.run(run).condition.lower() == condition]

    def curves(self, condition: str) -> str:
        return self.res(f"curves/{condition}.json")

    def curves_files(self) -> list[str]:
        return [self.curves(c) for c in self.curve_conditions()]

    def compared_curves(self, condition: str) -> list[str]:
        """The curves registers a condition's curves register is compared with (CURVES_COMPARED)."""
        return [self.curves(c) for c in CURVES_COMPARED.get(condition, ()) if c in self.curve_conditions()]

    def first_pair_registers(self, condition: str) -> list[str]:
        """The run registers of a tier-1 condition's first seed pair, treatment then control (table 9)."""
        comparison = self.matrix.comparison(self.matrix.condition(condition).key)
        return [self.register(run.name) for run in comparison.pair(comparison.seeds[0])]

    def cross_stack(self) -> str:
        """The cross-stack register (table 11) over this results tree's runs."""
        return self.res("cross_stack.json")

    def checkpoint_dir(self, run: str, step: int) -> str:
        return f"{self.run_dir(run)}/checkpoints/step{int(step):04d}"

    def eval_dir(self, run: str) -> str:
        return f"{self.root}/evals/{run}"

    def eval_file(self, run: str, phase: str, step: int, regime: str) -> str:
        return f"{self.eval_dir(run)}/{phase}-step{step}-{regime}.jsonl"

    def eval_files(self, run: str) -> list[str]:
        """Every periodic set at every periodic step, then the final sets at the last step."""
        periodic = [
            self.eval_file(run, "periodic", step, regime)
            for step in self.periodic_steps()
            for regime in study.PERIODIC_REGIMES
        ]
        final = [self.eval_file(run, "final", self.final_step, r) for r in self.final_regimes(run)]
        return periodic + final

    def replay_file(self, run: str, step: int | str) -> str:
        """The replay register of a run's checkpoint (``paired-rollouts replay-check``; LLM scales)."""
        return f"{self.root}/replay/{run}/step{step}.json"

    def replay_evaluation(self, run: str, step: int | str) -> str:
        """The final set whose records the replay check compares its first roll with."""
        return self.eval_file(run, "final", step, study.REPLAY_REGIME)

    def replay_files(self) -> list[str]:
        """The replay registers table 18 reads: every tier-1 run at its final checkpoint."""
        return [self.replay_file(run, self.final_step) for run in self.runs("study")]

    def replay_episodes(self) -> int:
        """K, the episodes the replay check rolls twice (``evaluation.replay_episodes``, a workflow key)."""
        from paired_rollouts.settings import Settings

        evaluation = dict(self.scale.get("evaluation") or {})
        return Settings.parse({"evaluation": evaluation}, self.source).evaluation.replay_episodes

    def diagnostics_dir(self, run: str) -> str:
        return f"{self.root}/diagnostics/{run}"

    def diagnostic_episodes(self, run: str, step: int) -> str:
        return f"{self.diagnostics_dir(run)}/diag-step{step}.jsonl"

    def luck(self, run: str, step: int) -> str:
        return f"{self.diagnostics_dir(run)}/luck-step{step}.json"

    def step0_luck(self, run: str) -> str:
        """The step-0 luck share H1a reads (every run is diagnosed at step 0)."""
        return self.luck(run, 0)

    def diagnostic_episode_files(self, run: str) -> list[str]:
        return [self.diagnostic_episodes(run, step) for step in self.diagnostic_steps(run)]

    def luck_files(self, run: str) -> list[str]:
        return [self.luck(run, step) for step in self.diagnostic_steps(run)]

    # -- registers of several runs ------------------------------------------------------------------
    def decision(self, name: str) -> str:
        return f"{self.root}/decisions/{name}.json"

    def decision_files(self) -> list[str]:
        return [self.decision(c) for c in self.decision_conditions()]

    def tier_decision(self, name: str) -> str:
        return f"{self.root}/decisions/tiers/{name}.json"

    def tier_decision_files(self) -> list[str]:
        return [self.tier_decision(name) for name in self.tier_comparisons()]

    def predictions(self, tier: str = "study") -> str:
        """The predictions register judged on tier 1's registers alone, or on the tiers' too."""
        return self.res(
            "decisions/predictions.json" if tier == "study" else "decisions/tiers/predictions.json"
        )

    def power_file(self) -> str:
        return self.res("decisions/power.json")

    def power_curves_file(self) -> str:
        """The power curves at the paper's effect (surrogate scales; docs/records.md section 8.6)."""
        return self.res("decisions/power_curves.json")

    # -- the regime map (surrogate scales, target `regime_map`; docs/records.md 8.5) ----------------
    def regime_map_cell(self, cell_id: str) -> str:
        """One cell's record: its seed pairs' curves and its step-0 predictors."""
        return self.res(f"map/cells/{cell_id}.json")

    def regime_map_file(self) -> str:
        return self.res("map/regime_map.json")

    def regime_map_figure(self, ext: str = "pdf") -> str:
        """The heatmaps of the AUC gap, significant cells marked (a PNG beside the PDF)."""
        return self.res(f"map/regime_map_heatmap.{ext}")

    def step0_file(self) -> str:
        """The surrogate's step-0 calibration register, before any run (surrogate scales)."""
        return self.res("models/surrogate/step0.json")

    def calibration_file(self) -> str:
        """The surrogate's calibration register: the step-0 one plus the unpaired arms' learning curves
        (surrogate scales); every run but those arms' tier-1 runs starts after it passed."""
        return self.res("models/surrogate/calibration.json")

    # -- the probe ----------------------------------------------------------------------------------
    @property
    def trajectories(self) -> Mapping[str, Mapping[str, Any]]:
        return self.scale["probe"]["trajectories"]

    def trajectory(self, name: str) -> Mapping[str, Any]:
        if name not in self.trajectories:
            raise UserError(
                f"unknown probe trajectory {name!r}; {self.source} scales.{self.name}.probe.trajectories "
                f"defines {sorted(self.trajectories)}"
            )
        return self.trajectories[name]

    def trajectory_run(self, name: str) -> str:
        """The run a probe trajectory studies."""
        return self.trajectory(name)["run"]

    def probe_file(self, trajectory: str) -> str:
        return f"{self.root}/probe/{trajectory}.json"

    def bandit_file(self) -> str:
        """The exact aligned-scalar bandit (paper appendix A.1), beside the trajectories' registers."""
        return self.res("probe/bandit.json")

    def probe_files(self) -> list[str]:
        return [self.probe_file(t) for t in sorted(self.trajectories)]

    def probe_checkpoint(self, trajectory: str, step: int) -> str:
        return f"{self.root}/probe/{trajectory}/step{step}.json"

    def probe_checkpoint_files(self, trajectory: str) -> list[str]:
        """One file per checkpoint of the trajectory (each its own job at LLM scales)."""
        return [self.probe_checkpoint(trajectory, s) for s in self.trajectory(trajectory)["steps"]]

    # -- the surrogate's jobs -----------------------------------------------------------------------
    def surrogate_jobs(self, tier: str = "all") -> dict[str, list[str]]:
        """{job name: runs}: each cell's arm in chunks of SURROGATE_SEEDS_PER_JOB seeds (c2-paired-j0, ...)."""
        jobs = {}
        for cell in self.matrix.cells_of(tier):
            seeds = list(cell.seeds)
            for arm in cell.arms:
                stem = study.RunId(cell.condition, arm, 0, cell.scaling).name.rsplit("-s", 1)[0]
                for index, start in enumerate(range(0, len(seeds), SURROGATE_SEEDS_PER_JOB)):
                    chunk = seeds[start : start + SURROGATE_SEEDS_PER_JOB]
                    jobs[f"{stem}-j{index}"] = [
                        study.RunId(cell.condition, arm, seed, cell.scaling).name for seed in chunk
                    ]
        return jobs

    def surrogate_outputs(self, runs: Sequence[str]) -> list[str]:
        """What one surrogate arm job writes: each run's training records, evaluations and diagnostics."""
        out = []
        for run in runs:
            out += [self.groups(run), self.manifest(run), *self.eval_files(run)]
            out += self.diagnostic_episode_files(run)
        return out

    def surrogate_stats_outputs(self, runs: Sequence[str]) -> list[str]:
        """What one surrogate statistics job writes: luck shares, group statistics, completeness."""
        out = []
        for run in runs:
            out += [*self.luck_files(run), self.group_stats(run), self.complete(run)]
        return out

    # -- the pre-registration ----------------------------------------------------------------------
    def verification_file(self) -> str:
        return self.res("prereg/verification.json")

    def amendment_verification_file(self) -> str:
        return self.res("prereg/amendment_verification.json")

    def zero_shot_file(self) -> str:
        return self.res("calibration/zero_shot.json")

    def freeze_dir(self) -> str:
        """cpu: a local test-authority freeze under results/; GPU profiles: the public freeze in prereg/."""
        return self.prereg["local_freeze_dir" if self.accelerator == "cpu" else "public_freeze_dir"]

    def freeze_record(self) -> str:
        return f"{self.freeze_dir()}/freeze.json"

    @property
    def amendments(self) -> list[Mapping[str, Any]]:
        return list(self.prereg.get("amendments") or [])

    def amendment_numbers(self) -> list[str]:
        return [f"{i:03d}" for i in range(1, len(self.amendments) + 1)]

    def amendment_record(self, index: int | str) -> str:
        """Amendment `index`'s record (a string is kept as given: the rules' ``{number}`` wildcard)."""
        number = index if isinstance(index, str) else f"{index:03d}"
        return f"{self.freeze_dir()}/amendments/{number}/amendment.json"

    def amendment_records(self) -> list[str]:
        return [self.amendment_record(i) for i in range(1, len(self.amendments) + 1)]

    def amendment_index(self, number: str) -> int:
        """Amendment NNN's position (1-based); UserError unless config prereg.amendments lists it."""
        index = int(number)
        if not 1 <= index <= len(self.amendments):
            raise UserError(
                f"amendment {number} is not configured: {self.source} prereg.amendments lists "
                f"{len(self.amendments)}; add it there (documents, reason)"
            )
        return index

    def amendment_documents(self, index: int) -> list[str]:
        """Amendment N covers the freeze's documents plus those of amendments 1..N, in order, once each."""
        docs = list(self.prereg["documents"])
        for amendment in self.amendments[:index]:
            docs += amendment["documents"]
        return list(dict.fromkeys(docs))

    def amendment_reason(self, index: int) -> str:
        return self.amendments[index - 1]["reason"]

    def all_protocol_documents(self) -> list[str]:
        """What the last record covers: the freeze's documents and every amendment's."""
        return self.amendment_documents(len(self.amendments))

    def previous_record(self, index: int) -> str:
        """The record amendment N chains to: the freeze for the first, else amendment N - 1."""
        return self.freeze_record() if index == 1 else self.amendment_record(index - 1)

    # -- amendment A3: the paired arms as a registered prediction (surrogate scales) ---------------
    @property
    def prediction_amendment(self) -> Mapping[str, Any]:
        """config prereg.prediction_amendment: A3's own documents, its reason and its rules file."""
        return self.prereg["prediction_amendment"]

    def prediction_amendment_dir(self) -> str:
        """A3 is a branch amendment of the shared freeze, one per scale: it freezes the scale's own
        calibration register (``prereg amend --into``, docs/prereg.md)."""
        return self.res("prereg/a3")

    def prediction_amendment_record(self) -> str:
        return f"{self.prediction_amendment_dir()}/amendment.json"

    def prediction_documents(self) -> list[str]:
        """What A3 covers: every configured record's documents, A3's own and the calibration register."""
        docs = [
            *self.all_protocol_documents(),
            *self.prediction_amendment["documents"],
            self.calibration_file(),
        ]
        return list(dict.fromkeys(docs))

    def paired_runs(self) -> list[str]:
        """Tier 1's paired runs: the arms A3 predicts (their first checkpoint must follow A3's stamp)."""
        return [run for run in self.runs("study") if study.parse_run(run).arm == "paired"]

    def prediction_verification_file(self) -> str:
        """A3's verification (the chain, then A3 with the calibration register's current bytes); every
        paired surrogate run waits for it."""
        return self.res("prereg/prediction_verification.json")

    def prediction_file(self) -> str:
        return self.res("decisions/prediction_a3.json")

    # -- checks before any job runs -----------------------------------------------------------------
    def check(self) -> None:
        """Config consistency the schema cannot express (dry runs fail): diagnostic and probe steps
        within training, probe trajectories on runs of the design."""
        last = self.final_step
        where = f"{self.source} scales.{self.name}"
        for name, steps in self.scale["diagnostics"]["steps"].items():
            beyond = [s for s in steps if s > last]
            if beyond:
                raise UserError(
                    f"{where}.diagnostics.steps.{name} has steps {beyond} beyond the last training step "
                    f"{last}; remove them or train longer"
                )
        runs = self.runs("study")
        for name, trajectory in self.trajectories.items():
            at = f"{where}.probe.trajectories.{name}"
            if trajectory["run"] not in runs:
                raise UserError(
                    f"{at}: run {trajectory['run']!r} is not in the seed matrix ({', '.join(runs)}); "
                    "a probe may only study a run of the design"
                )
            beyond = [s for s in trajectory["steps"] if s > last]
            if beyond:
                raise UserError(f"{at}: steps {beyond} beyond the last training step {last}")
        self._check_settings(where)
        self._check_freeze_dir()
        self._check_input_files()

    def _check_input_files(self) -> None:
        """The committed files the study reads (no rule makes them): a configured path that names no file
        is refused before any job runs. Else a run whose outputs exist reports "Nothing to be done" on a
        mistyped path, and a forced one fails in the job that first reads it."""
        prereg = self.prereg
        wanted: list[tuple[str, Any]] = [
            ("decision_rules", self.decision_rules),
            ("published", self.published),
            ("prereg.tier_rules", prereg.get("tier_rules")),
        ]
        wanted += [(f"prereg.documents[{i}]", d) for i, d in enumerate(prereg.get("documents") or [])]
        for n, amendment in enumerate(prereg.get("amendments") or []):
            docs = amendment.get("documents") if isinstance(amendment, Mapping) else None
            wanted += [(f"prereg.amendments[{n}].documents[{i}]", d) for i, d in enumerate(docs or [])]
        a3 = prereg.get("prediction_amendment")
        if isinstance(a3, Mapping):
            wanted += [
                (f"prereg.prediction_amendment.documents[{i}]", d)
                for i, d in enumerate(a3.get("documents") or [])
            ]
            wanted.append(("prereg.prediction_amendment.rules", a3.get("rules")))
        for key, path in wanted:
            if isinstance(path, str) and not Path(path).is_file():
                what = "is a folder" if Path(path).is_dir() else "names no file"
                raise UserError(
                    f"{self.source}: {key}: {path!r} {what}; give the path of the committed file, relative to "
                    "the repository root (config/config.yaml has the study's own)"
                )

    def _check_freeze_dir(self) -> None:
        """The cpu profile's freeze rule deletes and remakes prereg.local_freeze_dir: a folder that is, holds
        or lies inside a scale's results root (or one of the folders in it) would take those results with
        it, so it is refused before any job runs."""
        folder = self.prereg.get("local_freeze_dir")
        if not isinstance(folder, str):
            return
        freeze = posixpath.normpath(folder)
        roots = [results_root(name) for name in self.scale_names if results_root(name) != "results"]
        protected = roots + [f"results/{name}" for name in RESULTS_FOLDERS]
        for other in protected:
            if freeze == other or other.startswith(f"{freeze}/") or freeze.startswith(f"{other}/"):
                raise UserError(
                    f"{self.source}: prereg.local_freeze_dir: {folder!r} overlaps {other}/, which the "
                    "freeze rule would delete with it; give the freeze a folder of its own, e.g. "
                    "results/prereg/freeze"
                )

    def _check_settings(self, where: str) -> None:
        """The scale's sections parsed as the jobs will parse them (e.g. micro_batch must divide the
        generation batch), and, where the pools exist, the task counts they ask of them: a bad value
        fails here, not in the job that first reads it."""
        from paired_rollouts.backoffice.selection import first_selected
        from paired_rollouts.io import iter_jsonl
        from paired_rollouts.settings import SECTIONS, Settings

        sections = {k: v for k, v in self.scale.items() if k in SECTIONS or k == "task_filter"}
        settings = Settings.parse(sections, where)
        wanted = [
            (study.PHASE_POOL["periodic"], settings.evaluation.eval_tasks, "evaluation.eval_tasks"),
            (study.PHASE_POOL["final"], settings.evaluation.final_tasks, "evaluation.final_tasks"),
            (settings.diagnostics.pool, settings.diagnostics.tasks, "diagnostics.tasks"),
        ]
        for pool, count, key in wanted:
            path = Path(self.tasks_dir) / f"{pool}.jsonl"
            if path.is_file():
                try:
                    first_selected(list(iter_jsonl(path)), pool, count, settings.task_filter, path)
                except UserError as exc:
                    raise UserError(f"{where}.{key}: {exc}") from None


def require_paper_pools(tasks_dir: str | Path, accelerator: str) -> None:
    """GPU profiles run the paper's experiment: pools whose MANIFEST differs from the paper's hashes
    (e.g. written by `tasks --no-check`) are refused before anything runs. The cpu profile may use them;
    every register and table then says the pools are not the paper's."""
    manifest = Path(tasks_dir) / "MANIFEST.json"
    if accelerator == "cpu" or not manifest.is_file():
        return
    from paired_rollouts.backoffice.tasks import paper_pools
    from paired_rollouts.records import read_pool_manifest

    try:
        data = read_pool_manifest(manifest).raw
    except UserError as exc:
        raise UserError(f"{exc}; restore it: git checkout -- {manifest}") from None
    if not paper_pools(data):
        raise UserError(
            f"{manifest}: the task pools are not the paper's (hashes differ from PAPER_POOL_SHA256); the "
            f"{accelerator} profile runs only the paper's pools: git checkout -- {tasks_dir}"
        )


# ---------------------------------------------------------------- one run's files, by run-relative key --
# A run's evidence lies in three folders (evals/RUN, diagnostics/RUN, runs/RUN); complete.json lists it
# under keys relative to the run ("evals/periodic-step0-clean.jsonl", "diagnostics/luck-step0.json",
# "groups.jsonl"), and decide and the run register find the files again through the same keys.


@dataclass(frozen=True)
class RunFiles:
    """One run's files: the key of each (class methods and constants) and where a key lies (``path``)."""

    evals: Path
    diagnostics: Path
    run_dir: Path

    EVALS: ClassVar[str] = "evals"
    DIAGNOSTICS: ClassVar[str] = "diagnostics"
    GROUPS: ClassVar[str] = "groups.jsonl"
    TRAIN_EPISODES: ClassVar[str] = "train_episodes.jsonl"
    MANIFEST: ClassVar[str] = "manifest.json"
    GROUP_STATS: ClassVar[str] = "group_stats.json"
    COMPLETE: ClassVar[str] = "complete.json"
    REGISTER: ClassVar[str] = "register.json"

    @classmethod
    def under(cls, root: str | Path, run: str) -> RunFiles:
        """The run's folders in a results root: evals/RUN, diagnostics/RUN and runs/RUN."""
        base = Path(root)
        return cls(base / cls.EVALS / run, base / cls.DIAGNOSTICS / run, base / "runs" / run)

    @classmethod
    def eval_file(cls, phase: str, step: int, regime: str) -> str:
        """One evaluation set at one checkpoint (phase periodic or final)."""
        return cls.key(cls.EVALS, f"{phase}-step{int(step)}-{regime}.jsonl")

    @classmethod
    def diagnostic_episodes(cls, step: int) -> str:
        return cls.key(cls.DIAGNOSTICS, f"diag-step{int(step)}.jsonl")

    @classmethod
    def luck(cls, step: int) -> str:
        return cls.key(cls.DIAGNOSTICS, f"luck-step{int(step)}.json")

    @classmethod
    def key(cls, folder: str, name: str) -> str:
        """The key of the file ``name`` (a path below the folder) in the run's ``folder``: evals or
        diagnostics."""
        return f"{folder}/{name}"

    @classmethod
    def name(cls, key: str) -> str:
        """A key's path below its folder (evals/x.jsonl -> x.jsonl; a run-folder key is its own name)."""
        top, _, rest = key.partition("/")
        return rest if top in (cls.EVALS, cls.DIAGNOSTICS) else key

    def path(self, key: str) -> Path:
        """Where the file of a run-relative key lies."""
        top = key.partition("/")[0]
        folder = {self.EVALS: self.evals, self.DIAGNOSTICS: self.diagnostics}.get(top, self.run_dir)
        return folder / self.name(key)
