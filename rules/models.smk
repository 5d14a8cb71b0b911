# Stage 3: cpu scales build the stand-in model (offline tokenizer + supervised warm start on transcripts
# of the scripted reference agent); GPU scales prepare the real model once from `model.name_or_path`
# (a Qwen3.5 snapshot, VL or text-only -> the text-only folder every learning job loads).


rule prepare_model:
    """Text-only Qwen3_5ForCausalLM snapshot of the hub model (what TRL trains and colocated vLLM serves)."""
    input:
        code=sources("training/prepare.py", "training/tokenizer.py"),
    output:
        f"{LAYOUT.models_dir()}/prepared/config.json",
    log:
        LAYOUT.log("prepare_model"),
    benchmark:
        LAYOUT.benchmark("prepare_model")
    conda:
        software_env()
    params:
        source=SCALE["model"].get("name_or_path", ""),
        template=settings_of_scale.ModelSettings.parse(SCALE["model"], "config").chat_template,
        folder=output_folder,
    shell:
        "paired-rollouts model prepare --source {params.source:q} --out {params.folder:q} "
        "--chat-template {params.template:q} > {log:q} 2>&1"


rule tokenizer:
    """Train a byte-level BPE tokenizer on rendered scripted-reference transcripts (no download)."""
    input:
        pools=LAYOUT.pools(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{LAYOUT.models_dir()}/tokenizer/tokenizer.json",
    log:
        LAYOUT.log("tokenizer"),
    benchmark:
        LAYOUT.benchmark("tokenizer")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        folder=output_folder,
        settings=stage_settings("model"),
    shell:
        "paired-rollouts tokenizer --tasks-dir {params.tasks_dir:q} --settings {params.settings:q} "
        "--out {params.folder:q} > {log:q} 2>&1"


rule warm_start:
    """Build the tiny Qwen3.5-family model from config and warm-start it on scripted transcripts."""
    input:
        tokenizer=rules.tokenizer.output[0],
        pools=LAYOUT.pools(),
        code=sources(*SIMULATOR, "agents", "training"),
    output:
        f"{LAYOUT.models_dir()}/model/config.json",
    log:
        LAYOUT.log("warm_start"),
    benchmark:
        LAYOUT.benchmark("warm_start")
    conda:
        software_env()
    params:
        tasks_dir=folder_of("pools"),
        tokenizer=folder_of("tokenizer"),
        folder=output_folder,
        settings=stage_settings("model"),
    shell:
        "paired-rollouts warm-start --tokenizer {params.tokenizer:q} --tasks-dir {params.tasks_dir:q} "
        "--settings {params.settings:q} --threads {threads:q} --out {params.folder:q} > {log:q} 2>&1"


# The model every learning job starts from (its folder is their --model-dir), and the jobs that build it.
_builders = (
    [rules.tokenizer, rules.warm_start] if SCALE["model"]["kind"] == "standin" else [rules.prepare_model]
)
MODEL = _builders[-1].output[0]
LEDGER += expand([rule.benchmark for rule in _builders])
