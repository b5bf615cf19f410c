"""Tables and charts from the cell records; none of this reruns a cell."""


rule tables:
    input:
        records=CELL_RECORDS,
        code=TABLES_CODE,
    output:
        expand("results/tables/{name}.{ext}", name=TABLE_NAMES, ext=["csv", "md"]),
    log:
        "results/logs/tables.log",
    conda:
        "../envs/report.yaml"
    params:
        base=STUDY["speedup_base"],
    script:
        "../scripts/aggregate.py"


rule charts:
    input:
        cells="results/tables/cells.csv",
        speedup="results/tables/speedup.csv",
        code=CHARTS_CODE,
    output:
        CHARTS,
    log:
        "results/logs/charts.log",
    conda:
        "../envs/report.yaml"
    shell:
        "python {input.code[0]} --cells {input.cells} --speedup {input.speedup} "
        "--out results/charts > {log} 2>&1"
