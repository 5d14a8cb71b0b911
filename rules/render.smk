# Stage 9: the paper's tables and figures, rendered from the registers through LaTeX templates, and
# compiled into one PDF. Each table and figure is its own job and lists exactly the files it reads,
# so a changed input (or template) reruns only what shows it.

TABLES = list(range(1, 13))
FIGURES = ["curves_c2", "curves_c4", "luck_share", "spurious_variance", "probe_ratios", "final_success",
           "probe_decomposition"]

wildcard_constraints:
    number=r"\d+",
    figure="|".join(FIGURES),


rule render_table:
    """One LaTeX table (booktabs) from its source registers."""
    input:
        unpack(table_inputs),
        code=RENDER_SOURCES,
        templates=table_templates,
    output:
        tex="results/tables/table{number}.tex",
        html=report("results/tables/table{number}.html", caption="../report/table.rst", category="Tables",
                    subcategory="Table {number}", labels={"table": "{number}"}),
    params:
        inputs=table_input_args,
        scale=SCALE["label"],
    conda:
        software_env()
    log:
        "results/logs/render/table{number}.log",
    benchmark:
        "results/benchmarks/render/table{number}.tsv",
    shell:
        "paired-rollouts render table --number {wildcards.number} {params.inputs} --scale {params.scale:q} "
        "--out {output.tex} --html {output.html:q} > {log} 2>&1"


rule render_figure:
    """One figure as PDF (for LaTeX) and PNG (for a quick look)."""
    input:
        unpack(figure_inputs),
        code=RENDER_SOURCES,
    output:
        pdf="results/figures/{figure}.pdf",
        png=report("results/figures/{figure}.png", caption="../report/figure.rst", category="Figures",
                   labels={"figure": "{figure}"}),
    params:
        inputs=figure_input_args,
        scale=SCALE["label"],
    conda:
        software_env()
    log:
        "results/logs/render/{figure}.log",
    benchmark:
        "results/benchmarks/render/{figure}.tsv",
    shell:
        "paired-rollouts render figure --name {wildcards.figure} {params.inputs} --scale {params.scale:q} "
        "--out {output.pdf} > {log} 2>&1"


rule render_document:
    """Every table and figure in one document, compiled with latexmk/pdflatex."""
    input:
        tables=expand("results/tables/table{number}.tex", number=TABLES),
        figures=expand("results/figures/{figure}.pdf", figure=FIGURES),
        verification=verification_file(),
        comparison=comparison_file(),
        ledger=f"{RESULTS}/ledger.json",
        code=RENDER_SOURCES,
        template=document_template(),
    output:
        report("results/paper/tables.pdf", caption="../report/document.rst", category="Document"),
    params:
        commit=git_commit(),
        profile=ACCELERATOR,
        scale=SCALE["label"],
    conda:
        software_env()
    log:
        "results/logs/render/document.log",
    benchmark:
        "results/benchmarks/render/document.tsv",
    shell:
        "paired-rollouts render document --tables {input.tables} --figures {input.figures} "
        "--verification {input.verification} --comparison {input.comparison:q} --ledger {input.ledger:q} --profile {params.profile} --scale {params.scale:q} "
        "--commit {params.commit} --out {output} > {log} 2>&1"
