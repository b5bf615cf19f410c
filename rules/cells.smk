"""One job per grid cell: a fresh process that measures the cell and writes its record."""


rule cell:
    input:
        data=cell_data,
    output:
        "results/cells/{cell}.json",
    log:
        "results/logs/cells/{cell}.log",
    wildcard_constraints:
        cell="task~.+",
    conda:
        cell_env
    threads: cell_threads
    resources:
        **cell_cluster_resources(),
        bench=cell_bench,
        gpu=cell_gpus,
        gpu_model=cell_gpu_model,
        cpus_per_task=cell_threads,
    params:
        script=script_path("run_cell.py"),
        args=cell_args,
    shell:
        "python {params.script} {params.args} --data {input.data} --out {output} "
        "--log-dir results/logs/cells/{wildcards.cell} > {log} 2>&1"
