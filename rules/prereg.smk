# Stage 2: freeze the protocol with RFC 3161 time stamps and verify it offline (docs/prereg.md).
# Every training job depends on the verification, so a changed protocol or a bad token stops the
# pipeline before anything trains. The amendments (config prereg.amendments) are made and verified
# the same way; only the tier runs and the zero-shot calibration gate depend on their verification.


wildcard_constraints:
    number=r"\d{3}",


# Time-stamping talks to TSAs; compute nodes often have no network.
localrules:
    prereg_verify,
    prereg_verify_amendments,


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
            freeze=LAYOUT.freeze_record(),
        log:
            LAYOUT.log("prereg_freeze_local"),
        benchmark:
            LAYOUT.benchmark("prereg_freeze_local")
        conda:
            software_env()
        params:
            folder=output_folder,
            documents=config["prereg"]["documents"],
        shell:
            "paired-rollouts prereg freeze-local --out {params.folder:q} --replace-inside results "
            "--documents {params.documents:q} > {log:q} 2>&1"

    LEDGER += expand(rules.prereg_freeze_local.benchmark)

    localrules:
        prereg_amend_local,

    rule prereg_amend_local:
        """Amendment NNN of the local test freeze, against a fresh local test authority (the freeze's own
        is gone). Documents are `ancient` as for the freeze; a re-made freeze (or previous amendment)
        re-makes this one, since the chain names the previous record's imprint."""
        input:
            documents=of_amendment(lambda index: [ancient(doc) for doc in LAYOUT.amendment_documents(index)]),
            previous=of_amendment(LAYOUT.previous_record),
            code=ancient(sources("prereg")),
        output:
            LAYOUT.amendment_record("{number}"),
        log:
            LAYOUT.log("prereg_amend_local/{number}"),
        benchmark:
            LAYOUT.benchmark("prereg_amend_local/{number}")
        conda:
            software_env()
        params:
            folder=lambda wildcards: LAYOUT.freeze_dir(),
            reason=of_amendment(LAYOUT.amendment_reason),
            documents=of_amendment(LAYOUT.amendment_documents),
        shell:
            "paired-rollouts prereg amend-local --out {params.folder:q} --number {wildcards.number:q} "
            "--replace-inside results --reason {params.reason:q} --documents {params.documents:q} > {log:q} 2>&1"

    LEDGER += expand(rules.prereg_amend_local.benchmark, number=LAYOUT.amendment_numbers())

else:

    localrules:
        prereg_public_freeze_missing,

    rule prereg_public_freeze_missing:
        """GPU profiles never freeze on their own: they stop here, with instructions, when the public
        freeze is missing (a dry run lists this job so the gap is visible before anything runs)."""
        output:
            LAYOUT.freeze_record(),
        log:
            LAYOUT.log("prereg_public_freeze_missing"),
        benchmark:
            LAYOUT.benchmark("prereg_public_freeze_missing")
        conda:
            software_env()
        params:
            message=prereg_commands.missing_public_freeze(LAYOUT),
        shell:
            "printf '%s\\n' {params.message:q} | tee {log:q} >&2; exit 1"

    localrules:
        prereg_public_amendment_missing,

    rule prereg_public_amendment_missing:
        """Likewise for a configured amendment that is not committed under the public freeze."""
        output:
            LAYOUT.amendment_record("{number}"),
        log:
            LAYOUT.log("prereg_public_amendment_missing/{number}"),
        benchmark:
            LAYOUT.benchmark("prereg_public_amendment_missing/{number}")
        conda:
            software_env()
        params:
            message=of_amendment(lambda index: prereg_commands.missing_public_amendment(LAYOUT, index)),
        shell:
            "printf '%s\\n' {params.message:q} | tee {log:q} >&2; exit 1"


rule prereg_verify:
    """Check the documents' hashes and every token with rfc3161-client and `openssl ts -verify`."""
    input:
        documents=config["prereg"]["documents"],
        freeze=LAYOUT.freeze_record(),
        code=sources("prereg"),
    output:
        LAYOUT.verification_file(),
    log:
        LAYOUT.log("prereg_verify"),
    benchmark:
        LAYOUT.benchmark("prereg_verify")
    conda:
        software_env()
    params:
        folder=folder_of("freeze"),
        test_authority=["--allow-test-authority"] if ACCELERATOR == "cpu" else [],
    shell:
        "paired-rollouts prereg verify --freeze {params.folder:q} --amendments 0 {params.test_authority:q} "
        "--out {output:q} > {log:q} 2>&1 || {{ cat {log:q} >&2; exit 1; }}"


rule prereg_verify_amendments:
    """The freeze and its configured amendments, each against its own stored roots; the last record must
    cover every configured document. Tier runs and the calibration gate depend on this report."""
    input:
        documents=LAYOUT.all_protocol_documents(),
        freeze=LAYOUT.freeze_record(),
        amendments=LAYOUT.amendment_records(),
        code=sources("prereg"),
    output:
        LAYOUT.amendment_verification_file(),
    log:
        LAYOUT.log("prereg_verify_amendments"),
    benchmark:
        LAYOUT.benchmark("prereg_verify_amendments")
    conda:
        software_env()
    params:
        folder=folder_of("freeze"),
        amendments=len(config["prereg"]["amendments"]),
        documents=LAYOUT.all_protocol_documents(),
        test_authority=["--allow-test-authority"] if ACCELERATOR == "cpu" else [],
    shell:
        "paired-rollouts prereg verify --freeze {params.folder:q} --amendments {params.amendments:q} "
        "--require {params.documents:q} {params.test_authority:q} --out {output:q} > {log:q} 2>&1 "
        "|| {{ cat {log:q} >&2; exit 1; }}"


LEDGER += expand([rules.prereg_verify.benchmark, rules.prereg_verify_amendments.benchmark])
