# Stage 9: the paper's tables and figures, rendered from the registers through LaTeX templates, and
# compiled into one PDF. Each table and figure is its own job and lists exactly the files it reads,
# so a changed input (or template) reruns only what shows it.

# Surrogate scales add the power table (13), the calibration register (14), amendment A3's predicted
# versus published gaps (17), the learning curves beside the paper's published ones, and the power of the
# learning rules at the paper's effect (table 19, figure power_curves); LLM scales the replay determinism
# of each run's final checkpoint (18).
TABLES = [*range(1, 13), *([13, 14, 17, 19] if SURROGATE else [18])]
FIGURES = [
    "curves_c2",
    "curves_c4",
    "luck_share",
    "spurious_variance",
    "probe_ratios",
    "final_success",
    "probe_decomposition",
    *(["surrogate_curves", "power_curves"] if SURROGATE else []),
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
        unpack(render_inputs),
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
        LAYOUT.log("render/table{number}"),
    benchmark:
        LAYOUT.benchmark("render/table{number}")
    conda:
        software_env()
    params:
        inputs=render_input_args,
        scale=SCALE["label"],
    shell:
        "paired-rollouts render table --number {wildcards.number:q} {params.inputs:q} --scale {params.scale:q} "
        "--out {output.tex:q} --html {output.html:q} > {log:q} 2>&1"


rule render_figure:
    """One figure as PDF (for LaTeX) and PNG (for a quick look)."""
    input:
        unpack(render_inputs),
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
        LAYOUT.log("render/{figure}"),
    benchmark:
        LAYOUT.benchmark("render/{figure}")
    conda:
        software_env()
    params:
        inputs=render_input_args,
        scale=SCALE["label"],
    shell:
        "paired-rollouts render figure --name {wildcards.figure:q} {params.inputs:q} --scale {params.scale:q} "
        "--out {output.pdf:q} > {log:q} 2>&1"


LEDGER += expand(rules.render_table.benchmark, number=TABLES)
LEDGER += expand(rules.render_figure.benchmark, figure=FIGURES)


# Tier 1's document (target `all`) and the registered tiers' own (target `tiers`; tier 1's is unchanged).
# At surrogate scales tier 1's document has the regime map's page (rules/regime_map.smk): `all` builds
# the map; LLM scales have no map and their document no such page. The page reads the map through its
# reader, which checks the cell files beside it: they are inputs too.
MAP_PAGE = [LAYOUT.regime_map_file()] if SURROGATE else []
MAP_PAGE_CELLS = list(rules.regime_map_assemble.input.cells) if SURROGATE else []
for _name, _job, _tables, _figures, _out, _scale, _map in (
    ("render_document", "document", TABLES, FIGURES, "paper/tables.pdf", SCALE["label"], MAP_PAGE),
    (
        "render_tiers_document",
        "tiers_document",
        TIER_TABLES,
        TIER_FIGURES,
        "paper/tiers.pdf",
        SCALE["label"] + " - registered tiers",
        [],
    ),
):

    rule:
        """Every table and figure in one document, compiled with latexmk/pdflatex (the title page states
        the checkout's commit, read when it compiles); at surrogate scales the regime map's page."""
        name:
            _name
        input:
            tables=expand(rules.render_table.output.tex, number=_tables),
            figures=expand(rules.render_figure.output.pdf, figure=_figures),
            verification=LAYOUT.verification_file(),
            decisions=LAYOUT.decision_files(),
            comparison=rules.compare.output.json,
            ledger=rules.ledger.output.json,
            regime_map=_map,
            regime_map_cells=MAP_PAGE_CELLS if _map else [],
            code=RENDER_SOURCES,
            template=str(TEMPLATES / "document.tex.j2"),
        output:
            report(res(_out), caption="../report/document.rst", category="Document"),
        log:
            LAYOUT.log(f"render/{_job}"),
        benchmark:
            LAYOUT.benchmark(f"render/{_job}")
        conda:
            software_env()
        params:
            profile=ACCELERATOR,
            scale=_scale,
            regime_map=[arg for path in _map for arg in ("--regime-map", path)],
        shell:
            "paired-rollouts render document --tables {input.tables:q} --figures {input.figures:q} "
            "--verification {input.verification:q} --decisions {input.decisions:q} --comparison {input.comparison:q} "
            "--ledger {input.ledger:q} {params.regime_map:q} --profile {params.profile:q} --scale {params.scale:q} "
            "--out {output:q} > {log:q} 2>&1"
