# Stage 3: cpu scales build the stand-in model (offline tokenizer + supervised warm start on transcripts
# of the scripted reference agent); GPU scales prepare the real model once from `model.name_or_path`
# (a Qwen3.5 snapshot, VL or text-only -> the text-only folder every learning job loads).


rule prepare_model:
    """Text-only Qwen3_5ForCausalLM snapshot of the hub model (what TRL trains and colocated vLLM serves)."""
    input:
        code=sources("training/prepare.py", "training/tokenizer.py"),
    output:
        f"{STANDIN_ROOT}/prepared/config.json",
    log:
        res("logs/prepare_model.log"),
    benchmark:
        res("benchmarks/prepare_model.tsv")
    conda:
        software_env()
    params:
        source=SCALE["model"].get("name_or_path", ""),
        folder=output_folder,
    shell:
        "paired-rollouts model prepare --source {params.source:q} --out {params.folder:q} > {log:q} 2>&1"


rule tokenizer:
    """Train a byte-level BPE tokenizer on rendered scripted-reference transcripts (no download)."""
    input:
        pools=pool_files(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{STANDIN_ROOT}/tokenizer/tokenizer.json",
    log:
        res("logs/tokenizer.log"),
    benchmark:
        res("benchmarks/tokenizer.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        folder=output_folder,
        settings=stage_settings("model"),
    shell:
        "paired-rollouts tokenizer --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--out {params.folder:q} > {log:q} 2>&1"


rule warm_start:
    """Build the tiny Qwen3.5-family model from config and warm-start it on scripted transcripts."""
    input:
        tokenizer=rules.tokenizer.output[0],
        pools=pool_files(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{STANDIN_ROOT}/model/config.json",
    log:
        res("logs/warm_start.log"),
    benchmark:
        res("benchmarks/warm_start.tsv")
    conda:
        software_env()
    params:
        tasks_dir=tasks_dir_of,
        tokenizer=tokenizer_folder,
        folder=output_folder,
        settings=stage_settings("model"),
    shell:
        "paired-rollouts warm-start --tokenizer {params.tokenizer:q} --tasks-dir {params.tasks_dir:q} "
        "--settings {params.settings:q} --threads {threads:q} --out {params.folder:q} > {log:q} 2>&1"
