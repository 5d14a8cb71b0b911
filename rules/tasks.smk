# Stage 1: the frozen task pools and the scripted reference agent (backoffice_spec sections 3 and 6).


rule tasks:
    """Regenerate the four task pools and check them against the paper's SHA-256 before writing."""
    input:
        SIMULATOR_SOURCES,
    output:
        pools=[f"{TASKS_DIR}/{pool}.jsonl" for pool in POOLS],
        manifest=f"{TASKS_DIR}/MANIFEST.json",
    params:
        tasks_dir=output_folder,
    conda:
        software_env()
    log:
        "results/logs/tasks.log",
    benchmark:
        "results/benchmarks/tasks.tsv",
    shell:
        "paired-rollouts tasks --out {params.tasks_dir} > {log} 2>&1"


rule reference:
    """The scripted reference agent (naive and recovering) on validation and test, five conditions."""
    input:
        pools=pool_files(),
        manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources(*SIMULATOR, "agents"),
    output:
        "results/reference/scripted_reference.json",
    params:
        tasks_dir=tasks_dir_of,
    conda:
        software_env()
    log:
        "results/logs/reference.log",
    benchmark:
        "results/benchmarks/reference.tsv",
    shell:
        "paired-rollouts reference --tasks-dir {params.tasks_dir} --out {output} > {log} 2>&1"
