# Stage 3 (cpu scales only): the stand-in model's offline tokenizer and its supervised warm start on
# transcripts of the scripted reference agent. GPU scales load the real model from `model.name_or_path`.


rule tokenizer:
    """Train a byte-level BPE tokenizer on rendered scripted-reference transcripts (no download)."""
    input:
        pools=pool_files(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{STANDIN_ROOT}/tokenizer/tokenizer.json",
    params:
        tasks_dir=tasks_dir_of,
        folder=output_folder,
        settings=model_settings(),
    conda:
        software_env()
    log:
        res("logs/tokenizer.log"),
    benchmark:
        res("benchmarks/tokenizer.tsv"),
    shell:
        "paired-rollouts tokenizer --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--out {params.folder:q} > {log:q} 2>&1"


rule warm_start:
    """Build the tiny Qwen3.5-family model from config and warm-start it on scripted transcripts."""
    input:
        tokenizer=f"{STANDIN_ROOT}/tokenizer/tokenizer.json",
        pools=pool_files(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{STANDIN_ROOT}/model/config.json",
    params:
        tasks_dir=tasks_dir_of,
        tokenizer=tokenizer_folder,
        folder=output_folder,
        settings=model_settings(),
    conda:
        software_env()
    log:
        res("logs/warm_start.log"),
    benchmark:
        res("benchmarks/warm_start.tsv"),
    shell:
        "paired-rollouts warm-start --tokenizer {params.tokenizer:q} --tasks-dir {params.tasks_dir:q} "
        "--settings {params.settings:q} --threads {threads:q} --out {params.folder:q} > {log:q} 2>&1"
