#!/usr/bin/env bash
# Run a study with the workflow itself on an offline GPU host, in a slice that ends in time.
#
#   benchmarks/gpu_host.sh CONFIG BUDGET_S OUTDIR [PATTERN]
#
# PATTERN (an extended regular expression over the records' paths, e.g. 'task~serve_image')
# runs only the matching cells: one slice per workload, or a few cells again.
# The host needs Python with torch; what it lacks (snakemake's closure, jsonschema, keras) travels
# as wheels in .whl (README, Results). Cells whose records already lie under results/cells (carried
# from an earlier slice) are not run again; the rest run one at a time until BUDGET_S, when
# snakemake is interrupted and cleans up the cell it was running. The records, cell logs and the
# snakemake log are packed into OUTDIR/records-<time>.tgz; run it again to resume. Tables, charts
# and the write-up are made afterwards on any machine with the report environment.
set -euo pipefail
config=${1:?config file}
budget=${2:-500}
outdir=${3:?output folder}
pattern=${4:-.}
mkdir -p "$outdir" /tmp/devicebench-bin results/cells results/logs/cells
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
# The rules call `python`: the host's venv python3, through a script (a symlink loses the venv).
printf '#!/bin/sh\nexec python3 "$@"\n' >/tmp/devicebench-bin/python
chmod +x /tmp/devicebench-bin/python
export PATH=/tmp/devicebench-bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export KERAS_HOME=/tmp/keras-home
missing=$(python3 - "$config" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "src")
from devicebench.config import check_config, combine_configs, load_config
from devicebench.grid import expand_grid
import yaml
default = yaml.safe_load(Path("config/config.yaml").read_text())
study = check_config(combine_configs(default, [yaml.safe_load(Path(sys.argv[1]).read_text())]))
for cell in expand_grid(study):
    path = Path("results/cells") / f"{cell.cell_id}.json"
    if not path.exists():
        print(path)
PY
)
missing=$(echo "$missing" | grep -E "$pattern" || true)
echo "[gpu_host] $(echo "$missing" | grep -c . || true) cells to run, budget ${budget}s"
status=0
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086  # one target per word
    # targets first: --configfile takes every word after it
    timeout -s INT -k 30 "$budget" python3 -m snakemake $missing --cores all \
        --configfile "$config" >"$outdir/snakemake.log" 2>&1 || status=$?
fi
echo "[gpu_host] snakemake exit $status; $(find results/cells -name '*.json' | wc -l) records"
tar czf "$outdir/records-$(date +%H%M%S).tgz" results/cells results/logs/cells
tail -5 "$outdir/snakemake.log" 2>/dev/null || true
