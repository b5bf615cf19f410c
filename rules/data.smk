"""Datasets: synthetic (default, offline) or the real files, verified by SHA-256."""


rule prepare_data:
    output:
        "results/data/{dataset}/{source}/manifest.json",
    log:
        "results/logs/data/{dataset}-{source}.log",
    conda:
        "../envs/torch.yaml"
    resources:
        # the timed cells' slot: preparing one data set never runs beside a timed cell
        bench=cell_bench,
    params:
        script=script_path("prepare_data.py"),
        args=lambda wc: data_args(wc.dataset, wc.source),
    shell:
        "python {params.script} --dataset {wildcards.dataset} "
        "--source {wildcards.source} --out $(dirname {output}) {params.args} > {log} 2>&1"
