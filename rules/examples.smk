# The second environment: flaky search, written against the public pairing API alone, and its paired-
# versus-independent study (docs/pairing.md#a-second-environment-flaky-search). Target `examples` runs the
# `study` preset; `R/examples/flaky_search/tiny/register.json` is the seconds-long tiny preset.

from paired_rollouts.examples.flaky_search.study import PRESETS as EXAMPLE_PRESETS


wildcard_constraints:
    preset="|".join(EXAMPLE_PRESETS),


rule example_flaky_search:
    """The flaky-search study of one preset: its evidence, the register that states its summary, a table."""
    input:
        code=sources("examples", "pairing"),
    output:
        evidence=res("examples/flaky_search/{preset}/evidence.jsonl"),
        register=res("examples/flaky_search/{preset}/register.json"),
        table=res("examples/flaky_search/{preset}/table.txt"),
    log:
        LAYOUT.log("examples/flaky_search-{preset}"),
    benchmark:
        LAYOUT.benchmark("examples/flaky_search-{preset}")
    conda:
        software_env()
    params:
        out=output_folder,
    shell:
        "paired-rollouts examples flaky-search --preset {wildcards.preset:q} --out {params.out:q} > {log:q} 2>&1"


rule examples:
    """The second environment's study (not part of `all`: it studies another environment)."""
    input:
        res("examples/flaky_search/study/register.json"),
        res("examples/flaky_search/study/table.txt"),
