"""Completeness of a run's evidence: exactly the episodes, groups and pools the design calls for.

The decision rules may only see a run whose evidence is whole: a run that lost an evaluation file, or
was evaluated on a different task pool, or whose attempts ran different code, is refused. The check
rebuilds the expected multiset of (task_id, schedule_index) per (phase, step, regime) from the
settings and the frozen pools and compares it item by item, listing what is missing and what is wrong.
It also records the sha256 of every file it read so that ``decide`` can refuse evidence edited later.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from paired_rollouts.design import ARMS, EVALUATION_REGIMES, PERIODIC_REGIMES, parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.io import iter_jsonl, sha256_file
from paired_rollouts.noise.seeds import diagnostic_seed, eval_schedule_seed, row_order, training_schedule_seed
from paired_rollouts.records import (
    PoolManifest,
    iter_episodes,
    iter_groups,
    read_luck,
    read_pool_manifest,
    read_run_manifest,
)

SETTINGS_KEYS = {"periodic", "final", "diagnostic", "training", "run", "task_filter"}
FLAT_KEYS = {
    "run",
    "periodic_steps",
    "periodic_regimes",
    "final_step",
    "final_regimes",
    "eval_tasks",
    "final_tasks",
    "training_steps",
    "prompts_per_step",
    "num_generations",
    "diagnostic_steps",
    "diagnostic_pool",
    "diagnostic_tasks",
    "diagnostic_schedules",
    "diagnostic_samples",
    "task_filter",
}
SETTINGS_HELP = """\
settings keys (one flat JSON object, as stats.completeness.expected_evidence writes it):
  run, task_filter, periodic_steps, periodic_regimes, final_step, final_regimes, eval_tasks, final_tasks,
  training_steps, prompts_per_step, num_generations, diagnostic_steps, diagnostic_pool, diagnostic_tasks,
  diagnostic_schedules, diagnostic_samples
(regimes: a mapping regime -> schedule indices, e.g. {"clean": [1, 2], "challenge": [1]}; tasks are the
first N task_ids of data/tasks/{pool}.jsonl)"""
MAX_LISTED = 20
KNOWN_REGIMES = EVALUATION_REGIMES


def _require(d: dict[str, Any], key: str, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise UserError(f"completeness settings: '{where}.{key}' is required\n{SETTINGS_HELP}")
    return d[key]


def _int(value: Any, where: str) -> int:
    """A settings count or step: an integer (``2.0`` or ``"2"`` are refused, not rounded)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(
            f"completeness settings: '{where}' is {value!r}, expected an integer\n{SETTINGS_HELP}"
        )
    return value


def _ints(values: Any, where: str) -> list[int]:
    if not isinstance(values, list):
        raise UserError(f"completeness settings: '{where}' is {values!r}, expected a list of integers")
    return [_int(v, where) for v in values]


def _indices(regimes: Any, where: str) -> dict[str, list[int]]:
    """A mapping regime -> schedule indices (the one shape: expected_evidence writes it from the design)."""
    if not isinstance(regimes, dict):
        raise UserError(
            f"completeness settings: '{where}' is {regimes!r}; give a mapping regime -> schedule indices, "
            'e.g. {"clean": [1, 2]}'
        )
    return {str(k): _ints(v, f"{where}.{k}") for k, v in regimes.items()}


def normalize_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The flat settings object ``expected_evidence`` builds, as the internal per-phase form recorded in ``complete.json``; any other key is an error."""
    if not isinstance(settings, dict):
        raise UserError(f"completeness settings: expected a JSON object\n{SETTINGS_HELP}")
    unknown = set(settings) - FLAT_KEYS
    if unknown:
        raise UserError(f"completeness settings: unknown keys {sorted(unknown)}\n{SETTINGS_HELP}")
    for key in (
        "eval_tasks",
        "final_tasks",
        "final_step",
        "training_steps",
        "prompts_per_step",
        "num_generations",
    ):
        if key in settings:
            _int(settings[key], key)
    for key in ("diagnostic_tasks", "diagnostic_schedules", "diagnostic_samples"):
        if settings.get(key) is not None:
            _int(settings[key], key)
    for key in ("periodic_steps", "diagnostic_steps"):
        if key in settings:
            _ints(settings[key], key)
    try:
        out: dict[str, Any] = {}
        if "run" in settings:
            out["run"] = settings["run"]
        if "task_filter" in settings:
            out["task_filter"] = settings["task_filter"]
        if "periodic_steps" in settings:
            out["periodic"] = {
                "steps": settings["periodic_steps"],
                "pool": "validation",
                "tasks": settings["eval_tasks"],
                "regimes": _indices(settings["periodic_regimes"], "periodic_regimes"),
            }
        if "final_step" in settings:
            out["final"] = {
                "step": settings["final_step"],
                "pool": "test",
                "tasks": settings["final_tasks"],
                "regimes": _indices(settings["final_regimes"], "final_regimes"),
            }
        if settings.get("diagnostic_steps"):
            out["diagnostic"] = {
                "steps": settings["diagnostic_steps"],
                "pool": settings.get("diagnostic_pool", "diagnostic"),
                "tasks": settings.get("diagnostic_tasks"),
                "schedules": settings.get("diagnostic_schedules"),
                "samples": settings.get("diagnostic_samples"),
            }
        if "training_steps" in settings:
            out["training"] = {
                "steps": settings["training_steps"],
                "prompts": settings["prompts_per_step"],
                "generations": settings["num_generations"],
            }
    except KeyError as exc:
        raise UserError(f"completeness settings: '{exc.args[0]}' is required\n{SETTINGS_HELP}") from exc
    return out


def expected_evidence(
    run: str, scale: dict[str, Any], conditions: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a complete run must contain, from the scale block (config/config.yaml `scales.<scale>`: its
    task_filter, training, evaluation and diagnostics sections) and the run's name (its condition and seed).

    The flat form below is the one ``normalize_settings`` reads (the same evidence the workflow's rules
    used to spell out)."""
    from paired_rollouts.design import final_regimes, parse_conditions, parse_run
    from paired_rollouts.layout import diagnostic_steps_of, periodic_steps

    where = "completeness --scale-block"
    try:
        training, evaluation, diagnostics = scale["training"], scale["evaluation"], scale["diagnostics"]
        known = parse_conditions(conditions)
        run_id = parse_run(run, known)
        steps = diagnostics["steps"]
        return {
            "run": run,
            "task_filter": scale.get("task_filter", "all"),
            "periodic_steps": periodic_steps(int(training["steps"]), int(training["checkpoint_every"])),
            "periodic_regimes": {r: list(k) for r, k in PERIODIC_REGIMES.items()},
            "final_step": int(training["steps"]),
            "final_regimes": {r: list(k) for r, k in final_regimes(known[run_id.condition]).items()},
            "eval_tasks": evaluation["eval_tasks"],
            "final_tasks": evaluation["final_tasks"],
            "training_steps": training["steps"],
            "prompts_per_step": training["prompts_per_step"],
            "num_generations": training["num_generations"],
            "diagnostic_steps": diagnostic_steps_of(steps, run_id.seed),
            "diagnostic_pool": diagnostics["pool"],
            "diagnostic_tasks": diagnostics["tasks"],
            "diagnostic_schedules": diagnostics["schedules"],
            "diagnostic_samples": diagnostics["samples"],
        }
    except (KeyError, TypeError) as exc:
        raise UserError(
            f"{where}: the scale block lacks {exc}; pass the scale's task_filter, training, "
            "evaluation and diagnostics sections as in config/config.yaml"
        ) from None


def validate_settings(settings: dict[str, Any]) -> None:
    unknown = set(settings) - SETTINGS_KEYS
    if unknown:
        raise UserError(f"completeness settings: unknown keys {sorted(unknown)}\n{SETTINGS_HELP}")
    for block, keys in {
        "periodic": ("steps", "pool", "tasks", "regimes"),
        "final": ("step", "pool", "tasks", "regimes"),
        "diagnostic": ("steps", "pool", "tasks", "schedules", "samples"),
        "training": ("steps", "prompts", "generations"),
    }.items():
        if block in settings:
            for key in keys:
                _require(settings[block], key, block)
            extra = set(settings[block]) - set(keys)
            if extra:
                raise UserError(
                    f"completeness settings: unknown keys {sorted(extra)} in '{block}'\n{SETTINGS_HELP}"
                )
            node = settings[block]
            for key in ("tasks", "schedules", "samples", "step", "prompts", "generations"):
                if key in node and not (block == "diagnostic" and node[key] is None):
                    _int(node[key], f"{block}.{key}")
            if block == "training":
                _int(node["steps"], "training.steps")
            elif "steps" in node:
                _ints(node["steps"], f"{block}.steps")
            if "regimes" in node:
                if not isinstance(node["regimes"], dict):
                    raise UserError(
                        f"completeness settings: '{block}.regimes' must map regime -> schedule indices"
                    )
                for regime, indices in node["regimes"].items():
                    if regime not in KNOWN_REGIMES:
                        raise UserError(
                            f"completeness settings: '{block}.regimes' names unknown regime {regime!r}"
                        )
                    _ints(indices, f"{block}.regimes.{regime}")


def pool_task_ids(tasks_dir: Path, pool: str, count: int, task_filter: str = "all") -> list[str]:
    """The first ``count`` task ids of a pool after the run's task selection (the diagnostic pool is
    never filtered)."""
    from paired_rollouts.backoffice.tasks import first_selected

    path = tasks_dir / f"{pool}.jsonl"
    return [
        str(rec["task_id"]) for rec in first_selected(list(iter_jsonl(path)), pool, count, task_filter, path)
    ]


def _paper(manifest: PoolManifest) -> bool:
    from paired_rollouts.backoffice.tasks import paper_pools

    return paper_pools(manifest.raw)


class _Checker:
    def __init__(self, run: str) -> None:
        self.run = run
        self.ident = parse_run(run).to_dict()
        self.missing: list[dict[str, Any]] = []
        self.defects: list[dict[str, Any]] = []
        self.files: dict[str, str] = {}
        self.episodes_found = 0
        self.seen_seeds: dict[tuple[str, str, int], int] = {}

    def _defect(self, **entry: Any) -> None:
        if len(self.defects) < 50 * MAX_LISTED:
            self.defects.append(entry)

    def identity(self, rec: dict[str, Any], rel: str, line: int, **expected: Any) -> bool:
        want = {
            "run": self.run,
            "condition": self.ident["condition"],
            "arm": self.ident["arm"],
            "seed": self.ident["seed"],
            **expected,
        }
        for key, value in want.items():
            if rec.get(key) != value:
                self._defect(
                    kind="identity",
                    path=rel,
                    line=line,
                    problem=f"{key} is {rec.get(key)!r}, expected {value!r}",
                )
                return False
        return True

    def eval_file(
        self,
        path: Path,
        rel: str,
        phase: str,
        step: int,
        regime: str,
        task_ids: list[str],
        indices: list[int],
    ) -> None:
        expected = Counter((t, int(k)) for t in task_ids for k in indices)
        if not path.is_file():
            self.missing.append({"kind": "file", "path": rel, "expected": sum(expected.values())})
            return
        self.files[rel] = sha256_file(path)
        found: Counter = Counter()
        for line, rec in iter_episodes(path):
            self.episodes_found += 1
            self.identity(rec, rel, line, phase=phase, step=step, regime=regime)
            index = rec["schedule_index"] if rec["schedule_index"] is not None else -1
            item = (rec["task_id"], index)
            found[item] += 1
            seed = rec["schedule_seed"]
            # the evaluation schedules are the design's, identical across arms and checkpoints
            if seed != eval_schedule_seed(rec["task_id"], index):
                self._defect(
                    kind="schedule_seed",
                    path=rel,
                    line=line,
                    item=list(item),
                    problem=f"schedule_seed {seed} is not eval_schedule_seed({rec['task_id']}, {index})",
                )
            key = (regime, *item)
            if key in self.seen_seeds and self.seen_seeds[key] != seed:
                self._defect(
                    kind="schedule_seed",
                    item=list(item),
                    path=rel,
                    problem=f"seeds {self.seen_seeds[key]} and {seed} for one schedule",
                )
            self.seen_seeds.setdefault(key, seed)
        self._compare(rel, expected, found, "episodes")

    def _compare(self, rel: str, expected: Counter, found: Counter, kind: str) -> None:
        absent = sorted((expected - found).elements())
        extra = sorted((found - expected).elements())
        if absent:
            self.missing.append(
                {
                    "kind": kind,
                    "path": rel,
                    "expected": sum(expected.values()),
                    "found": sum(found.values()),
                    "absent": [list(a) for a in absent[:MAX_LISTED]],
                }
            )
        for item in extra[:MAX_LISTED]:
            kind_extra = "duplicate" if item in expected else "unexpected"
            self.defects.append({"kind": kind_extra, "path": rel, "item": list(item)})

    def diag_file(
        self, path: Path, rel: str, step: int, task_ids: list[str], schedules: int, samples: int
    ) -> None:
        if not path.is_file():
            self.missing.append(
                {"kind": "file", "path": rel, "expected": len(task_ids) * schedules * samples}
            )
            return
        self.files[rel] = sha256_file(path)
        per_task: dict[str, Counter] = {}
        run_seed = self.ident["seed"]
        for line, rec in iter_episodes(path):
            self.episodes_found += 1
            self.identity(rec, rel, line, phase="diagnostic", step=step, regime="diag")
            index = rec["schedule_index"]
            if index is None or not 0 <= index < schedules:
                self._defect(
                    kind="identity",
                    path=rel,
                    line=line,
                    problem=f"schedule_index {index!r} outside 0..{schedules - 1}",
                )
            elif rec["schedule_seed"] != diagnostic_seed(run_seed, rec["task_id"], index):
                self._defect(
                    kind="schedule_seed",
                    path=rel,
                    line=line,
                    item=[rec["task_id"], index],
                    problem=f"schedule_seed {rec['schedule_seed']} is not diagnostic_seed({run_seed}, "
                    f"{rec['task_id']}, {index})",
                )
            per_task.setdefault(rec["task_id"], Counter())[rec["schedule_seed"]] += 1
        for task in task_ids:
            seeds = per_task.get(task)
            if seeds is None:
                self.missing.append(
                    {"kind": "diagnostic", "path": rel, "task_id": task, "problem": "no episodes"}
                )
                continue
            problems = []
            if len(seeds) != schedules:
                problems.append(f"{len(seeds)} schedules, expected {schedules}")
            short = sorted(str(s) for s, n in seeds.items() if n != samples)
            if short:
                problems.append(f"schedules {short[:5]} do not have {samples} samples")
            if problems:
                self.missing.append(
                    {"kind": "diagnostic", "path": rel, "task_id": task, "problem": "; ".join(problems)}
                )
        for task in sorted(set(per_task) - set(task_ids)):
            self.defects.append({"kind": "unexpected", "path": rel, "item": [task]})

    def luck_file(self, path: Path, rel: str, step: int, diag_rel: str) -> None:
        """A luck-share file must be derived from the very diagnostic file checked here."""
        data = read_luck(path)
        self.files[rel] = sha256_file(path)
        if data["run"] != self.run or data["step"] != step:
            self._defect(
                kind="identity",
                path=rel,
                problem=f"luck-share file of {data['run']} step {data['step']}, expected {self.run} step {step}",
            )
        if diag_rel not in self.files:
            self._defect(kind="luck", path=rel, problem=f"{diag_rel} was not checked")
        elif data["source_sha256"] != self.files[diag_rel]:
            self._defect(
                kind="luck", path=rel, problem=f"source_sha256 differs from {diag_rel}; rerun luck-share"
            )

    def groups_file(
        self, path: Path, steps: int, prompts: int, generations: int, train_ids: list[str] | None
    ) -> tuple[int, int]:
        """Every (step, group) once, on its own training row: task, row index and row seed of the design."""
        rel = "groups.jsonl"
        if not path.is_file():
            self.missing.append({"kind": "file", "path": rel, "expected": steps * prompts})
            return 0, 0
        self.files[rel] = sha256_file(path)
        by_step: dict[int, Counter] = {}
        groups = rollouts = 0
        seed, condition, arm = self.ident["seed"], self.ident["condition"], self.ident["arm"]
        order = row_order(len(train_ids), seed) if train_ids else None

        def group_defect(line: int, step: int, group: int, problem: str) -> None:
            self._defect(kind="group", path=rel, line=line, step=step, group=group, problem=problem)

        for line, rec in iter_groups(path):
            groups += 1
            if rec["run"] != self.run:
                self._defect(
                    kind="identity",
                    path=rel,
                    line=line,
                    problem=f"run is {rec['run']!r}, expected {self.run!r}",
                )
            step, group = rec["step"], rec["group"]

            size = len(rec["true_success"])
            rollouts += size
            if size != generations:
                group_defect(line, step, group, f"list lengths {size}, expected {generations}")
            if not 0 <= step < steps or not 0 <= group < prompts:
                group_defect(line, step, group, "step or group out of range")
                continue
            by_step.setdefault(step, Counter())[group] += 1
            row = step * prompts + group
            if rec.get("row_index", row) != row:
                group_defect(line, step, group, f"row_index {rec['row_index']}, expected {row}")
            # a blocking arm trains each source row twice in a row (its clean copy, then the noisy group)
            source = row // 2 if ARMS[arm].blocking else row
            if order is not None:
                want = train_ids[order[source % len(train_ids)]]
                if rec["task_id"] != want:
                    group_defect(
                        line, step, group, f"task_id {rec['task_id']} is not training row {row}'s task {want}"
                    )
            row_seed = training_schedule_seed(seed, condition, source)
            if rec.get("schedule_seed", row_seed) != row_seed:
                group_defect(
                    line,
                    step,
                    group,
                    f"schedule_seed {rec['schedule_seed']} is not training row {row}'s seed",
                )
            if (
                ARMS[arm].coupling != "independent"
                and "schedule_seed" in rec
                and set(rec["schedule_seeds"]) != {row_seed}
            ):
                group_defect(line, step, group, f"{arm} rollouts must all use the row's seed {row_seed}")
        for step in range(steps):
            got = by_step.get(step, Counter())
            expected = Counter(range(prompts))
            if got != expected:
                absent = sorted((expected - got).elements())
                extra = sorted((got - expected).elements())
                if absent:
                    self.missing.append(
                        {
                            "kind": "groups",
                            "step": step,
                            "expected": prompts,
                            "found": sum(got.values()),
                            "absent": absent[:MAX_LISTED],
                        }
                    )
                for g in extra[:MAX_LISTED]:
                    self.defects.append(
                        {
                            "kind": "duplicate" if g in expected else "unexpected",
                            "path": rel,
                            "item": [step, g],
                        }
                    )
        return groups, rollouts

    def stray_files(self, folder: Path, prefix: str, allowed: set[str]) -> None:
        """Files in a run's evidence folder that the design does not call for (e.g. a final set stamped at
        the wrong step, or a same-named copy in a subfolder) are defects: nothing unlisted may sit there."""
        if not folder.is_dir():
            return
        for path in sorted(folder.rglob("*")):
            if path.is_dir() or (path.name.startswith(".") and path.name.endswith(".tmp")):
                continue
            rel = path.relative_to(folder).as_posix()
            if rel not in allowed:
                self._defect(
                    kind="stray",
                    path=f"{prefix}/{rel}",
                    problem="file not called for by the design; delete it or fix the settings",
                )


def check_run(
    run: str,
    settings: dict[str, Any],
    *,
    evals_dir: str | Path,
    diagnostics_dir: str | Path | None,
    groups_path: str | Path | None,
    run_manifest_path: str | Path | None,
    data_manifest_path: str | Path,
    tasks_dir: str | Path | None = None,
    luck_paths: list[str | Path] | None = None,
) -> dict[str, Any]:
    """The content of ``complete.json`` (docs/records.md section 3)."""
    settings = normalize_settings(settings)
    validate_settings(settings)
    task_filter = settings.get("task_filter", "all")
    if settings.get("run", run) != run:
        raise UserError(f"completeness settings name run {settings['run']!r}, not {run!r}")
    data_manifest = read_pool_manifest(data_manifest_path)
    tasks_root = Path(tasks_dir) if tasks_dir else Path(data_manifest_path).parent
    chk = _Checker(run)
    evals = Path(evals_dir)
    expected_episodes = 0
    eval_names: set[str] = set()
    periodic = settings.get("periodic")
    if periodic:
        ids = pool_task_ids(tasks_root, periodic["pool"], int(periodic["tasks"]), task_filter)
        for step in periodic["steps"]:
            for regime, indices in sorted(periodic["regimes"].items()):
                expected_episodes += len(ids) * len(indices)
                name = f"periodic-step{int(step)}-{regime}.jsonl"
                eval_names.add(name)
                chk.eval_file(evals / name, f"evals/{name}", "periodic", int(step), regime, ids, indices)
    final = settings.get("final")
    if final:
        ids = pool_task_ids(tasks_root, final["pool"], int(final["tasks"]), task_filter)
        for regime, indices in sorted(final["regimes"].items()):
            expected_episodes += len(ids) * len(indices)
            name = f"final-step{int(final['step'])}-{regime}.jsonl"
            eval_names.add(name)
            chk.eval_file(evals / name, f"evals/{name}", "final", int(final["step"]), regime, ids, indices)
    chk.stray_files(evals, "evals", eval_names)
    diag = settings.get("diagnostic")
    skipped: list[str] = []
    if diag and diag["steps"] and diagnostics_dir is None:
        skipped.append("diagnostic episodes: no --diagnostics folder given")
    elif diag and diag["steps"] and None in (diag["tasks"], diag["schedules"], diag["samples"]):
        skipped.append("diagnostic episodes: settings lack diagnostic_tasks/schedules/samples")
    elif diag and diag["steps"]:
        ids = pool_task_ids(tasks_root, diag["pool"], int(diag["tasks"]), task_filter)
        k, m = int(diag["schedules"]), int(diag["samples"])
        for step in diag["steps"]:
            expected_episodes += len(ids) * k * m
            name = f"diag-step{int(step)}.jsonl"
            chk.diag_file(Path(diagnostics_dir) / name, f"diagnostics/{name}", int(step), ids, k, m)
    luck_steps: dict[int, Path] = {}
    for path in luck_paths or []:
        data = read_luck(path)
        if data["step"] in luck_steps:
            raise UserError(
                f"{path}: a second luck-share file for step {data['step']} (first {luck_steps[data['step']]})"
            )
        luck_steps[data["step"]] = Path(path)
    diag_steps = [int(x) for x in (diag or {}).get("steps") or []] if not skipped else []
    for step in sorted(luck_steps):
        if step not in diag_steps:
            chk.defects.append(
                {
                    "kind": "luck",
                    "path": str(luck_steps[step]),
                    "problem": f"step {step} is not a diagnostic step of the design",
                }
            )
            continue
        chk.luck_file(
            luck_steps[step], f"diagnostics/luck-step{step}.json", step, f"diagnostics/diag-step{step}.jsonl"
        )
    if diagnostics_dir is not None and diag_steps:
        allowed = {f"diag-step{s}.jsonl" for s in diag_steps} | {f"luck-step{s}.json" for s in diag_steps}
        chk.stray_files(Path(diagnostics_dir), "diagnostics", allowed)
    training = settings.get("training")
    groups_expected = rollouts_expected = groups_found = rollouts_found = 0
    if training:
        if groups_path is None:
            raise UserError(
                "the settings expect training groups; pass --groups results/runs/RUN/groups.jsonl"
            )
        steps, prompts, gens = int(training["steps"]), int(training["prompts"]), int(training["generations"])
        groups_expected, rollouts_expected = steps * prompts, steps * prompts * gens
        train_pool = tasks_root / "train.jsonl"
        train_ids = None
        if train_pool.is_file():
            from paired_rollouts.backoffice.tasks import select_tasks

            train_ids = [str(t["task_id"]) for t in select_tasks(list(iter_jsonl(train_pool)), task_filter)]
        groups_found, rollouts_found = chk.groups_file(Path(groups_path), steps, prompts, gens, train_ids)

    expected_pools = data_manifest.sha256
    if not expected_pools:
        raise UserError(
            f"{data_manifest_path}: no 'pools' with sha256 values; regenerate with 'paired-rollouts tasks'"
        )
    task_pools: dict[str, Any] = {}
    code_versions: list[str] = []
    if run_manifest_path is None or not Path(run_manifest_path).is_file():
        chk.missing.append({"kind": "file", "path": "manifest.json"})
    else:
        run_manifest = read_run_manifest(run_manifest_path)
        run_pools = run_manifest.pools_sha256
        if not run_pools:
            chk.defects.append(
                {"kind": "pool", "name": None, "problem": "run manifest records no task-pool hashes"}
            )
        for name in sorted(set(expected_pools) | set(run_pools)):
            got, want = run_pools.get(name), expected_pools.get(name)
            task_pools[name] = {"sha256": got, "expected_sha256": want, "match": got == want}
            if run_pools and got != want:
                chk.defects.append(
                    {
                        "kind": "pool",
                        "name": name,
                        "problem": "run manifest sha256 differs from the data manifest",
                    }
                )
        code_versions = run_manifest.code_versions
        if not code_versions:
            chk.defects.append({"kind": "code_version", "problem": "run manifest records no code version"})
        elif len(code_versions) > 1:
            chk.defects.append(
                {
                    "kind": "code_version",
                    "problem": f"attempts ran different code: {', '.join(code_versions)}",
                }
            )
    for name, want in sorted(expected_pools.items()):
        pool_file = tasks_root / f"{name}.jsonl"
        if pool_file.is_file() and sha256_file(pool_file) != want:
            chk.defects.append(
                {
                    "kind": "pool",
                    "name": name,
                    "problem": f"{pool_file} sha256 differs from the data manifest",
                }
            )
    return {
        "run": run,
        **chk.ident,
        "complete": not chk.missing and not chk.defects,
        "settings": settings,
        "episodes_expected": expected_episodes,
        "episodes_found": chk.episodes_found,
        "groups_expected": groups_expected,
        "groups_found": groups_found,
        "rollouts_expected": rollouts_expected,
        "rollouts_found": rollouts_found,
        "files": chk.files,
        "task_pools": task_pools,
        "task_pools_match": bool(task_pools) and all(v["match"] for v in task_pools.values()),
        "paper_pools": _paper(data_manifest),
        "code_versions": code_versions,
        "code_consistent": len(code_versions) == 1,
        "missing": chk.missing,
        "defects": chk.defects,
        "skipped": skipped,
    }
