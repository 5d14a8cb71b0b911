# Config look-ups and input functions. Every path the package or several rules read, and every job's log
# and benchmark, is a method of LAYOUT (paired_rollouts.layout); the run matrix is DESIGN (.design), each
# stage's settings come from paired_rollouts.settings: rules call them directly. Code inputs (`sources`)
# make a code edit rerun exactly the stages that run that code.

import json
from pathlib import Path

from paired_rollouts import design as study
from paired_rollouts import layout
from paired_rollouts import settings as settings_of_scale
from paired_rollouts.prereg import commands as prereg_commands

SCALE_NAME = config["scale"]
ACCELERATOR = config["accelerator"]
try:
    # the scale block (with `study:` merged under it), its design and results layout, checked before any
    # job runs: one clear line naming the config files and the fix, and a dry run fails
    LAYOUT = layout.Layout.from_config(config, SCALE_NAME, ACCELERATOR, CONFIG_SOURCE)
    LAYOUT.check()
    layout.require_paper_pools(LAYOUT.tasks_dir, ACCELERATOR)
except UserError as error:
    raise WorkflowError(str(error)) from None
SCALE = LAYOUT.scale
DESIGN = LAYOUT.design
res = LAYOUT.res
SURROGATE = SCALE["model"]["kind"] == "surrogate"
CONDITIONS_JSON = DESIGN.to_json()
RUNS = LAYOUT.runs("study")  # tier 1 (target `all`); the registered tiers' are LAYOUT.runs("tiers")
PACKAGE = Path("workflow_src/paired_rollouts")
# The benchmark of every tier-1 job before the document (the cost ledger's inputs): each stage adds its
# rules' jobs beside them (the committed task pools, the tiers, the ledger and the document are not counted).
LEDGER = []


# Package modules a sub-package's commands read beyond its own files: settings, paths, records, pairing.
SHARED_MODULES = {
    "training": ["settings.py", "settings_fields.py"],
    "surrogate": ["settings.py", "settings_fields.py", "layout.py", "records", "pairing/numeric.py"],
    "stats": ["settings.py", "settings_fields.py", "layout.py", "records", "pairing", "noise/seeds.py"],
    "probe": ["settings.py", "settings_fields.py", "records", "pairing", "noise/seeds.py"],
    "render": ["records"],
    "calibration": ["records"],
    "compare": ["layout.py", "records"],
}


def sources(*modules):
    """The package files a stage executes: whole sub-packages ('noise', 'records') or single modules
    ('episode.py'), with the shared ones each reads."""
    files = [PACKAGE / "io.py", PACKAGE / "errors.py", PACKAGE / "cli.py"]
    for module in modules:
        for name in (module, *SHARED_MODULES.get(module.split("/")[0], [])):
            path = PACKAGE / name
            files.extend(sorted([*path.rglob("*.py"), *path.rglob("*.[ch]")]) if path.is_dir() else [path])
    return [str(f) for f in dict.fromkeys(files)]


SIMULATOR = ("backoffice", "noise", "pairing", "episode.py")  # noise draws through pairing.Dice
# Templates are code too, but each job depends only on the templates it renders.
RENDER_SOURCES = sources("render")
TEMPLATES = PACKAGE / "render" / "templates"


def table_templates(wildcards):
    return [str(TEMPLATES / "table_base.tex.j2"), str(TEMPLATES / f"table{int(wildcards.number)}.tex.j2")]


# ---------------------------------------------------------------- settings --------------------------


def software_env():
    """The pinned environment of the accelerator's stack; the profile decides whether it is deployed."""
    # mi300x: the pins on record; never deployed (the Snakefile refuses conda: the ROCm container has vLLM).
    envs = {"cpu": "../envs/cpu.yaml", "h100": "../envs/cuda.yaml", "mi300x": "../envs/rocm.yaml"}
    return envs[ACCELERATOR]


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


def completeness_settings():
    """What the completeness check derives a run's expected evidence from (with the run's name): the
    training, evaluation and diagnostics sections, with the diagnosed steps."""
    return stage_settings(
        "training", "evaluation", "diagnostics", diagnostics={"steps": SCALE["diagnostics"]["steps"]}
    )


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


def calibration_model():
    """The model name the calibration register's bands are looked up under (none registered: not applicable)."""
    kind = SCALE["model"]["kind"]
    if kind == "hub":
        return SCALE["model"]["name_or_path"]
    if kind == "surrogate":
        return config["prereg"]["surrogate_calibration_model"]
    return f"stand-in ({SCALE_NAME})"


# ---------------------------------------------------------------- input functions -------------------
# Each builds a function of the job's wildcards from a LAYOUT method; a function (not a literal) also
# keeps `snakemake --lint` from taking a results path for a hard-coded output prefix.


def of_wildcards(path, *names):
    """The LAYOUT `path` of the job's wildcards `names`, e.g. of_wildcards(LAYOUT.eval_files, "run")."""
    return lambda wildcards: path(*(wildcards[name] for name in names))


def of_runs(runs_of, path):
    """The LAYOUT `path` files of the runs `runs_of(wildcards)` names, run by run."""
    return lambda wildcards: LAYOUT.files(path, runs_of(wildcards))


def of_amendment(get):
    """`get(N)` of the job's amendment NNN; one clear error when config prereg.amendments lacks it."""

    def look_up(wildcards):
        try:
            return get(LAYOUT.amendment_index(wildcards.number))
        except UserError as error:
            raise WorkflowError(str(error)) from None

    return look_up


def results_root(wildcards):
    return LAYOUT.root


def folder_of(name):
    """The folder of the job's input `name` (the pools, a model, a freeze), derived from the job's own files."""

    def folder(wildcards, input):
        files = getattr(input, name)
        return str(Path(files if isinstance(files, str) else files[0]).parent)

    return folder


def output_folder(wildcards, output):
    """The folder a command fills (a model, a tokenizer, the task pools, a freeze, a run's records)."""
    return str(Path(output[0]).parent)


def reference_eval_dirs(wildcards):
    """The clean-trained reference (C0) runs' episodes; one empty argument when the scale has none."""
    return LAYOUT.files(LAYOUT.eval_dir, LAYOUT.runs_of("C0")) or [""]


def of_comparison(field):
    """A field of the tier comparison the job measures (condition, arms, scaling, seeds)."""
    return lambda wildcards: getattr(DESIGN.comparison(wildcards.comparison), field)


def of_probe_run(path):
    """The LAYOUT `path` of the run a probe trajectory studies."""
    return lambda wildcards: path(LAYOUT.trajectory_run(wildcards.trajectory))


def render_inputs(wildcards):
    """{key: files} of the table or figure a render job makes: its registry spec names each key's files
    as a LAYOUT look-up (paired_rollouts.render: TABLES, FIGURES)."""
    from paired_rollouts.render.figures import FIGURES
    from paired_rollouts.render.tables import TABLES

    spec = TABLES[int(wildcards.number)] if "number" in wildcards.keys() else FIGURES[wildcards.figure]
    return {key: key_spec.files(LAYOUT) for key, key_spec in spec.keys.items()}


def render_input_args(wildcards):
    """`--input KEY=PATH` pairs as separate arguments, each quoted by `:q` in the rule."""
    inputs = render_inputs(wildcards).items()
    return [arg for key, files in inputs for path in files for arg in ("--input", f"{key}={path}")]


def regime_map_grid():
    """The map job's --settings: the scale's whole `regime_map:` section (the grid with its factors)."""
    return json.dumps({"regime_map": SCALE.get("regime_map") or {}}, sort_keys=True, separators=(",", ":"))
