"""Scaling efficiency of data-parallel train cells (only when the config sets a `gpus` axis)."""

SCALING = (
    expand("results/scaling/{name}", name=["scaling.csv", "scaling.md"])
    + expand("results/scaling/scaling_efficiency.{ext}", ext=["html", "png"])
    if "gpus" in STUDY
    else []
)


rule scaling:
    input:
        records=[r for r in CELL_RECORDS if "gpus~" in r],
        code=[str(SCRIPTS / "scaling.py"), str(SRC / "aggregate" / "scaling.py")],
    output:
        SCALING,
    log:
        "results/logs/scaling.log",
    conda:
        "../envs/report.yaml"
    params:
        script=script_path("scaling.py"),
    shell:
        "python {params.script} --records results/cells --out results/scaling > {log} 2>&1"
