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


from paired_rollouts.surrogate.calibration import is_curve_run


wildcard_constraints:
    trajectory="|".join(sorted(LAYOUT.trajectories)),


CURVE_RUNS = [run for run in RUNS if is_curve_run(run)]  # tier 1's unpaired arms, whose curves are checked


rule surrogate_calibrate:
    """Fit the initial parameters to the paper's step-0 agent and check the shape's step-0 targets; fails
    (exit 1) when a target is missed."""
    input:
        pools=LAYOUT.pools(),
        published=config["published"],
        code=sources(*SIMULATOR, "agents", "evaluation", "training", "stats", "probe", "compare", "surrogate"),
    output:
        LAYOUT.step0_file(),
    log:
        LAYOUT.log("surrogate/calibrate"),
    benchmark:
        LAYOUT.benchmark("surrogate/calibrate")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        settings=stage_settings("surrogate"),
    shell:
        "paired-rollouts surrogate calibrate --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--published {input.published:q} --out {output:q} > {log:q} 2>&1"


rule surrogate_calibration:
    """The unpaired arms' mean learning curves against the published ones: the calibration register;
    fails (exit 1) on a miss, so no paired run starts from an uncalibrated surrogate."""
    input:
        step0=rules.surrogate_calibrate.output[0],
        evals=LAYOUT.files(LAYOUT.eval_files, CURVE_RUNS),
        published_curves=LAYOUT.published_curves(),
        code=sources("surrogate"),
    output:
        LAYOUT.calibration_file(),
    log:
        LAYOUT.log("surrogate/calibration"),
    benchmark:
        LAYOUT.benchmark("surrogate/calibration")
    priority: 20
    conda:
        software_env()
    params:
        runs=CURVE_RUNS,
        results=results_root,
        settings=stage_settings("surrogate"),
    shell:
        "paired-rollouts surrogate curves --step0 {input.step0:q} --runs {params.runs:q} "
        "--results {params.results:q} --settings {params.settings:q} "
        "--published-curves {input.published_curves:q} --out {output:q} > {log:q} 2>&1"


# Amendment A3 (prereg/AMENDMENT-A3.md): after the calibration register passes and before any run from
# it (the paired arms first), the prediction is time-stamped as a branch of the last configured amendment,
# covering the scale's calibration register; every run from the calibrated surrogate depends on its
# verification, which fails once the calibration register (or the rules) changed after the stamp.
A3 = config["prereg"]["prediction_amendment"]
A3_INPUTS = dict(
    documents=[ancient(doc) for doc in A3["documents"]],
    calibration=LAYOUT.calibration_file(),
    freeze=LAYOUT.freeze_record(),
    previous=LAYOUT.amendment_records()[-1:] or [LAYOUT.freeze_record()],
    code=ancient(sources("prereg")),
)
A3_PARAMS = dict(
    freeze=folder_of("freeze"),
    into=output_folder,
    after=len(LAYOUT.amendments),
    reason=A3["reason"],
    documents=LAYOUT.prediction_documents(),
)

if ACCELERATOR == "cpu":

    localrules:
        prereg_amend_prediction_local,

    rule prereg_amend_prediction_local:
        """Amendment A3 of the local test freeze, against a fresh local test authority (as the configured
        amendments are); remade, with the runs after it, when the calibration register changes."""
        input:
            **A3_INPUTS,
        output:
            LAYOUT.prediction_amendment_record(),
        log:
            LAYOUT.log("prereg_amend_prediction"),
        benchmark:
            LAYOUT.benchmark("prereg_amend_prediction")
        conda:
            software_env()
        params:
            **A3_PARAMS,
        shell:
            "paired-rollouts prereg amend-local --out {params.freeze:q} --into {params.into:q} --after {params.after:q} "
            "--replace-inside results --reason {params.reason:q} --documents {params.documents:q} > {log:q} 2>&1"

    LEDGER += expand(rules.prereg_amend_prediction_local.benchmark)

else:

    localrules:
        prereg_amend_prediction,

    rule prereg_amend_prediction:
        """Amendment A3 of the public freeze, time-stamped by the freeze's own authorities (needs the
        network: a local rule)."""
        input:
            **A3_INPUTS,
        output:
            LAYOUT.prediction_amendment_record(),
        log:
            LAYOUT.log("prereg_amend_prediction"),
        benchmark:
            LAYOUT.benchmark("prereg_amend_prediction")
        conda:
            software_env()
        params:
            **A3_PARAMS,
        shell:
            "paired-rollouts prereg amend --out {params.freeze:q} --into {params.into:q} --after {params.after:q} "
            "--reason {params.reason:q} --documents {params.documents:q} > {log:q} 2>&1"

    LEDGER += expand(rules.prereg_amend_prediction.benchmark)


localrules:
    prereg_verify_prediction,


rule prereg_verify_prediction:
    """The freeze, the configured amendments and A3, each token two ways; A3 must cover every document
    and the calibration register with their current bytes."""
    input:
        documents=LAYOUT.prediction_documents(),
        freeze=LAYOUT.freeze_record(),
        amendments=LAYOUT.amendment_records(),
        a3=LAYOUT.prediction_amendment_record(),
        code=sources("prereg"),
    output:
        LAYOUT.prediction_verification_file(),
    log:
        LAYOUT.log("prereg_verify_prediction"),
    benchmark:
        LAYOUT.benchmark("prereg_verify_prediction")
    conda:
        software_env()
    params:
        freeze=folder_of("freeze"),
        amendments=len(LAYOUT.amendments),
        branch=folder_of("a3"),
        documents=LAYOUT.prediction_documents(),
        test_authority=["--allow-test-authority"] if ACCELERATOR == "cpu" else [],
    shell:
        "paired-rollouts prereg verify --freeze {params.freeze:q} --amendments {params.amendments:q} "
        "--branch {params.branch:q} --require {params.documents:q} {params.test_authority:q} --out {output:q} "
        "> {log:q} 2>&1 || {{ cat {log:q} >&2; exit 1; }}"


rule surrogate_prediction:
    """A3's verdicts: the paired-minus-independent gaps over seed pairs against the published ones (table
    17); decides nothing unless A3's time stamp precedes the first paired checkpoint."""
    input:
        decisions=LAYOUT.decision_files(),
        rules=A3["rules"],
        verification=LAYOUT.prediction_verification_file(),
        calibration=LAYOUT.calibration_file(),
        code=sources("surrogate", "prereg", "records"),
    output:
        LAYOUT.prediction_file(),
    log:
        LAYOUT.log("surrogate/prediction"),
    benchmark:
        LAYOUT.benchmark("surrogate/prediction")
    conda:
        software_env()
    params:
        results=results_root,
        paired_runs=LAYOUT.paired_runs(),
    shell:
        "paired-rollouts surrogate prediction --decisions {input.decisions:q} --rules {input.rules:q} "
        "--verification {input.verification:q} --calibration {input.calibration:q} --results {params.results:q} "
        "--paired-runs {params.paired_runs:q} --out {output:q} > {log:q} 2>&1"


LEDGER += expand([rules.prereg_verify_prediction.benchmark, rules.surrogate_prediction.benchmark])


STUDY_CHUNKS = LAYOUT.surrogate_jobs("study")  # tier 1's chunks (the ledger counts their jobs)
for _job, _runs in LAYOUT.surrogate_jobs().items():
    _calibrating = set(_runs) <= set(CURVE_RUNS)  # a chunk of the unpaired arms the calibration checks

    rule:
        name:
            f"surrogate_arm_{_job.replace('-', '_')}"
        input:
            pools=LAYOUT.pools(),
            manifest=LAYOUT.pool_manifest(),
            verification=ancient(LAYOUT.verification_file()),
            # the unpaired arms' tier-1 runs train from the step-0 register, every other run after the curves
            calibration=LAYOUT.step0_file() if _calibrating else LAYOUT.calibration_file(),
            zero_shot=ancient(LAYOUT.zero_shot_file()),  # the registered-band gate (rules/calibrate.smk)
            # amendment A3 verified (below): no run from the calibrated surrogate before the prediction
            prediction=[] if _calibrating else ancient(LAYOUT.prediction_verification_file()),
            code=sources(*SIMULATOR, "agents", "evaluation", "training", "surrogate"),
        output:
            LAYOUT.surrogate_outputs(_runs),
        log:
            LAYOUT.log(f"surrogate/arm-{_job}"),
        benchmark:
            LAYOUT.benchmark(f"surrogate/arm-{_job}")
        # The critical path first: the calibration waits for the unpaired arms, the paired arms for the
        # calibration; the map cells (priority 0) wait for neither and fill the cores the arms leave free.
        priority: 20 if _calibrating else 10
        conda:
            software_env()
        params:
            runs=_runs,
            tasks_dir=folder_of("pools"),
            settings=surrogate_run_settings(),
            results=results_root,
            conditions=CONDITIONS_JSON,
            prediction=lambda wildcards, input: (
                ["--prediction", input.prediction] if input.prediction else []
            ),
        shell:
            "paired-rollouts surrogate arm --runs {params.runs:q} --tasks-dir {params.tasks_dir:q} "
            "--calibration {input.calibration:q} --zero-shot {input.zero_shot:q} "
            "--verification {input.verification:q} {params.prediction:q} --settings {params.settings:q} "
            "--results {params.results:q} "
            "--conditions {params.conditions:q} > {log:q} 2>&1"

    rule:
        name:
            f"surrogate_stats_{_job.replace('-', '_')}"
        input:
            episodes=LAYOUT.surrogate_outputs(_runs),
            pool_manifest=LAYOUT.pool_manifest(),
            code=sources("stats"),
        output:
            LAYOUT.surrogate_stats_outputs(_runs),
        log:
            LAYOUT.log(f"surrogate/stats-{_job}"),
        benchmark:
            LAYOUT.benchmark(f"surrogate/stats-{_job}")
        conda:
            software_env()
        params:
            runs=_runs,
            settings=completeness_settings(),
            conditions=CONDITIONS_JSON,
            tasks_dir=folder_of("pool_manifest"),
            results=results_root,
            resamples=SCALE["diagnostics"]["resamples"],
        shell:
            "paired-rollouts surrogate stats --runs {params.runs:q} --settings {params.settings:q} --conditions {params.conditions:q} "
            "--tasks-dir {params.tasks_dir:q} --results {params.results:q} --resamples {params.resamples:q} "
            "> {log:q} 2>&1"

    if _job in STUDY_CHUNKS:
        LEDGER += [
            getattr(rules, f"surrogate_{kind}_{_job.replace('-', '_')}").benchmark
            for kind in ("arm", "stats")
        ]


rule surrogate_probe:
    """Both sides of Equation 5 and the MC trace ratios at every checkpoint of a trajectory (exact scores)."""
    input:
        pools=LAYOUT.pools(),
        run_manifest=of_probe_run(LAYOUT.manifest),
        rules=config["decision_rules"],
        code=sources(*SIMULATOR, "agents", "evaluation", "training", "probe", "surrogate", "prereg"),
    output:
        LAYOUT.probe_file("{trajectory}"),
    log:
        LAYOUT.log("probe/{trajectory}"),
    benchmark:
        LAYOUT.benchmark("probe/{trajectory}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        run=of_wildcards(LAYOUT.trajectory_run, "trajectory"),
        conditions=CONDITIONS_JSON,
        run_dir=folder_of("run_manifest"),
        steps=lambda wildcards: LAYOUT.trajectory(wildcards.trajectory)["steps"],
        settings=stage_settings("training", "diagnostics", "probe", "surrogate"),
    shell:
        "paired-rollouts surrogate probe --trajectory {wildcards.trajectory:q} --run {params.run:q} "
        "--conditions {params.conditions:q} --run-dir {params.run_dir:q} "
        "--steps {params.steps:q} --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--rules {input.rules:q} --out {output:q} > {log:q} 2>&1"


rule surrogate_power:
    """P(each registered rule passes) with 3 seed pairs and with all of them, resampling the seed pairs."""
    input:
        decisions=LAYOUT.decision_files(),
        evals=LAYOUT.files(LAYOUT.eval_files, LAYOUT.decided_runs()),
        complete=LAYOUT.files(LAYOUT.complete, LAYOUT.decided_runs()),
        rules=config["decision_rules"],
        code=sources("stats", "prereg", "surrogate"),
    output:
        LAYOUT.power_file(),
    log:
        LAYOUT.log("surrogate/power"),
    benchmark:
        LAYOUT.benchmark("surrogate/power")
    conda:
        software_env()
    params:
        pairs=[3],
        draws=1000,
    shell:
        "paired-rollouts surrogate power --decisions {input.decisions:q} --rules {input.rules:q} "
        "--pairs {params.pairs:q} --draws {params.draws:q} --out {output:q} > {log:q} 2>&1"


rule surrogate_power_curves:
    """P(each learning rule passes) at 0-2x the paper's effect, by seed pairs and between-seed spread (the
    surrogate's at its calibrated point, the paper's three seeds), with and without the every-seed clause."""
    input:
        decisions=LAYOUT.decision_files(),
        rules=config["decision_rules"],
        published=config["published"],
        code=sources("stats", "prereg", "surrogate", "compare"),
    output:
        LAYOUT.power_curves_file(),
    log:
        LAYOUT.log("surrogate/power_curves"),
    benchmark:
        LAYOUT.benchmark("surrogate/power_curves")
    conda:
        software_env()
    params:
        settings=stage_settings("surrogate"),
    shell:
        "paired-rollouts surrogate power-curves --decisions {input.decisions:q} --rules {input.rules:q} "
        "--published {input.published:q} --settings {params.settings:q} --out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.surrogate_calibrate.benchmark)
LEDGER += expand(rules.surrogate_calibration.benchmark)
LEDGER += expand(rules.surrogate_probe.benchmark, trajectory=sorted(LAYOUT.trajectories))
LEDGER += expand(rules.surrogate_power.benchmark)  # table 13 reads it
LEDGER += expand(rules.surrogate_power_curves.benchmark)  # table 19 and figure power_curves read it
