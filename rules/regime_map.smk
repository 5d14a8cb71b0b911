# The regime map (target `regime_map`, surrogate scales): when does pairing help? One job per cell of the
# grid in the scale's `regime_map:` section (seed pairs of paired and independent runs from the calibrated
# step-0 policy, and the cell's step-0 predictors), then the map with its heatmaps; its page (in words, with
# the Spearman table) is in the study's document (rules/render.smk), so target `all` builds the map too. A
# cell's file is named by the hash of its own factor values and its job is given only those (settings
# WORKFLOW_KEYS leave the grid's lists out), so adding a value to a factor runs only the new cells. Every
# cell job is in the group `regime_map_cells`; under SLURM the slurm-cpu profile's `group-components`
# batches 8 of them to a submission (`--group-components regime_map_cells=N` sets another N); locally they
# run one by one.

from paired_rollouts.surrogate.regime_map import map_cells

MAP_GRID = settings_of_scale.Settings.parse(json.loads(regime_map_grid())).regime_map
MAP_CELLS = {cell.id: cell for cell in map_cells(MAP_GRID)}


wildcard_constraints:
    cell="cell-[0-9a-f]{12}",


rule regime_map_cell:
    """One cell: its seed pairs' learning curves, its luck share, its exact step-0 gradient-variance ratio
    and Equation 5's two sides."""
    input:
        pools=LAYOUT.pools(),
        calibration=LAYOUT.step0_file(),
        code=sources(*SIMULATOR, "agents", "evaluation", "training", "probe", "surrogate", "stats"),
    output:
        LAYOUT.regime_map_cell("{cell}"),
    log:
        LAYOUT.log("map/{cell}"),
    benchmark:
        LAYOUT.benchmark("map/{cell}")
    group:
        "regime_map_cells"
    conda:
        software_env()
    params:
        cell=lambda wildcards: json.dumps(MAP_CELLS[wildcards.cell].factors(), sort_keys=True),
        tasks_dir=folder_of("pools"),
        settings=stage_settings("training", "diagnostics", "probe", "surrogate", "regime_map"),
    shell:
        "paired-rollouts surrogate map-cell --cell {params.cell:q} --calibration {input.calibration:q} "
        "--tasks-dir {params.tasks_dir:q} --settings {params.settings:q} --out {output:q} > {log:q} 2>&1"


rule regime_map_assemble:
    """The map (cells recomputed through their reader, summary, Spearman correlations) and the heatmaps with
    the significant cells marked."""
    input:
        cells=[LAYOUT.regime_map_cell(cell_id) for cell_id in sorted(MAP_CELLS)],
        code=sources("surrogate", "render", "stats"),
    output:
        json=LAYOUT.regime_map_file(),
        figure=LAYOUT.regime_map_figure("pdf"),
        png=LAYOUT.regime_map_figure("png"),
    log:
        LAYOUT.log("map/assemble"),
    benchmark:
        LAYOUT.benchmark("map/assemble")
    conda:
        software_env()
    params:
        grid=regime_map_grid(),
        label=SCALE["label"],
    shell:
        "paired-rollouts surrogate map --cells {input.cells:q} --settings {params.grid:q} "
        "--scale {params.label:q} --out {output.json:q} --figure {output.figure:q} > {log:q} 2>&1"


rule regime_map:
    """Target: the regime map and its heatmaps (its page is in the document of target `all`)."""
    input:
        rules.regime_map_assemble.output,


# The map's jobs made the document's map page (target `all`), so the cost ledger counts them (stage `map`).
LEDGER += expand(rules.regime_map_cell.benchmark, cell=sorted(MAP_CELLS))
LEDGER += expand(rules.regime_map_assemble.benchmark)
