"""Tables, charts and the write-up from the cell records; none of this reruns a cell."""


rule tables:
    input:
        records=CELL_RECORDS + CONFIRM_RECORDS,
        code=TABLES_CODE,
        prices=PRICES,
    output:
        [
            report(path, category="Tables", labels={"table": Path(path).stem})
            for path in expand("results/tables/{name}.csv", name=TABLE_NAMES)
        ],
        expand("results/tables/{name}.md", name=TABLE_NAMES),
    log:
        "results/logs/tables.log",
    conda:
        "../envs/report.yaml"
    params:
        base=STUDY["speedup_base"],
        targets=STUDY["target_accuracy"],
        tolerance=STUDY["accuracy_tolerance"],
    script:
        "../scripts/aggregate.py"


rule charts:
    input:
        tables=expand("results/tables/{name}.csv", name=TABLE_NAMES),
        code=CHARTS_CODE,
    output:
        [
            report(path, category="Charts", labels={"chart": Path(path).stem})
            for path in expand("results/charts/{name}.png", name=CHART_NAMES)
        ],
        expand("results/charts/{name}.html", name=CHART_NAMES),
    log:
        "results/logs/charts.log",
    conda:
        "../envs/report.yaml"
    params:
        script=script_path("charts.py"),
    shell:
        # tee: where the log cannot be written (a full disk), the error still reaches the terminal
        "python {params.script} --tables results/tables --out results/charts 2>&1 "
        "| tee {log} >&2"


rule report:
    input:
        tables=expand("results/tables/{name}.csv", name=TABLE_NAMES),
        charts=CHARTS,
        prices=PRICES,
        code=REPORT_CODE,
    output:
        report(REPORT[0], category="Write-up", labels={"page": "index.html"}),
        REPORT[1],
    log:
        "results/logs/report.log",
    conda:
        "../envs/report.yaml"
    params:
        study=STUDY,
    script:
        "../scripts/report.py"
