# Stage 1: the frozen task pools and the scripted reference agent (backoffice_spec sections 3 and 6).


rule tasks:
    """Regenerate the four task pools and check them against the paper's SHA-256 before writing."""
    input:
        SIMULATOR_SOURCES,
    output:
        pools=[f"{TASKS_DIR}/{pool}.jsonl" for pool in POOLS],
        manifest=f"{TASKS_DIR}/MANIFEST.json",
    log:
        "results/logs/tasks.log",
    shell:
        "paired-rollouts tasks --out {TASKS_DIR} > {log} 2>&1"


rule reference:
    """The scripted reference agent (naive and recovering) on validation and test, five conditions."""
    input:
        pools=pool_files(),
        manifest=f"{TASKS_DIR}/MANIFEST.json",
        code=SIMULATOR_SOURCES + sources("agents"),
    output:
        "results/reference/scripted_reference.json",
    log:
        "results/logs/reference.log",
    shell:
        "paired-rollouts reference --tasks-dir {TASKS_DIR} --out {output} > {log} 2>&1"
