# Stage 9: the paper's tables and figures, rendered from the registers through LaTeX templates, and
# compiled into one PDF. Each table and figure is its own job and lists exactly the files it reads,
# so a changed input (or template) reruns only what shows it.

# Surrogate scales add the power table (13), the calibration register (14) and the learning curves beside
# the paper's published ones.
TABLES = [*range(1, 13), *([13, 14] if SURROGATE else [])]
FIGURES = [
    "curves_c2",
    "curves_c4",
    "luck_share",
    "spurious_variance",
    "probe_ratios",
    "final_success",
    "probe_decomposition",
    *(["surrogate_curves"] if SURROGATE else []),
]

# The registered tiers' document (target `tiers`): their predictions, comparisons and the dose response.
TIER_TABLES = [15, 16]
TIER_FIGURES = ["dose_response"]


wildcard_constraints:
    number=r"\d+",
    figure="|".join(FIGURES + TIER_FIGURES),


rule render_table:
    """One LaTeX table (booktabs) from its source registers."""
    input:
        unpack(table_inputs),
        code=RENDER_SOURCES,
        templates=table_templates,
    output:
        tex=res("tables/table{number}.tex"),
        html=report(
            res("tables/table{number}.html"),
            caption="../report/table.rst",
            category="Tables",
            subcategory="Table {number}",
            labels={"table": "{number}"},
        ),
    log:
        res("logs/render/table{number}.log"),
    benchmark:
        res("benchmarks/render/table{number}.tsv")
    conda:
        software_env()
    params:
        inputs=table_input_args,
        scale=SCALE["label"],
    shell:
        "paired-rollouts render table --number {wildcards.number:q} {params.inputs:q} --scale {params.scale:q} "
        "--out {output.tex:q} --html {output.html:q} > {log:q} 2>&1"


rule render_figure:
    """One figure as PDF (for LaTeX) and PNG (for a quick look)."""
    input:
        unpack(figure_inputs),
        code=RENDER_SOURCES,
    output:
        pdf=res("figures/{figure}.pdf"),
        png=report(
            res("figures/{figure}.png"),
            caption="../report/figure.rst",
            category="Figures",
            labels={"figure": "{figure}"},
        ),
    log:
        res("logs/render/{figure}.log"),
    benchmark:
        res("benchmarks/render/{figure}.tsv")
    conda:
        software_env()
    params:
        inputs=figure_input_args,
        scale=SCALE["label"],
    shell:
        "paired-rollouts render figure --name {wildcards.figure:q} {params.inputs:q} --scale {params.scale:q} "
        "--out {output.pdf:q} > {log:q} 2>&1"


rule render_document:
    """Every table and figure in one document, compiled with latexmk/pdflatex."""
    input:
        tables=expand(res("tables/table{number}.tex"), number=TABLES),
        figures=expand(res("figures/{figure}.pdf"), figure=FIGURES),
        verification=verification_file(),
        decisions=decision_files(),
        comparison=comparison_file(),
        ledger=res("ledger.json"),
        code=RENDER_SOURCES,
        template=document_template(),
    output:
        report(res("paper/tables.pdf"), caption="../report/document.rst", category="Document"),
    log:
        res("logs/render/document.log"),
    benchmark:
        res("benchmarks/render/document.tsv")
    conda:
        software_env()
    params:
        commit=git_commit(),
        profile=ACCELERATOR,
        scale=SCALE["label"],
    shell:
        "paired-rollouts render document --tables {input.tables:q} --figures {input.figures:q} "
        "--verification {input.verification:q} --decisions {input.decisions:q} --comparison {input.comparison:q} "
        "--ledger {input.ledger:q} --profile {params.profile:q} --scale {params.scale:q} "
        "--commit {params.commit:q} --out {output:q} > {log:q} 2>&1"


rule render_tiers_document:
    """The registered tiers' tables and figure in their own document (tier 1's document is unchanged)."""
    input:
        tables=expand(res("tables/table{number}.tex"), number=TIER_TABLES),
        figures=expand(res("figures/{figure}.pdf"), figure=TIER_FIGURES),
        verification=verification_file(),
        decisions=decision_files(),
        comparison=comparison_file(),
        ledger=res("ledger.json"),
        code=RENDER_SOURCES,
        template=document_template(),
    output:
        report(res("paper/tiers.pdf"), caption="../report/document.rst", category="Document"),
    log:
        res("logs/render/tiers_document.log"),
    benchmark:
        res("benchmarks/render/tiers_document.tsv")
    conda:
        software_env()
    params:
        commit=git_commit(),
        profile=ACCELERATOR,
        scale=SCALE["label"] + " - registered tiers",
    shell:
        "paired-rollouts render document --tables {input.tables:q} --figures {input.figures:q} "
        "--verification {input.verification:q} --decisions {input.decisions:q} --comparison {input.comparison:q} "
        "--ledger {input.ledger:q} --profile {params.profile:q} --scale {params.scale:q} "
        "--commit {params.commit:q} --out {output:q} > {log:q} 2>&1"
