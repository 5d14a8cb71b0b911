# Stage 2: freeze the protocol with RFC 3161 time stamps and verify it offline (docs/prereg.md).
# Every training job depends on the verification, so a changed protocol or a bad token stops the
# pipeline before anything trains.

# Time-stamping talks to TSAs; compute nodes often have no network.
localrules:
    prereg_verify,


if ACCELERATOR == "cpu":

    localrules:
        prereg_freeze_local,

    rule prereg_freeze_local:
        """Freeze against a local *test* authority that the job starts and stops itself (cpu profile only).

        The documents are `ancient` inputs: the freeze is made once; later edits make verification fail
        instead of silently re-freezing. To re-freeze, delete the freeze folder."""
        input:
            documents=[ancient(doc) for doc in config["prereg"]["documents"]],
            code=ancient(sources("prereg")),
        output:
            freeze=f"{config['prereg']['local_freeze_dir']}/freeze.json",
        params:
            folder=output_folder,
            documents=config["prereg"]["documents"],
        conda:
            software_env()
        log:
            res("logs/prereg_freeze_local.log"),
        benchmark:
            res("benchmarks/prereg_freeze_local.tsv"),
        shell:
            "paired-rollouts prereg freeze-local --out {params.folder:q} --replace-inside results "
            "--documents {params.documents:q} > {log:q} 2>&1"

else:

    localrules:
        prereg_public_freeze_missing,

    rule prereg_public_freeze_missing:
        """GPU profiles never freeze on their own: they stop here, with instructions, when the public
        freeze is missing (a dry run lists this job so the gap is visible before anything runs)."""
        output:
            f"{config['prereg']['public_freeze_dir']}/freeze.json",
        params:
            message=public_freeze_missing_message,
        conda:
            software_env()
        log:
            res("logs/prereg_public_freeze_missing.log"),
        benchmark:
            res("benchmarks/prereg_public_freeze_missing.tsv"),
        shell:
            "printf '%s\\n' {params.message:q} | tee {log:q} >&2; exit 1"


rule prereg_verify:
    """Check the documents' hashes and every token with rfc3161-client and `openssl ts -verify`."""
    input:
        documents=config["prereg"]["documents"],
        freeze=f"{freeze_dir()}/freeze.json",
        code=sources("prereg"),
    output:
        verification_file(),
    params:
        folder=freeze_folder,
        test_authority=["--allow-test-authority"] if ACCELERATOR == "cpu" else [],
    conda:
        software_env()
    log:
        res("logs/prereg_verify.log"),
    benchmark:
        res("benchmarks/prereg_verify.tsv"),
    shell:
        "paired-rollouts prereg verify --freeze {params.folder:q} {params.test_authority:q} --out {output:q} > {log:q} 2>&1 "
        "|| {{ cat {log:q} >&2; exit 1; }}"
