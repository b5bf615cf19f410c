"""The confirm step of a serving sweep (serve.slo.confirm: best): per (task, model, device), the
best sweep cell by its probes, run again with the confirming runs (plan.confirm)."""


rule confirm_serve:
    input:
        sweep=confirm_sweep,
        data=confirm_data,
    output:
        "results/cells/confirm/{group}.json",
    log:
        "results/logs/cells/confirm/{group}.log",
    wildcard_constraints:
        group="task~[^/]+/model~[^/]+/device~[^/]+",
    conda:
        confirm_env
    threads: confirm_threads
    resources:
        **confirm_cluster_resources(),
        bench=confirm_bench,
        gpu=confirm_gpus,
        gpu_model=confirm_gpu_model,
        cpus_per_task=confirm_threads,
    params:
        script=script_path("confirm_serve.py"),
        args=confirm_args,
        # the price file ranks the candidates when the step runs; not an input: editing prices
        # reruns the aggregates, never minutes of confirming runs (docs/serving.md)
        prices=PRICES,
    shell:
        "python {params.script} {params.args} --sweep {input.sweep} --prices {params.prices:q} "
        "--data {input.data} --out {output} "
        "--log-dir results/logs/cells/confirm/{wildcards.group} > {log} 2>&1"
