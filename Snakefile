"""devicebench: deep-learning training and inference on CPUs and GPUs, one job per grid cell."""

from snakemake.utils import min_version

min_version("9.0")


include: "rules/config_file.smk"


configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/cells.smk"
include: "rules/confirm.smk"
include: "rules/aggregate.smk"
include: "rules/scaling.smk"


# On a cluster only the cells are jobs; data preparation (which may download) and the
# aggregates run where snakemake runs.
localrules:
    all,
    prepare_data,
    tables,
    charts,
    scaling,


# The records are targets themselves: Snakemake does not rerun a missing input of outputs that
# are up to date, so without them a deleted record would stay missing once the tables exist.
rule all:
    default_target: True
    input:
        CELL_RECORDS,
        CONFIRM_RECORDS,
        TABLES,
        CHARTS,
        REPORT,
        SCALING,
