# Config look-ups and input functions. The results layout (every path, the step sets, the surrogate's
# job chunks) is paired_rollouts.layout, the run matrix paired_rollouts.design, each stage's settings
# paired_rollouts.settings: the rules only look them up here. Code inputs (`sources`) make a code edit
# rerun exactly the stages that run that code.

import json
from pathlib import Path

from paired_rollouts import design as study
from paired_rollouts import layout
from paired_rollouts import settings as settings_of_scale

SCALE_NAME = config["scale"]
ACCELERATOR = config["accelerator"]
TASKS_DIR = config["tasks_dir"]
try:
    # the scale block (with `study:` merged under it), its design and results layout, checked before any
    # job runs: one clear line naming config/config.yaml and the fix, and a dry run fails
    LAYOUT = layout.Layout.from_config(config, SCALE_NAME, ACCELERATOR)
    LAYOUT.check()
    layout.require_paper_pools(TASKS_DIR, ACCELERATOR)
except UserError as error:
    raise WorkflowError(str(error)) from None
SCALE = LAYOUT.scale
DESIGN = LAYOUT.design
RESULTS = LAYOUT.root
res = LAYOUT.res
SURROGATE = SCALE["model"]["kind"] == "surrogate"
CALIBRATION_FILE = res("models/surrogate/calibration.json")
STEP0_FILE = res("models/surrogate/step0.json")  # the calibration before any run (rules/surrogate.smk)
POWER_FILE = res("decisions/power.json")
PUBLISHED_CURVES = "data/published/curves.yaml"
POOLS = list(study.POOLS)
PERIODIC_REGIMES = list(study.PERIODIC_REGIMES)
FINAL_REGIMES = list(study.FINAL_REGIMES)
CONDITIONS_JSON = DESIGN.to_json()
# Tier 1 (target `all`), the registered later tiers (target `tiers`), and both.
RUNS = LAYOUT.runs("study")
TIER_RUNS = LAYOUT.runs("tiers")
ALL_RUNS = LAYOUT.runs("all")
TIER_COMPARISONS = LAYOUT.tier_comparisons()
DECISION_CONDITIONS = LAYOUT.decision_conditions()
TRAJECTORIES = sorted(LAYOUT.trajectories)
RUN_PATTERN = "|".join(sorted(ALL_RUNS, key=len, reverse=True)) or "none"
# Conditions whose final evaluation adds the at-training set (study.Condition.needs_at_training_final).
OWN_FINAL_RUNS = [r for r in ALL_RUNS if "at_training" in LAYOUT.final_regimes(r)]
STANDARD_FINAL_RUNS = [r for r in ALL_RUNS if r not in OWN_FINAL_RUNS]
PACKAGE = Path("workflow_src/paired_rollouts")


# Package modules a sub-package's commands read beyond its own files: settings parsed, paths looked up.
SHARED_MODULES = {
    "training": ["settings.py"],
    "surrogate": ["settings.py", "layout.py", "records.py"],
    "stats": ["layout.py", "records.py"],
    "render": ["records.py"],
    "calibration": ["records.py"],
    "compare": ["records.py"],
}


def sources(*modules):
    """The package files a stage executes: whole sub-packages ('noise') or single modules ('episode.py')."""
    files = [PACKAGE / "io.py", PACKAGE / "errors.py", PACKAGE / "cli.py"]
    for module in modules:
        path = PACKAGE / module
        files.extend(sorted([*path.rglob("*.py"), *path.rglob("*.c")]) if path.is_dir() else [path])
        files.extend(PACKAGE / shared for shared in SHARED_MODULES.get(module.split("/")[0], []))
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


def verification_file():
    return LAYOUT.verification_file()


STANDIN_ROOT = res(f"models/{SCALE_NAME}")


def model_dir():
    """The warm-started stand-in or the prepared text-only snapshot of the real model (rule prepare_model)."""
    return f"{STANDIN_ROOT}/{'model' if SCALE['model']['kind'] == 'standin' else 'prepared'}"


def model_inputs():
    """Both kinds are built by rules: the stand-in from scratch, the real model prepared from its snapshot."""
    return [f"{model_dir()}/config.json"]


# ---------------------------------------------------------------- settings --------------------------


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
    given = settings_of_scale.stage_settings(config, SCALE_NAME, ACCELERATOR, *sections, **overrides)
    return json.dumps(given, sort_keys=True, separators=(",", ":"))


def run_settings(wildcards):
    """One run: the training section, plus the checkpoints other stages need and the run's reward scaling."""
    training = {"extra_checkpoint_steps": LAYOUT.extra_checkpoint_steps()}
    scaling = DESIGN.run(wildcards.run).scaling
    if scaling != study.DEFAULT_SCALING:
        training["scale_rewards"] = scaling  # the H4 tier: TRL's scale_rewards from the run name
    return stage_settings("stack", "training", training=training)


def probe_settings(wildcards):
    return stage_settings("stack", "training", "evaluation", "diagnostics", "probe")


def completeness_scale():
    """What the completeness check derives a run's expected evidence from (with the run's name)."""
    sections = ("task_filter", "training", "evaluation", "diagnostics")
    return json.dumps({key: SCALE[key] for key in sections}, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------- per-run input functions -----------


def checkpoint_dir(wildcards):
    return LAYOUT.checkpoint_dir(wildcards.run, wildcards.step)


def eval_files_of(wildcards):
    return LAYOUT.eval_files(wildcards.run)


def diagnostic_episode_files_of(wildcards):
    return LAYOUT.diagnostic_episode_files(wildcards.run)


def luck_files_of(wildcards):
    return LAYOUT.luck_files(wildcards.run)


def of_runs(runs, *paths):
    """The `paths` (LAYOUT methods of a run) of every run in `runs`, run by run."""
    files = []
    for run in runs:
        for path in paths:
            found = path(run)
            files += [found] if isinstance(found, str) else found
    return files


# ---------------------------------------------------------------- decisions -------------------------
# A decision job reads the records of its condition's runs (tier 1) or its comparison's runs (tiers).


def files_of_runs(runs_of, *paths):
    """An input function: the LAYOUT `paths` of the runs `runs_of(wildcards)` names, run by run."""

    def files(wildcards):
        return of_runs(runs_of(wildcards), *paths)

    return files


def upper_condition(wildcards):
    return wildcards.condition.upper()


def decision_runs(wildcards):
    return LAYOUT.runs_of(wildcards.condition.upper())


def decision_seeds(wildcards):
    """The design's seeds: a hypothesis is decided only when every one of their pairs is admitted."""
    return [str(seed) for seed in SCALE["seeds"][wildcards.condition.upper()]]


def reference_runs(wildcards):
    """The clean-trained reference (C0) for the descriptive comparisons."""
    return LAYOUT.runs_of("C0")


def reference_eval_dirs(wildcards):
    """A list (each element quoted by `:q`); one empty argument when the scale has no C0 run."""
    return of_runs(reference_runs(wildcards), LAYOUT.eval_dir) or [""]


def tier_comparison(wildcards):
    return DESIGN.comparison(wildcards.comparison)


def tier_runs(wildcards):
    return [run.name for run in tier_comparison(wildcards).runs()]


def tier_condition(wildcards):
    return tier_comparison(wildcards).condition


def tier_scaling(wildcards):
    return tier_comparison(wildcards).scaling


def tier_arms(wildcards):
    return [tier_comparison(wildcards).treatment, tier_comparison(wildcards).control]


def tier_seeds(wildcards):
    return [str(seed) for seed in tier_comparison(wildcards).seeds]


def tier_decision_files():
    return LAYOUT.tier_decision_files()


# ---------------------------------------------------------------- probe -----------------------------


def probe_run(wildcards):
    return LAYOUT.trajectory(wildcards.trajectory)["run"]


def probe_run_dir(wildcards):
    return LAYOUT.run_dir(probe_run(wildcards))


def probe_run_manifest(wildcards):
    return LAYOUT.manifest(probe_run(wildcards))


def probe_steps(wildcards):
    return [str(s) for s in LAYOUT.trajectory(wildcards.trajectory)["steps"]]


def probe_checkpoint_files(wildcards):
    return LAYOUT.probe_checkpoint_files(wildcards.trajectory)


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
    return of_runs(RUNS, LAYOUT.eval_files)


def run_manifests():
    return of_runs(RUNS, LAYOUT.manifest)


def decision_files():
    return LAYOUT.decision_files()


def probe_files():
    return LAYOUT.probe_files()


def all_luck_files():
    return of_runs(RUNS, LAYOUT.luck_files)


def group_stat_files():
    return of_runs(RUNS, LAYOUT.group_stats)


def bandit_file():
    return res("probe/bandit.json")


def comparison_inputs():
    """Every register a published number may name (docs/compare.md): the compare job reruns when one changes."""
    scripted = res("reference/scripted_reference.json")
    return (
        decision_files()
        + probe_files()
        + [bandit_file()]
        + all_luck_files()
        + group_stat_files()
        + [scripted]
    )


def benchmark_files():
    """The benchmark file of every job that runs before the document (the ledger's inputs); TABLES and
    FIGURES (rules/render.smk) are what this scale renders."""
    return LAYOUT.benchmark_files(TABLES, FIGURES)


def benchmark_root(wildcards, output):
    return str(Path(output[0]).parent / "benchmarks")


def manifest_folder(wildcards, input):
    return str(Path(input.manifest).parent)


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
CURVE_CONDITIONS = LAYOUT.curve_conditions()


def curves_files():
    return [LAYOUT.curves(c) for c in CURVE_CONDITIONS]


def condition_registers(wildcards):
    return [LAYOUT.register(run) for run in LAYOUT.runs_of(wildcards.curves.upper())]


def condition_group_stats(wildcards):
    return [LAYOUT.group_stats(run) for run in LAYOUT.runs_of(wildcards.curves.upper())]


# Table 8 shows the C4 means minus the C0 and C2 ones: the C4 curves register takes theirs.
CURVES_COMPARED = {"c4": ["c0", "c2"]}


def condition_compared(wildcards):
    return [LAYOUT.curves(c) for c in CURVES_COMPARED.get(wildcards.curves, []) if c in CURVE_CONDITIONS]


def compare_args(wildcards, input):
    return ["--compare", *input.compare] if input.compare else []


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
    "cross_stack": lambda: [LAYOUT.cross_stack()],
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
        ],
        "curves": lambda: [LAYOUT.curves("c2")],  # the pair's differences
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
    command = ["paired-rollouts", "prereg", "freeze", "--out", folder, "--documents"]
    command += config["prereg"]["documents"]
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
    envs = {"cpu": "../envs/cpu.yaml", "h100": "../envs/cuda.yaml", "mi300x": "../envs/rocm.yaml"}
    return envs[ACCELERATOR]


# ---------------------------------------------------------------- surrogate scales ------------------
# `model.kind: surrogate` replaces the model, training, evaluation, diagnostic and probe rules by
# rules/surrogate.smk (one job per chunk of an arm's seeds, LAYOUT.surrogate_jobs); decisions and
# rendering are unchanged. Its commands get their sections as written, like the LLM stages.


def surrogate_run_settings():
    """An arm job trains, evaluates and diagnoses: it also needs the diagnostic steps and extra checkpoints."""
    return stage_settings(
        "training",
        "evaluation",
        "diagnostics",
        "surrogate",
        training={"extra_checkpoint_steps": LAYOUT.extra_checkpoint_steps()},
        diagnostics={"steps": SCALE["diagnostics"]["steps"]},
    )


def results_root_of(wildcards, output):
    """The results root from a job's first output (RESULTS/runs/RUN/... or RESULTS/diagnostics/RUN/...)."""
    return str(Path(output[0]).parents[2])


def pool_manifest_dir_of(wildcards, input):
    return str(Path(input.pool_manifest).parent)


# ---------------------------------------------------------------- amendments and calibration gate ---
# The freeze's amendments (config prereg.amendments; rules/prereg.smk) and the zero-shot calibration
# register (rules/calibrate.smk). Tier-1 jobs depend on verification_file() only; the calibration gate
# (and through it training) and tier jobs on LAYOUT.amendment_verification_file().


def _amendment_index(wildcards):
    try:
        return LAYOUT.amendment_index(wildcards.number)
    except UserError as error:
        raise WorkflowError(str(error)) from None


def amendment_documents(wildcards):
    """Amendment N covers the freeze's documents plus those of amendments 1..N."""
    return LAYOUT.amendment_documents(_amendment_index(wildcards))


def amendment_documents_ancient(wildcards):
    return [ancient(doc) for doc in amendment_documents(wildcards)]


def previous_record(wildcards):
    return LAYOUT.previous_record(_amendment_index(wildcards))


def amendment_reason(wildcards):
    return LAYOUT.amendments[_amendment_index(wildcards) - 1]["reason"]


def amendment_freeze_folder(wildcards, output):
    """RESULTS/.../freeze from .../freeze/amendments/NNN/amendment.json."""
    return str(Path(output[0]).parents[2])


def public_amendment_missing_message(wildcards, output):
    """What to run on a machine with internet when a configured public amendment is missing."""
    import shlex

    folder = str(Path(output[0]).parents[2])
    command = ["paired-rollouts", "prereg", "amend", "--out", folder, "--reason", amendment_reason(wildcards)]
    command += ["--documents", *amendment_documents(wildcards)]
    return (
        f"{output[0]} is missing. GPU profiles only run tiers and the calibration gate under an amendment "
        f"time-stamped by public authorities. After committing the documents, on a machine with internet run: "
        f"{shlex.join(command)} ; then commit {folder}/amendments (docs/prereg.md#amendments)."
    )


def calibration_model():
    """The model name the calibration register's bands are looked up under (none registered: not applicable)."""
    kind = SCALE["model"]["kind"]
    if kind == "hub":
        return SCALE["model"]["name_or_path"]
    if kind == "surrogate":
        return config["prereg"]["surrogate_calibration_model"]
    return f"stand-in ({SCALE_NAME})"
