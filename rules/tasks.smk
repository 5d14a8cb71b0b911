# Stage 1: the frozen task pools and the scripted reference agent (docs/simulator.md#tasks, docs/simulator.md#reference-agent).


rule tasks:
    """Regenerate the four task pools and check them against the paper's SHA-256 before writing."""
    input:
        sources(*SIMULATOR),
    output:
        pools=LAYOUT.pools(),
        manifest=LAYOUT.pool_manifest(),
    log:
        LAYOUT.log("tasks"),
    benchmark:
        LAYOUT.benchmark("tasks")
    conda:
        software_env()
    params:
        tasks_dir=output_folder,
    shell:
        "paired-rollouts tasks --out {params.tasks_dir:q} > {log:q} 2>&1"


rule reference:
    """The scripted reference agent (naive and recovering) on validation and test, five conditions."""
    input:
        pools=LAYOUT.pools(),
        manifest=rules.tasks.output.manifest,
        code=sources(*SIMULATOR, "agents"),
    output:
        res("reference/scripted_reference.json"),
    log:
        LAYOUT.log("reference"),
    benchmark:
        LAYOUT.benchmark("reference")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
    shell:
        "paired-rollouts reference --tasks-dir {params.tasks_dir:q} --out {output:q} > {log:q} 2>&1"


LEDGER += expand(rules.reference.benchmark)
