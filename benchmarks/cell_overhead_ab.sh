#!/usr/bin/env bash
# Before/after of a change to a cell's fixed cost: the same cells run by two code trees, in turns.
#
#   benchmarks/cell_overhead_ab.sh BEFORE_TREE AFTER_TREE OUTDIR [ORDER]
#
# A tree is a checkout or an export of the repository (git archive COMMIT | tar -x -C DIR).
# ORDER (default "before/1 after/1 after/2 before/2") names the runs in the order they go; each
# runs the cells of benchmarks/cell_overhead.yaml (this checkout's) with its tree's code in a
# fresh folder OUTDIR/RUN (data prepared first, untimed), one snakemake call, its log beside
# them. Then: python benchmarks/cell_overhead.py OUTDIR/before --log ... (RESULTS.md).
# `python` (or $PYTHON) must have the project's environment (snakemake): activate it first.
set -euo pipefail
before=$(realpath "${1:?before tree}")
after=$(realpath "${2:?after tree}")
outdir=$(realpath -m "${3:?output folder}")
order=${4:-before/1 after/1 after/2 before/2}
config=$(realpath "$(dirname "$0")/cell_overhead.yaml")
if ! ${PYTHON:-python} -c "import snakemake" 2>/dev/null; then
    echo "${PYTHON:-python} has no snakemake: activate the project's environment" >&2
    exit 2
fi
for run in $order; do
    case ${run%%/*} in
        before) tree=$before ;;
        after) tree=$after ;;
        *) echo "run $run: expected before/N or after/N" >&2; exit 2 ;;
    esac
    work=$outdir/$run
    mkdir -p "$work"
    cp "$config" "$work/config.yaml"
    sm() {
        PYTHONPATH=$tree/src ${PYTHON:-python} -m snakemake --snakefile "$tree/Snakefile" \
            --directory "$work" --configfile "$work/config.yaml" --cores 2 "$@"
    }
    data=$(sm -n 2>/dev/null | grep -oE "results/data/\S+/manifest\.json" | sort -u)
    # shellcheck disable=SC2086  # one target per word
    sm $data >"$work/prep.log" 2>&1
    cells=$(sm -n 2>/dev/null | grep -oE "results/cells/\S+\.json" | sort -u)
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    sm $cells >"$work/snakemake.log" 2>&1
    end=$(date +%s.%N)
    echo "$run: $(echo "$cells" | grep -c .) cells in $(echo "$end - $start" | bc) s;" \
        "$(uptime | sed 's/.*load/load/')"
done
