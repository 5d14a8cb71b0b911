# Surrogate scales (`model.kind: surrogate`): the calibration, then one job per chunk of an arm's seeds
# that trains each run and writes every evaluation and diagnostic file of it, one statistics job per
# chunk (luck share, group statistics, completeness: the same commands, called in one process), and the
# exact probe. The files and their schemas are those of the LLM stages, so decide and render read them
# unchanged. At this scale a run takes seconds: per-file jobs would spend most of their time starting.
#
# The calibration comes in two steps: the step-0 register (fitted knobs, the shape's step-0 targets)
# before any run; then the arms the paper ran without pairing (C0, C2 independent, C4 independent) train
# from it, their mean learning curves are checked against the published ones, and only the passing
# calibration register lets every other run (the paired arms first) start.


from paired_rollouts.surrogate import calibration as surrogate_calibration


wildcard_constraints:
    trajectory="|".join(TRAJECTORIES),


# The tier-1 runs of the unpaired arms whose curves the calibration checks.
CURVE_RUNS = [run for run in RUNS if surrogate_calibration.is_curve_run(run)]


rule surrogate_calibrate:
    """Fit the initial parameters to the paper's step-0 agent and check the shape's step-0 targets; fails
    (exit 1) when a target is missed."""
    input:
        pools=pool_files(),
        published=published_file(),
        code=sources(*SIMULATOR, "agents", "evaluation", "training", "stats", "probe", "compare", "surrogate"),
    output:
        STEP0_FILE,
    log:
        res("logs/surrogate/calibrate.log"),
    benchmark:
        res("benchmarks/surrogate/calibrate.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        settings=stage_settings("surrogate"),
    shell:
        "paired-rollouts surrogate calibrate --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--published {input.published:q} --out {output:q} > {log:q} 2>&1"


rule surrogate_calibration:
    """The unpaired arms' mean learning curves against the published ones: the calibration register;
    fails (exit 1) on a miss, so no paired run starts from an uncalibrated surrogate."""
    input:
        step0=STEP0_FILE,
        evals=of_runs(CURVE_RUNS, LAYOUT.eval_files),
        published_curves=PUBLISHED_CURVES,
        code=sources("surrogate"),
    output:
        CALIBRATION_FILE,
    log:
        res("logs/surrogate/calibration.log"),
    benchmark:
        res("benchmarks/surrogate/calibration.tsv")
    conda:
        software_env()
    params:
        runs=CURVE_RUNS,
        results=results_root_of,
        settings=stage_settings("surrogate"),
    shell:
        "paired-rollouts surrogate curves --step0 {input.step0:q} --runs {params.runs:q} "
        "--results {params.results:q} --settings {params.settings:q} "
        "--published-curves {input.published_curves:q} --out {output:q} > {log:q} 2>&1"


for _job, _runs in LAYOUT.surrogate_jobs().items():

    rule:
        name:
            f"surrogate_arm_{_job.replace('-', '_')}"
        input:
            pools=pool_files(),
            manifest=f"{TASKS_DIR}/MANIFEST.json",
            verification=ancient(LAYOUT.verification_file()),
            # the unpaired arms train from the step-0 register, every other run after the curves passed
            calibration=STEP0_FILE if set(_runs) <= set(CURVE_RUNS) else CALIBRATION_FILE,
            zero_shot=ancient(LAYOUT.zero_shot_file()),  # the registered-band gate (rules/calibrate.smk)
            code=sources(*SIMULATOR, "agents", "evaluation", "training", "surrogate"),
        output:
            LAYOUT.surrogate_outputs(_runs),
        log:
            res(f"logs/surrogate/arm-{_job}.log"),
        benchmark:
            res(f"benchmarks/surrogate/arm-{_job}.tsv")
        conda:
            software_env()
        params:
            runs=_runs,
            tasks_dir=tasks_dir_of,
            settings=surrogate_run_settings(),
            results=results_root_of,
            conditions=CONDITIONS_JSON,
        shell:
            "paired-rollouts surrogate arm --runs {params.runs:q} --tasks-dir {params.tasks_dir:q} "
            "--calibration {input.calibration:q} --settings {params.settings:q} --results {params.results:q} "
            "--conditions {params.conditions:q} > {log:q} 2>&1"

    rule:
        name:
            f"surrogate_stats_{_job.replace('-', '_')}"
        input:
            episodes=LAYOUT.surrogate_outputs(_runs),
            pool_manifest=f"{TASKS_DIR}/MANIFEST.json",
            code=sources("stats"),
        output:
            LAYOUT.surrogate_stats_outputs(_runs),
        log:
            res(f"logs/surrogate/stats-{_job}.log"),
        benchmark:
            res(f"benchmarks/surrogate/stats-{_job}.tsv")
        conda:
            software_env()
        params:
            runs=_runs,
            scale_block=completeness_scale(),
            conditions=CONDITIONS_JSON,
            tasks_dir=pool_manifest_dir_of,
            results=results_root_of,
            resamples=SCALE["diagnostics"]["resamples"],
        shell:
            "paired-rollouts surrogate stats --runs {params.runs:q} --scale-block {params.scale_block:q} --conditions {params.conditions:q} "
            "--tasks-dir {params.tasks_dir:q} --results {params.results:q} --resamples {params.resamples:q} "
            "> {log:q} 2>&1"


rule surrogate_probe:
    """Both sides of Equation 5 and the MC trace ratios at every checkpoint of a trajectory (exact scores)."""
    input:
        pools=pool_files(),
        run_manifest=probe_run_manifest,
        code=sources(*SIMULATOR, "agents", "evaluation", "training", "probe", "surrogate"),
    output:
        LAYOUT.probe_file("{trajectory}"),
    log:
        res("logs/probe/{trajectory}.log"),
    benchmark:
        res("benchmarks/probe/{trajectory}.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        run_dir=probe_run_dir,
        steps=probe_steps,
        settings=stage_settings("training", "diagnostics", "probe", "surrogate"),
    shell:
        "paired-rollouts surrogate probe --trajectory {wildcards.trajectory:q} --run-dir {params.run_dir:q} "
        "--steps {params.steps:q} --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--out {output:q} > {log:q} 2>&1"


rule surrogate_power:
    """P(each registered rule passes) with 3 seed pairs and with all of them, resampling the seed pairs."""
    input:
        decisions=decision_files(),
        evals=of_runs(LAYOUT.runs_of("C2") + LAYOUT.runs_of("C4"), LAYOUT.eval_files),
        complete=of_runs(LAYOUT.runs_of("C2") + LAYOUT.runs_of("C4"), LAYOUT.complete),
        rules=config["decision_rules"],
        code=sources("stats", "prereg", "surrogate"),
    output:
        POWER_FILE,
    log:
        res("logs/surrogate/power.log"),
    benchmark:
        res("benchmarks/surrogate/power.tsv")
    conda:
        software_env()
    params:
        pairs=[3],
        draws=1000,
    shell:
        "paired-rollouts surrogate power --decisions {input.decisions:q} --rules {input.rules:q} "
        "--pairs {params.pairs:q} --draws {params.draws:q} --out {output:q} > {log:q} 2>&1"
