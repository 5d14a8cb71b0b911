# Shared helpers: the run matrix, paths, per-stage settings (as JSON for the CLI's --settings), and
# the package sources each rule executes (declared as inputs so code edits rerun exactly the stages
# that run that code).

import json
from pathlib import Path

from paired_rollouts import settings as settings_of_scale

SCALE_NAME = config["scale"]
try:
    # the scale block with the shared `study:` block merged under it (paired_rollouts/settings.py)
    SCALE = settings_of_scale.scale_block(config, SCALE_NAME)
except UserError as error:
    raise WorkflowError(f"config/config.yaml: {error}") from None
ACCELERATOR = config["accelerator"]
TASKS_DIR = config["tasks_dir"]
# Each scale writes under its own results root, so a stand-in run never stands in for a paper run:
# the paper scale keeps `results/`, every other scale `results/<scale>/`.
RESULTS = "results" if SCALE_NAME == "paper" else f"results/{SCALE_NAME}"


SURROGATE = SCALE["model"]["kind"] == "surrogate"
CALIBRATION_FILE = f"{RESULTS}/models/surrogate/calibration.json"
POWER_FILE = f"{RESULTS}/decisions/power.json"
PUBLISHED_CURVES = "data/published/curves.yaml"


def res(path):
    """A path under this scale's results root (wildcards in `path` are kept for Snakemake)."""
    return f"{RESULTS}/{path}"


# The study's vocabulary and this scale's run matrix come from the design module (docs/design.md); the
# config's `conditions:` block and the scale's `seeds:` and `tiers:` are the only places to edit them.
from paired_rollouts import design as study

DESIGN = study.Design.from_config(config, SCALE_NAME)
POOLS = list(study.POOLS)
PACKAGE = Path("workflow_src/paired_rollouts")
PERIODIC_REGIMES = list(study.PERIODIC_REGIMES)
FINAL_REGIMES = list(study.FINAL_REGIMES)
CONDITIONS_JSON = DESIGN.to_json()


def parse_run(run):
    """A run of this scale's design (study.RunId: condition, arm, seed, scaling)."""
    return DESIGN.run(run)


def runs_of(condition, tier="study"):
    return [run.name for run in DESIGN.runs_of(condition, tier)]


# Tier 1 (target `all`), the registered later tiers (target `tiers`), and both.
RUNS = DESIGN.run_names("study")
TIER_RUNS = DESIGN.run_names("tiers")
ALL_RUNS = DESIGN.run_names()
TIER_COMPARISONS = [c.name for c in DESIGN.comparisons("tiers")]
RUN_PATTERN = "|".join(sorted(ALL_RUNS, key=len, reverse=True)) or "none"
# Conditions whose final evaluation adds the at-training set (study.Condition.needs_at_training_final).
OWN_FINAL_RUNS = [r for r in ALL_RUNS if DESIGN.condition(parse_run(r).condition).needs_at_training_final()]
STANDARD_FINAL_RUNS = [r for r in ALL_RUNS if r not in OWN_FINAL_RUNS]


def refuse_non_paper_pools():
    """GPU profiles run the paper's experiment: pools whose MANIFEST differs from the paper's hashes
    (e.g. written by `tasks --no-check`) are refused before anything runs. The cpu profile may use them;
    every register and table then says the pools are not the paper's."""
    manifest = Path(TASKS_DIR) / "MANIFEST.json"
    if ACCELERATOR == "cpu" or not manifest.is_file():
        return
    from paired_rollouts.backoffice.tasks import paper_pools

    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise WorkflowError(f"{manifest}: unreadable ({exc}); restore it: git checkout -- {manifest}")
    if not paper_pools(data):
        raise WorkflowError(
            f"{manifest}: the task pools are not the paper's (hashes differ from PAPER_POOL_SHA256); the "
            f"{ACCELERATOR} profile runs only the paper's pools: git checkout -- {TASKS_DIR}"
        )


refuse_non_paper_pools()
DECISION_CONDITIONS = [c.name for c in DESIGN.comparisons("study")]


def sources(*modules):
    """The package files a stage executes: whole sub-packages ('noise') or single modules ('episode.py')."""
    files = [PACKAGE / "io.py", PACKAGE / "errors.py", PACKAGE / "cli.py"]
    for module in modules:
        path = PACKAGE / module
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
        if module.startswith("training"):
            files.append(PACKAGE / "settings.py")  # the learning commands parse their settings there
    return [str(f) for f in dict.fromkeys(files)]


SIMULATOR = ("backoffice", "noise", "episode.py")
SIMULATOR_SOURCES = sources(*SIMULATOR)
# Templates are code too, but each job depends only on the templates it renders.
RENDER_SOURCES = sources("render")
TEMPLATES = PACKAGE / "render" / "templates"


def table_templates(wildcards):
    return [str(TEMPLATES / "table_base.tex.j2"), str(TEMPLATES / f"table{int(wildcards.number)}.tex.j2")]


def document_template():
    return str(TEMPLATES / "document.tex.j2")


def pool_files():
    return [f"{TASKS_DIR}/{pool}.jsonl" for pool in POOLS]


# ---------------------------------------------------------------- steps -----------------------------


def training_steps():
    return SCALE["training"]["steps"]


def periodic_steps():
    """Checkpoints evaluated on the validation pool: 0, every checkpoint_every steps, and the last."""
    every = SCALE["training"]["checkpoint_every"]
    last = training_steps()
    return sorted(set(range(0, last + 1, every)) | {last})


def diagnostic_steps(run):
    steps = SCALE["diagnostics"]["steps"]
    return steps["seed0"] if parse_run(run).seed == 0 else steps["other"]


def checkpoint_steps():
    """Every step any stage needs weights for: periodic, diagnostic and probe steps."""
    steps = set(periodic_steps())
    steps |= set(SCALE["diagnostics"]["steps"]["seed0"]) | set(SCALE["diagnostics"]["steps"]["other"])
    for trajectory in SCALE["probe"]["trajectories"].values():
        steps |= set(trajectory["steps"])
    return sorted(s for s in steps if s <= training_steps())


def final_step():
    return training_steps()


# ---------------------------------------------------------------- paths -----------------------------


def final_regimes(run):
    """A run whose training noise is none of the final regimes (C3, C4, C2r) adds its own `at_training` set."""
    return list(study.final_regimes(DESIGN.condition(parse_run(run).condition)))


def eval_files(run):
    periodic = [
        f"{RESULTS}/evals/{run}/periodic-step{step}-{regime}.jsonl"
        for step in periodic_steps()
        for regime in PERIODIC_REGIMES
    ]
    final = [
        f"{RESULTS}/evals/{run}/final-step{final_step()}-{regime}.jsonl" for regime in final_regimes(run)
    ]
    return periodic + final


def diagnostic_episode_files(run):
    return [f"{RESULTS}/diagnostics/{run}/diag-step{step}.jsonl" for step in diagnostic_steps(run)]


def luck_files(run):
    return [f"{RESULTS}/diagnostics/{run}/luck-step{step}.json" for step in diagnostic_steps(run)]


def verification_file():
    return res("prereg/verification.json")


def freeze_dir():
    """cpu: a local test-authority freeze under results/; GPU profiles: the public freeze in prereg/."""
    if ACCELERATOR == "cpu":
        return config["prereg"]["local_freeze_dir"]
    return config["prereg"]["public_freeze_dir"]


STANDIN_ROOT = f"{RESULTS}/models/{SCALE_NAME}"


def model_dir():
    """The warm-started stand-in or the prepared text-only snapshot of the real model (rule prepare_model)."""
    if SCALE["model"]["kind"] == "standin":
        return f"{STANDIN_ROOT}/model"
    return f"{STANDIN_ROOT}/prepared"


def model_inputs():
    """Both kinds are built by rules: the stand-in from scratch, the real model prepared from its snapshot."""
    return [f"{model_dir()}/config.json"]


# ---------------------------------------------------------------- settings --------------------------


def as_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def conda_deployment():
    """True under `--sdm conda`: the jobs would run in the envs/*.yaml environments."""
    methods = getattr(getattr(workflow, "deployment_settings", None), "deployment_method", None) or ()
    return any(str(getattr(m, "name", m)).lower() == "conda" for m in methods)


if ACCELERATOR == "mi300x" and conda_deployment():
    # pip has no ROCm build of vLLM, so a conda environment could only run HF generation, which is not
    # the paper's setup: the ROCm stack is the container of envs/rocm.Dockerfile only.
    raise WorkflowError(
        "accelerator mi300x has no conda environment (pip has no ROCm vLLM); run Snakemake inside the "
        "container of envs/rocm.Dockerfile without --sdm conda (envs/rocm.md)"
    )


def stage_settings(*sections, **overrides):
    """A job's --settings: the scale's task filter, the sections its stage reads as written in the config,
    and the accelerator's stack (`stacks:`); a change to one of them reruns the job (params trigger)."""
    return as_json(settings_of_scale.stage_settings(config, SCALE_NAME, ACCELERATOR, *sections, **overrides))


def run_settings(wildcards):
    """One run: the training section, plus the checkpoints other stages need and the run's reward scaling."""
    every = SCALE["training"]["checkpoint_every"]
    training = {"extra_checkpoint_steps": [s for s in checkpoint_steps() if s > 0 and s % every]}
    scaling = parse_run(wildcards.run).scaling
    if scaling != study.DEFAULT_SCALING:
        training["scale_rewards"] = scaling  # the H4 tier: TRL's scale_rewards from the run name
    return stage_settings("stack", "training", training=training)


def eval_settings():
    return stage_settings("stack", "training", "evaluation")


def diagnostic_settings():
    return stage_settings("stack", "training", "evaluation", "diagnostics")


def model_settings():
    """The stand-in's build: tokenizer vocabulary, size, warm start."""
    return stage_settings("model")


def probe_settings(wildcards):
    return stage_settings("stack", "training", "evaluation", "diagnostics", "probe")


def completeness_scale():
    """What the completeness check derives a run's expected evidence from (with the run's name)."""
    return as_json({key: SCALE[key] for key in ("task_filter", "training", "evaluation", "diagnostics")})


def checkpoint_dir(wildcards):
    return f"{RESULTS}/runs/{wildcards.run}/checkpoints/step{int(wildcards.step):04d}"


def eval_files_of(wildcards):
    return eval_files(wildcards.run)


def diagnostic_episode_files_of(wildcards):
    return diagnostic_episode_files(wildcards.run)


def luck_files_of(wildcards):
    return luck_files(wildcards.run)


# ---------------------------------------------------------------- decisions -------------------------


def upper_condition(wildcards):
    return wildcards.condition.upper()


def decision_runs(wildcards):
    return runs_of(wildcards.condition.upper())


def decision_seeds(wildcards):
    """The design's seeds: a hypothesis is decided only when every one of their pairs is admitted."""
    return [str(seed) for seed in SCALE["seeds"][wildcards.condition.upper()]]


def decision_eval_files(wildcards):
    return [f for run in decision_runs(wildcards) for f in eval_files(run)]


def decision_eval_dirs(wildcards):
    return [f"{RESULTS}/evals/{run}" for run in decision_runs(wildcards)]


def decision_group_files(wildcards):
    return [f"{RESULTS}/runs/{run}/groups.jsonl" for run in decision_runs(wildcards)]


def decision_complete_files(wildcards):
    return [f"{RESULTS}/runs/{run}/complete.json" for run in decision_runs(wildcards)]


def decision_luck_files(wildcards):
    """H1a under C2 uses the step-0 luck share of every run."""
    return [f"{RESULTS}/diagnostics/{run}/luck-step0.json" for run in decision_runs(wildcards)]


def reference_eval_files(wildcards):
    """The clean-trained reference (C0) for the descriptive comparisons."""
    return [f for run in runs_of("C0") for f in eval_files(run)]


def reference_eval_dirs(wildcards):
    """A list (each element quoted by `:q`); one empty argument when the scale has no C0 run."""
    return [f"{RESULTS}/evals/{run}" for run in runs_of("C0")] or [""]


def tier_comparison(wildcards):
    return DESIGN.comparison(wildcards.comparison)


def tier_runs(wildcards):
    return [run.name for run in tier_comparison(wildcards).runs()]


def tier_condition(wildcards):
    return tier_comparison(wildcards).condition


def tier_arms(wildcards):
    comparison = tier_comparison(wildcards)
    return [comparison.treatment, comparison.control]


def tier_scaling(wildcards):
    return tier_comparison(wildcards).scaling


def tier_seeds(wildcards):
    return [str(seed) for seed in tier_comparison(wildcards).seeds]


def tier_eval_files(wildcards):
    return [f for run in tier_runs(wildcards) for f in eval_files(run)]


def tier_eval_dirs(wildcards):
    return [f"{RESULTS}/evals/{run}" for run in tier_runs(wildcards)]


def tier_group_files(wildcards):
    return [f"{RESULTS}/runs/{run}/groups.jsonl" for run in tier_runs(wildcards)]


def tier_complete_files(wildcards):
    return [f"{RESULTS}/runs/{run}/complete.json" for run in tier_runs(wildcards)]


def tier_luck_files(wildcards):
    return [f"{RESULTS}/diagnostics/{run}/luck-step0.json" for run in tier_runs(wildcards)]


def tier_decision_files():
    return [f"{RESULTS}/decisions/tiers/{name}.json" for name in TIER_COMPARISONS]


# ---------------------------------------------------------------- probe -----------------------------

TRAJECTORIES = sorted(SCALE["probe"]["trajectories"])


def check_design():
    """Config consistency that the schema cannot express, checked before any job runs (dry runs fail)."""
    last = training_steps()
    for name, steps in SCALE["diagnostics"]["steps"].items():
        beyond = [s for s in steps if s > last]
        if beyond:
            raise WorkflowError(
                f"config/config.yaml scales.{SCALE_NAME}.diagnostics.steps.{name} has steps {beyond} beyond "
                f"the last training step {last}; remove them or train longer"
            )
    for name, trajectory in SCALE["probe"]["trajectories"].items():
        where = f"config/config.yaml scales.{SCALE_NAME}.probe.trajectories.{name}"
        if trajectory["run"] not in RUNS:
            raise WorkflowError(
                f"{where}: run {trajectory['run']!r} is not in the seed matrix ({', '.join(RUNS)}); "
                "a probe may only study a run of the design"
            )
        beyond = [s for s in trajectory["steps"] if s > last]
        if beyond:
            raise WorkflowError(f"{where}: steps {beyond} beyond the last training step {last}")


check_design()


def trajectory_of(wildcards):
    try:
        return SCALE["probe"]["trajectories"][wildcards.trajectory]
    except KeyError:
        raise WorkflowError(
            f"unknown probe trajectory {wildcards.trajectory!r}; config/config.yaml scales.{SCALE_NAME}."
            f"probe.trajectories defines {TRAJECTORIES}"
        )


def probe_run_dir(wildcards):
    return f"{RESULTS}/runs/{trajectory_of(wildcards)['run']}"


def probe_run_manifest(wildcards):
    return f"{probe_run_dir(wildcards)}/manifest.json"


def probe_steps(wildcards):
    return [str(s) for s in trajectory_of(wildcards)["steps"]]


def probe_run(wildcards):
    return trajectory_of(wildcards)["run"]


def probe_checkpoint_files(wildcards):
    """One file per checkpoint of the trajectory (each its own job)."""
    t = wildcards.trajectory
    return [f"{RESULTS}/probe/{t}/step{s}.json" for s in trajectory_of(wildcards)["steps"]]


# ---------------------------------------------------------------- rendering -------------------------


def git_commit():
    """The commit the pipeline runs from (shown on the PDF's title page)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out + ("-dirty" if dirty else "")


def all_eval_files():
    return [f for run in RUNS for f in eval_files(run)]


def run_manifests():
    return [f"{RESULTS}/runs/{run}/manifest.json" for run in RUNS]


def decision_files():
    return [f"{RESULTS}/decisions/{c}.json" for c in DECISION_CONDITIONS]


def probe_files():
    return [f"{RESULTS}/probe/{t}.json" for t in TRAJECTORIES]


def all_luck_files():
    return [f for run in RUNS for f in luck_files(run)]


def bandit_file():
    return f"{RESULTS}/probe/bandit.json"


def comparison_inputs():
    """Every register a published number may name (docs/compare.md): the compare job reruns when one changes."""
    return (
        decision_files()
        + probe_files()
        + [bandit_file()]
        + all_luck_files()
        + group_stat_files()
        + [f"{RESULTS}/reference/scripted_reference.json"]
    )


def benchmark_files():
    """The benchmark file of every job that runs before the document (the ledger's inputs)."""
    bench = res("benchmarks")
    files = [
        f"{bench}/reference.tsv",
        f"{bench}/prereg_verify.tsv",
        f"{RESULTS}/benchmarks/probe/bandit.tsv",
        f"{RESULTS}/benchmarks/compare.tsv",
    ]
    if ACCELERATOR == "cpu":
        files.append(f"{bench}/prereg_freeze_local.tsv")
    files += amendment_benchmark_files()  # amendments and the calibration gate (end of this file)
    if SCALE["model"]["kind"] == "standin":
        files += [f"{bench}/tokenizer.tsv", f"{bench}/warm_start.tsv"]
    if SURROGATE:
        # One job trains, evaluates and diagnoses a chunk of an arm's seeds; one runs their statistics.
        files.append(f"{bench}/surrogate/calibrate.tsv")
        files += [
            f"{bench}/surrogate/{kind}-{job}.tsv"
            for job in surrogate_jobs("study")
            for kind in ("arm", "stats")
        ]
    # Run registers: one job per chunk of an arm's seeds at surrogate scales (rules/register.smk), else per run.
    files += [f"{bench}/run_register/{name}.tsv" for name in (surrogate_jobs("study") if SURROGATE else RUNS)]
    files += [f"{bench}/curves_register/{c}.tsv" for c in CURVE_CONDITIONS]
    for run in [] if SURROGATE else RUNS:
        files += [f"{bench}/{stage}/{run}.tsv" for stage in ("train", "group_stats", "completeness")]
        # One evaluation job per (run, checkpoint) rolls out every regime of that checkpoint.
        files += [f"{bench}/evaluate/{run}/periodic-step{step}.tsv" for step in periodic_steps()]
        files.append(f"{bench}/evaluate/{run}/final-step{final_step()}.tsv")
        files += [
            f"{bench}/{stage}/{run}/step{step}.tsv"
            for stage in ("diagnose", "luck_share")
            for step in diagnostic_steps(run)
        ]
    files += [f"{bench}/decide/{c}.tsv" for c in DECISION_CONDITIONS]
    files.append(f"{bench}/decide/predictions.tsv")  # the tier-1 predictions register (table 6)
    files += [f"{bench}/probe/{t}.tsv" for t in TRAJECTORIES]
    if not SURROGATE:
        # One probe job per checkpoint, then the trajectory's assembly (above) and its verdict.
        files += [
            f"{bench}/probe/{t}/step{s}.tsv"
            for t in TRAJECTORIES
            for s in SCALE["probe"]["trajectories"][t]["steps"]
        ]
        files += [f"{bench}/probe_verdict/{t}.tsv" for t in TRAJECTORIES]
    # TABLES and FIGURES (rules/render.smk) are what this scale renders.
    files += [f"{bench}/render/table{n}.tsv" for n in TABLES]
    files += [f"{bench}/render/{name}.tsv" for name in FIGURES]
    return files


def benchmark_root(wildcards, output):
    return str(Path(output[0]).parent / "benchmarks")


def manifest_folder(wildcards, input):
    return str(Path(input.manifest).parent)


def group_stat_files():
    return [f"{RESULTS}/runs/{run}/group_stats.json" for run in RUNS]


def decision_rules_file():
    return [config["decision_rules"]]


def published_file():
    return [config["published"]]


def comparison_file():
    return f"{RESULTS}/comparison.json"


def c2_decision():
    return [res("decisions/c2.json")]


def c4_decision():
    return [res("decisions/c4.json")]


# The curves registers (rules/register.smk): one per condition of tier 1, from its runs' registers.
CURVE_CONDITIONS = sorted({parse_run(run).condition.lower() for run in RUNS})


def curves_files():
    return [res(f"curves/{c}.json") for c in CURVE_CONDITIONS]


def condition_registers(wildcards):
    return [res(f"runs/{run}/register.json") for run in runs_of(wildcards.curves.upper())]


# The files behind each render input key. The render registry (paired_rollouts.render: TABLES, FIGURES)
# names the keys each table and figure reads; one that reads other files under a key says so below
# (None: the workflow does not give that optional key).
RENDER_KEY_FILES = {
    "manifests": run_manifests,
    "decisions": decision_files,
    "probe": probe_files,
    "rules": decision_rules_file,
    "published": published_file,
    "curves": curves_files,
    "group_stats": group_stat_files,
    "luck": all_luck_files,
    "power": lambda: [POWER_FILE],
    "calibration": lambda: [CALIBRATION_FILE],
    "published_curves": lambda: [PUBLISHED_CURVES],
    "registers": lambda: [res(f"runs/{run}/register.json") for run in RUNS],
}
RENDER_KEY_OVERRIDES = {
    3: {"decisions": c2_decision},
    4: {"decisions": c4_decision},
    6: {"predictions": lambda: [res("decisions/predictions.json")]},
    7: {"decisions": c2_decision},
    # the per-step curves of the first C2 seed pair
    9: {
        "registers": lambda: [
            res(f"runs/{study.RunId('C2', arm, SCALE['seeds']['C2'][0]).name}/register.json")
            for arm in ("paired", "independent")
        ]
    },
    15: {"predictions": lambda: [res("decisions/tiers/predictions.json")]},
    16: {"decisions": lambda: decision_files() + tier_decision_files()},
    "dose_response": {"decisions": lambda: decision_files() + tier_decision_files()},
}


def render_sources(name):
    """{key: files function} of table NUMBER or figure NAME, in the registry's key order."""
    from paired_rollouts.render.figures import FIGURES as FIGURE_SPECS
    from paired_rollouts.render.tables import TABLES as TABLE_SPECS

    spec = TABLE_SPECS[name] if isinstance(name, int) else FIGURE_SPECS[name]
    overrides = RENDER_KEY_OVERRIDES.get(name, {})
    sources = {}
    for key in spec.keys:
        make = overrides[key] if key in overrides else RENDER_KEY_FILES.get(key)
        if make is None and key not in overrides:
            raise WorkflowError(f"render input {key!r} of {name!r} has no files: add it to RENDER_KEY_FILES")
        if make is not None:
            sources[key] = make
    return sources


def _inputs(sources_by_key):
    return {key: make() for key, make in sources_by_key.items()}


def _input_args(sources_by_key):
    """`--input KEY=PATH` pairs as separate arguments, each quoted by `:q` in the rule."""
    return [
        arg for key, make in sources_by_key.items() for path in make() for arg in ("--input", f"{key}={path}")
    ]


def table_inputs(wildcards):
    return _inputs(render_sources(int(wildcards.number)))


def table_input_args(wildcards):
    return _input_args(render_sources(int(wildcards.number)))


def figure_inputs(wildcards):
    return _inputs(render_sources(wildcards.figure))


def figure_input_args(wildcards):
    return _input_args(render_sources(wildcards.figure))


# ---------------------------------------------------------------- params helpers --------------------
# Functions rather than literals: paths are derived from a job's own inputs and outputs, so a rule's
# provenance is complete (and `snakemake --lint` is satisfied).


def tasks_dir_of(wildcards, input):
    return str(Path(input.pools[0]).parent)


def results_root(wildcards):
    """This scale's results root (a function, so lint does not take it for a hard-coded output prefix)."""
    return RESULTS


def output_folder(wildcards, output):
    return str(Path(output[0]).parent)


def freeze_folder(wildcards, input):
    return str(Path(input.freeze).parent)


def tokenizer_folder(wildcards, input):
    return str(Path(input.tokenizer).parent)


def eval_out_template(wildcards, output):
    """`--out` of a multi-regime evaluation: the job's first output with its regime as `{regime}`."""
    first = Path(output[0])
    phase_step = first.name.rsplit("-", 1)[0]
    return str(first.parent / f"{phase_step}-{{regime}}.jsonl")


def model_dir_param(wildcards):
    return model_dir()


def public_freeze_missing_message(wildcards, output):
    """What to run on a machine with internet when the public freeze is missing (printed, never run)."""
    import shlex

    folder = str(Path(output[0]).parent)
    command = [
        "paired-rollouts",
        "prereg",
        "freeze",
        "--out",
        folder,
        "--documents",
        *config["prereg"]["documents"],
    ]
    for name, url in config["prereg"]["tsas"].items():
        command += ["--tsa", f"{name}={url}"]
    return (
        f"{output[0]} is missing. GPU profiles only run a protocol frozen against public time-stamp "
        f"authorities. On a machine with internet run: {shlex.join(command)} ; then commit {folder} "
        "(README: Verifying the pre-registration)."
    )


def software_env():
    """The pinned environment of the accelerator's stack; the profile decides whether it is deployed."""
    # mi300x: the pins on record; never deployed (conda is refused above: the ROCm container has vLLM).
    return {"cpu": "../envs/cpu.yaml", "h100": "../envs/cuda.yaml", "mi300x": "../envs/rocm.yaml"}[
        ACCELERATOR
    ]


# ---------------------------------------------------------------- surrogate scales ------------------
# `model.kind: surrogate` replaces the model, training, evaluation, diagnostic and probe rules by
# rules/surrogate.smk (one job per chunk of an arm's seeds); decisions and rendering are unchanged.

SURROGATE_SEEDS_PER_JOB = 8


def surrogate_jobs(tier="all"):
    """{job name: runs}: each cell's arm in chunks of SURROGATE_SEEDS_PER_JOB seeds (c2-paired-j0, ...)."""
    jobs = {}
    for cell in DESIGN.cells_of(tier):
        seeds = list(cell.seeds)
        for arm in cell.arms:
            stem = study.RunId(cell.condition, arm, 0, cell.scaling).name.rsplit("-s", 1)[0]
            chunks = [
                seeds[i : i + SURROGATE_SEEDS_PER_JOB] for i in range(0, len(seeds), SURROGATE_SEEDS_PER_JOB)
            ]
            for index, chunk in enumerate(chunks):
                runs = [study.RunId(cell.condition, arm, seed, cell.scaling).name for seed in chunk]
                jobs[f"{stem}-j{index}"] = runs
    return jobs


def calibration_settings():
    """The calibration always estimates on the paper's step-0 sets (64 validation tasks, the 16-task
    diagnostic pool with 8 x 8), whatever the run shape: the targets are defined there."""
    return as_json(
        {
            "eval_tasks": 64,
            "samples": SCALE["surrogate"]["calibration_samples"],
            "diag_pool": "diagnostic",
            "diag_tasks": 16,
            "diag_schedules": 8,
            "diag_samples": 8,
            "task_filter": "all",
        }
    )


def surrogate_run_settings():
    training = SCALE["training"]
    every = training["checkpoint_every"]
    settings = {
        key: training[key]
        for key in ("steps", "prompts_per_step", "num_generations", "checkpoint_every", "learning_rate")
    }
    settings.update(SCALE["evaluation"])
    settings.update(
        {f"diag_{key}": SCALE["diagnostics"][key] for key in ("pool", "tasks", "schedules", "samples")}
    )
    settings.update(
        task_filter=SCALE["task_filter"],
        diagnostic_steps=SCALE["diagnostics"]["steps"],
        train_episodes_seeds=SCALE["surrogate"]["train_episodes_seeds"],
        extra_checkpoint_steps=[s for s in checkpoint_steps() if s > 0 and s % every],
    )
    return as_json(settings)


def surrogate_outputs(runs):
    out = []
    for run in runs:
        out.extend([res(f"runs/{run}/groups.jsonl"), res(f"runs/{run}/manifest.json")])
        out.extend(eval_files(run))
        out.extend(diagnostic_episode_files(run))
    return out


def surrogate_stats_outputs(runs):
    out = []
    for run in runs:
        out.extend(luck_files(run))
        out.extend([res(f"runs/{run}/group_stats.json"), res(f"runs/{run}/complete.json")])
    return out


def results_root_of(wildcards, output):
    """The results root from a job's first output (RESULTS/runs/RUN/... or RESULTS/diagnostics/RUN/...)."""
    return str(Path(output[0]).parents[2])


def pool_manifest_dir_of(wildcards, input):
    return str(Path(input.pool_manifest).parent)


def surrogate_probe_settings(wildcards):
    settings = {
        f"probe_{key}": SCALE["probe"][source]
        for key, source in (
            ("clean_tasks", "clean_tasks"),
            ("clean_rollouts", "clean_rollouts"),
            ("diag_tasks", "diagnostic_tasks"),
            ("schedules", "schedules"),
            ("samples", "samples"),
            ("resamples", "resamples"),
        )
    }
    settings.update(
        task_filter=SCALE["task_filter"],
        diag_pool=SCALE["diagnostics"]["pool"],
        prompts_per_step=SCALE["training"]["prompts_per_step"],
        num_generations=SCALE["training"]["num_generations"],
    )
    return as_json(settings)


# ---------------------------------------------------------------- amendments and calibration gate ---
# The freeze's amendments (config prereg.amendments; rules/prereg.smk) and the zero-shot calibration
# register (rules/calibrate.smk). Tier-1 jobs depend on verification_file() only; the calibration gate
# (and through it training) and tier jobs on amendment_verification_file().

AMENDMENTS = config["prereg"]["amendments"]


def amendment_numbers():
    return [f"{i:03d}" for i in range(1, len(AMENDMENTS) + 1)]


def amendment_records():
    return [f"{freeze_dir()}/amendments/{n}/amendment.json" for n in amendment_numbers()]


def amendment_verification_file():
    return res("prereg/amendment_verification.json")


def all_protocol_documents():
    """The freeze's documents and every amendment's, in order, once each (what the last record covers)."""
    docs = list(config["prereg"]["documents"])
    for amendment in AMENDMENTS:
        docs += amendment["documents"]
    return list(dict.fromkeys(docs))


def _amendment_index(wildcards):
    index = int(wildcards.number)
    if not 1 <= index <= len(AMENDMENTS):
        raise WorkflowError(
            f"amendment {wildcards.number} is not configured: config/config.yaml prereg.amendments lists "
            f"{len(AMENDMENTS)}; add it there (documents, reason)"
        )
    return index


def amendment_documents(wildcards):
    """Amendment N covers the freeze's documents plus those of amendments 1..N."""
    docs = list(config["prereg"]["documents"])
    for amendment in AMENDMENTS[: _amendment_index(wildcards)]:
        docs += amendment["documents"]
    return list(dict.fromkeys(docs))


def amendment_documents_ancient(wildcards):
    return [ancient(doc) for doc in amendment_documents(wildcards)]


def previous_record(wildcards):
    index = _amendment_index(wildcards)
    if index == 1:
        return f"{freeze_dir()}/freeze.json"
    return f"{freeze_dir()}/amendments/{index - 1:03d}/amendment.json"


def amendment_reason(wildcards):
    return AMENDMENTS[_amendment_index(wildcards) - 1]["reason"]


def amendment_freeze_folder(wildcards, output):
    """RESULTS/.../freeze from .../freeze/amendments/NNN/amendment.json."""
    return str(Path(output[0]).parents[2])


def public_amendment_missing_message(wildcards, output):
    """What to run on a machine with internet when a configured public amendment is missing."""
    import shlex

    folder = str(Path(output[0]).parents[2])
    command = [
        "paired-rollouts",
        "prereg",
        "amend",
        "--out",
        folder,
        "--reason",
        amendment_reason(wildcards),
        "--documents",
        *amendment_documents(wildcards),
    ]
    return (
        f"{output[0]} is missing. GPU profiles only run tiers and the calibration gate under an amendment "
        f"time-stamped by public authorities. After committing the documents, on a machine with internet run: "
        f"{shlex.join(command)} ; then commit {folder}/amendments (docs/prereg.md#amendments)."
    )


def zero_shot_file():
    return res("calibration/zero_shot.json")


def calibration_model():
    """The model name the calibration register's bands are looked up under (none registered: not applicable)."""
    kind = SCALE["model"]["kind"]
    if kind == "hub":
        return SCALE["model"]["name_or_path"]
    if kind == "surrogate":
        return config["prereg"]["surrogate_calibration_model"]
    return f"stand-in ({SCALE_NAME})"


def zero_shot_settings():
    """The step-0 sets the runs start from: the periodic clean validation set and the diagnostic roll-outs."""
    return stage_settings("stack", "training", "evaluation", "diagnostics")


def amendment_benchmark_files():
    """The benchmark files of the amendment, amendment-verification and zero-shot calibration jobs."""
    bench = res("benchmarks")
    files = [f"{bench}/prereg_verify_amendments.tsv", f"{bench}/zero_shot_calibration.tsv"]
    if ACCELERATOR == "cpu":
        files += [f"{bench}/prereg_amend_local/{n}.tsv" for n in amendment_numbers()]
    return files
