# paired-rollouts: "Luck Is Not Skill: When Do Paired Rollouts Help Group-Relative RL of LLM Agents?"
#
# Run with a profile, which sets the accelerator and the scale:
#   snakemake --profile cpu            # the whole study at stand-in scale on one CPU machine
#   snakemake --profile h100 all       # the paper's scale on one H100 node (slurm-h100 for a cluster)
# Every stage is a rule in rules/<stage>.smk calling the `paired-rollouts` CLI; helpers are in
# rules/common.smk. Stage boundaries are files whose schemas are documented in docs/records.md.

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from paired_rollouts.config_check import check_config, check_deployment, config_files
from paired_rollouts.errors import UserError

min_version("9.0")


configfile: "config/config.yaml"


report: "report/workflow.rst"


# Profiles set `accelerator` and `scale`; without one, the workflow profile profiles/default/ names the
# stand-in study as the fallback (what `snakemake --lint` with no arguments lints).
for key in ("accelerator", "scale"):
    if key not in config and f"default_{key}" in config:
        config[key] = config[f"default_{key}"]

if "accelerator" not in config or "scale" not in config:
    raise WorkflowError(
        "No profile given: run with `--profile cpu` (stand-in scale on this machine), `--profile h100`, "
        "`--profile mi300x`, or a slurm-* profile. Profiles set `accelerator` and `scale`."
    )


# The files merged into `config` (a profile's and --configfile's over config/config.yaml): a schema refusal
# names the one that set the key, the layout's checks all of them.
CONFIG_FILES = config_files(workflow.configfiles)
CONFIG_SOURCE = " + ".join(CONFIG_FILES)
try:
    check_config(config, "config/schema.json", CONFIG_FILES)
    deployment = getattr(getattr(workflow, "deployment_settings", None), "deployment_method", None)
    check_deployment(config["accelerator"], deployment or ())
except UserError as error:
    raise WorkflowError(str(error)) from None
# Defaults are not filled in: the scale blocks stay as written (the shared `study:` block is merged under
# them by paired_rollouts.settings.scale_block, whose dataclasses hold the same defaults as the schema).
validate(config, "config/schema.json", set_default=False)


include: "rules/common.smk"
include: "rules/tasks.smk"
include: "rules/prereg.smk"


# The surrogate policy replaces model building, training, evaluation, diagnostics and the probe with its
# own jobs (rules/surrogate.smk) that write the same files; decisions and rendering are shared.
if SURROGATE:

    include: "rules/surrogate.smk"
    include: "rules/regime_map.smk"

else:

    include: "rules/models.smk"
    include: "rules/train.smk"
    include: "rules/evaluate.smk"
    include: "rules/diagnostics.smk"
    include: "rules/probe.smk"


# The zero-shot calibration gate (amendment A2): every training job takes its register as input.
include: "rules/calibrate.smk"
include: "rules/register.smk"
include: "rules/decide.smk"
include: "rules/compare.smk"
include: "rules/render.smk"
# The second environment, on the public pairing API alone (target `examples`).
include: "rules/examples.smk"


rule all:
    """Every product of the study: listing the intermediate registers too means that deleting any one
    of them reruns exactly its job and what depends on it."""
    default_target: True
    input:
        rules.render_document.output,
        rules.compare.output.json,
        rules.reference.output,
        LAYOUT.zero_shot_file(),
        LAYOUT.decision_files(),
        LAYOUT.probe_files(),
        LAYOUT.files(LAYOUT.eval_files),
        LAYOUT.files(LAYOUT.diagnostic_episode_files),
        LAYOUT.files(LAYOUT.luck_files),
        LAYOUT.files(LAYOUT.group_stats),
        LAYOUT.files(LAYOUT.complete),
        LAYOUT.files(LAYOUT.register),


rule tiers:
    """The registered later tiers (C1, C3, C2r, H4's reward scaling, the blocking baselines): their runs,
    evaluations and the measurement of every tier comparison (docs/design.md#tiers)."""
    input:
        LAYOUT.tier_decision_files(),
        LAYOUT.predictions("tiers"),
        rules.render_tiers_document.output,
        LAYOUT.files(LAYOUT.complete, LAYOUT.runs("tiers")),
