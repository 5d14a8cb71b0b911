# Stage 3b: the zero-shot calibration register (amendment A2, docs/prereg.md#zero-shot-calibration-register).
# Before any training job, the model every run starts from is checked at step 0 against the bands
# registered in prereg/tier_rules.yaml: clean validation success in the model's band, luck share at
# p = 0.25 at least the registered minimum. A missed band fails this job, so no training job starts;
# a model without a registered band (the stand-in) is reported as not applicable.

if SURROGATE:

    rule zero_shot_calibration:
        """The surrogate's register: its step-0 calibration's values against the bands of the model it is
        fitted to (the surrogate calibration itself checks its tighter targets)."""
        input:
            calibration=rules.surrogate_calibrate.output[0],
            rules=config["prereg"]["tier_rules"],
            verification=ancient(LAYOUT.amendment_verification_file()),  # as train's: re-verifying reruns nothing
            code=sources("calibration", "prereg"),
        output:
            LAYOUT.zero_shot_file(),
        log:
            LAYOUT.log("zero_shot_calibration"),
        benchmark:
            LAYOUT.benchmark("zero_shot_calibration")
        conda:
            software_env()
        params:
            model=calibration_model(),
        shell:
            "paired-rollouts calibrate surrogate --calibration {input.calibration:q} --model {params.model:q} "
            "--rules {input.rules:q} --verification {input.verification:q} --out {output:q} > {log:q} 2>&1 "
            "|| {{ cat {log:q} >&2; exit 1; }}"

else:

    rule zero_shot_calibration:
        """Roll out the base model (step-0 policy) on the clean validation set and the diagnostic set."""
        input:
            pools=LAYOUT.pools(),
            model=MODEL,
            rules=config["prereg"]["tier_rules"],
            verification=ancient(LAYOUT.amendment_verification_file()),  # as train's: re-verifying reruns nothing
            code=sources(*SIMULATOR, "training", "evaluation", "stats", "calibration", "prereg"),
        output:
            register=LAYOUT.zero_shot_file(),
            clean=res("calibration/zero_shot-clean.jsonl"),
            diagnostic=res("calibration/zero_shot-diag.jsonl"),
        log:
            LAYOUT.log("zero_shot_calibration"),
        benchmark:
            LAYOUT.benchmark("zero_shot_calibration")
        conda:
            software_env()
        params:
            tasks_dir=folder_of("pools"),
            model_dir=folder_of("model"),
            model=calibration_model(),
            settings=stage_settings("stack", "training", "evaluation", "diagnostics"),
            resamples=SCALE["diagnostics"]["resamples"],
            episodes=output_folder,
        shell:
            "paired-rollouts calibrate zero-shot --tasks-dir {params.tasks_dir:q} --model-dir {params.model_dir:q} "
            "--model {params.model:q} --settings {params.settings:q} --rules {input.rules:q} "
            "--verification {input.verification:q} --resamples {params.resamples:q} "
            "--episodes-dir {params.episodes:q} --out {output.register:q} > {log:q} 2>&1 "
            "|| {{ cat {log:q} >&2; exit 1; }}"


LEDGER += expand(rules.zero_shot_calibration.benchmark)
