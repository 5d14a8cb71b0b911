# Stage 5: evaluations of saved checkpoints, one job per (run, checkpoint): one process and one
# generation engine (colocated vLLM on GPU) rolls out every regime of that checkpoint, each into its own
# file (the bytes are those of one process per regime: the environments' counters restart per regime).
# Schedules are identical across arms and checkpoints.


rule evaluate_periodic:
    """Roll out one checkpoint on the validation pool under every periodic regime."""
    input:
        pools=LAYOUT.pools(),
        run_manifest=rules.train.output.manifest,
        model=MODEL,
        code=sources(*SIMULATOR, "training", "evaluation"),
    output:
        [LAYOUT.eval_file("{run}", "periodic", "{step}", regime) for regime in study.PERIODIC_REGIMES],
    log:
        LAYOUT.log("evaluate/{run}/periodic-step{step}"),
    benchmark:
        LAYOUT.benchmark("evaluate/{run}/periodic-step{step}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        settings=stage_settings("stack", "training", "evaluation"),
        model=folder_of("model"),
        checkpoint=of_wildcards(LAYOUT.checkpoint_dir, "run", "step"),
        regimes=list(study.PERIODIC_REGIMES),
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts evaluate --run {wildcards.run:q} --step {wildcards.step:q} --phase periodic "
        "--regime {params.regimes:q} --tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} "
        "--model-dir {params.model:q} --settings {params.settings:q} --conditions {params.conditions:q} "
        "--out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.evaluate_periodic.benchmark, run=RUNS, step=LAYOUT.periodic_steps())
# The final sets of a run: a run whose noise is none of them (C3, C4, C2r) adds its own at_training set
# (LAYOUT.final_regimes).
_own = [run for run in LAYOUT.runs("all") if "at_training" in LAYOUT.final_regimes(run)]
for _name, _runs, _regimes in (
    ("evaluate_final", [run for run in LAYOUT.runs("all") if run not in _own], list(study.FINAL_REGIMES)),
    ("evaluate_final_own_noise", _own, [*study.FINAL_REGIMES, "at_training"]),
):

    rule:
        name:
            _name
        input:
            pools=LAYOUT.pools(),
            run_manifest=rules.train.output.manifest,
            model=MODEL,
            code=sources(*SIMULATOR, "training", "evaluation"),
        output:
            [LAYOUT.eval_file("{run}", "final", "{step}", regime) for regime in _regimes],
        log:
            LAYOUT.log("evaluate/{run}/final-step{step}"),
        benchmark:
            LAYOUT.benchmark("evaluate/{run}/final-step{step}")
        wildcard_constraints:
            run="|".join(_runs) or "none",
        conda:
            software_env()
        params:
            tasks_dir=folder_of("pools"),
            settings=stage_settings("stack", "training", "evaluation"),
            model=folder_of("model"),
            checkpoint=of_wildcards(LAYOUT.checkpoint_dir, "run", "step"),
            regimes=_regimes,
            conditions=CONDITIONS_JSON,
        shell:
            "paired-rollouts evaluate --run {wildcards.run:q} --step {wildcards.step:q} --phase final "
            "--regime {params.regimes:q} --tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} "
            "--model-dir {params.model:q} --settings {params.settings:q} --conditions {params.conditions:q} "
            "--out {output:q} > {log:q} 2>&1"

    LEDGER += expand(
        getattr(rules, _name).benchmark, run=[r for r in RUNS if r in _runs], step=LAYOUT.final_step
    )


# The replay check of each run's final checkpoint: the first episodes of its final clean set rolled twice
# with every seed fixed, token for token, and compared with the evaluation's records (table 18).
rule replay_check:
    """Replay a checkpoint's first final-set episodes twice with the evaluation's seeds."""
    input:
        pools=LAYOUT.pools(),
        run_manifest=rules.train.output.manifest,
        evaluation=of_wildcards(LAYOUT.replay_evaluation, "run", "step"),
        model=MODEL,
        code=sources(*SIMULATOR, "training", "evaluation", "records"),
    output:
        LAYOUT.replay_file("{run}", "{step}"),
    log:
        LAYOUT.log("replay/{run}/step{step}"),
    benchmark:
        LAYOUT.benchmark("replay/{run}/step{step}")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        settings=stage_settings("stack", "training", "evaluation"),
        model=folder_of("model"),
        checkpoint=of_wildcards(LAYOUT.checkpoint_dir, "run", "step"),
        episodes=LAYOUT.replay_episodes(),
        conditions=CONDITIONS_JSON,
    shell:
        "paired-rollouts replay-check --run {wildcards.run:q} --step {wildcards.step:q} "
        "--tasks-dir {params.tasks_dir:q} --checkpoint {params.checkpoint:q} --model-dir {params.model:q} "
        "--settings {params.settings:q} --conditions {params.conditions:q} --evaluation {input.evaluation:q} "
        "--episodes {params.episodes:q} --out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.replay_check.benchmark, run=RUNS, step=LAYOUT.final_step)
