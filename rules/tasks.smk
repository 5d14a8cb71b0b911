# Stage 1: the frozen task pools and the scripted reference agent (docs/simulator.md#tasks, docs/simulator.md#reference-agent).


rule tasks:
    """Regenerate the four task pools and check them against the paper's SHA-256 before writing."""
    input:
        SIMULATOR_SOURCES,
    output:
        pools=[f"{TASKS_DIR}/{pool}.jsonl" for pool in POOLS],
        manifest=f"{TASKS_DIR}/MANIFEST.json",
    log:
        res("logs/tasks.log"),
    benchmark:
        res("benchmarks/tasks.tsv")
    conda:
        software_env()
    params:
        tasks_dir=output_folder,
    shell:
        "paired-rollouts tasks --out {params.tasks_dir:q} > {log:q} 2>&1"


rule reference:
    """The scripted reference agent (naive and recovering) on validation and test, five conditions."""
    input:
        pools=pool_files(),
        manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=sources(*SIMULATOR, "agents"),
    output:
        res("reference/scripted_reference.json"),
    log:
        res("logs/reference.log"),
    benchmark:
        res("benchmarks/reference.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
    shell:
        "paired-rollouts reference --tasks-dir {params.tasks_dir:q} --out {output:q} > {log:q} 2>&1"
