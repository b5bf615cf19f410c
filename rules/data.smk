"""Datasets: synthetic (default, offline) or the real files, verified by SHA-256."""


rule prepare_data:
    output:
        "results/data/{dataset}/{source}/manifest.json",
    log:
        "results/logs/data/{dataset}-{source}.log",
    wildcard_constraints:
        dataset="[A-Za-z0-9_]+",
        source="synthetic|download|path",
    conda:
        "../envs/torch.yaml"
    resources:
        # the timed cells' slot: preparing one data set never runs beside a timed cell
        bench=cell_bench,
    params:
        script=script_path("prepare_data.py"),
        out=lambda wc: f"results/data/{wc.dataset}/{wc.source}",
        args=lambda wc: data_args(wc.dataset, wc.source),
    shell:
        "python {params.script} --dataset {wildcards.dataset} "
        "--source {wildcards.source} --out {params.out} {params.args} --by-workflow "
        "> {log:q} 2>&1"
