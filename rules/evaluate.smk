# Stage 5: evaluations of saved checkpoints, one job per (run, checkpoint): one process and one
# generation engine (colocated vLLM on GPU) rolls out every regime of that checkpoint, each into its own
# file (the bytes are those of one process per regime: the environments' counters restart per regime).
# Schedules are identical across arms and checkpoints.


wildcard_constraints:
    regime=r"clean|at_training|challenge|noisy_p010|noisy_p025|heldout_types",


rule evaluate_periodic:
    """Roll out one checkpoint on the validation pool under every periodic regime."""
    input:
        pools=pool_files(),
        run_manifest=rules.train.output.manifest,
        model=model_inputs(),
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        [LAYOUT.eval_file("{run}", "periodic", "{step}", regime) for regime in PERIODIC_REGIMES],
    log:
        res("logs/evaluate/{run}/periodic-step{step}.log"),
    benchmark:
        res("benchmarks/evaluate/{run}/periodic-step{step}.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        settings=stage_settings("stack", "training", "evaluation"),
        model=model_dir_param,
        checkpoint=checkpoint_dir,
        regimes=",".join(PERIODIC_REGIMES),
        out=eval_out_template,
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts evaluate --run {wildcards.run:q} --step {wildcards.step:q} --phase periodic "
        "--regime {params.regimes:q} --tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} "
        "--model-dir {params.model:q} --settings {params.settings:q} --conditions {params.conditions:q} "
        "--out {params.out:q} > {log:q} 2>&1"


# The final sets of a run: a run whose noise is none of them (C3, C4, C2r) adds its own at_training set
# (LAYOUT.final_regimes).
for _runs, _regimes in (
    (STANDARD_FINAL_RUNS, FINAL_REGIMES),
    (OWN_FINAL_RUNS, FINAL_REGIMES + ["at_training"]),
):

    rule:
        name:
            "evaluate_final" if len(_regimes) == len(FINAL_REGIMES) else "evaluate_final_own_noise"
        input:
            pools=pool_files(),
            run_manifest=rules.train.output.manifest,
            model=model_inputs(),
            code=sources(*SIMULATOR, "training", "evaluation"),
        output:
            [LAYOUT.eval_file("{run}", "final", "{step}", regime) for regime in _regimes],
        log:
            res("logs/evaluate/{run}/final-step{step}.log"),
        benchmark:
            res("benchmarks/evaluate/{run}/final-step{step}.tsv")
        wildcard_constraints:
            run="|".join(_runs) or "none",
        conda:
            software_env()
        params:
            tasks_dir=tasks_dir_of,
            settings=stage_settings("stack", "training", "evaluation"),
            model=model_dir_param,
            checkpoint=checkpoint_dir,
            regimes=",".join(_regimes),
            out=eval_out_template,
            conditions=CONDITIONS_JSON,
        shell:
            "paired-rollouts evaluate --run {wildcards.run:q} --step {wildcards.step:q} --phase final "
            "--regime {params.regimes:q} --tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} "
            "--model-dir {params.model:q} --settings {params.settings:q} --conditions {params.conditions:q} "
            "--out {params.out:q} > {log:q} 2>&1"
