#!/bin/bash
# A few infer cells run by hand, each as a full cell and as a speed-only one (quality=false),
# in turns (full, speed) per cell, twice: the records feed benchmarks/cell_overhead.py.
#   benchmarks/speed_only_ab.sh OUT        (writes OUT/full/rN/cI.json and OUT/speed/rN/cI.json)
set -u
R=${1:?usage: speed_only_ab.sh OUT}
cd "$(dirname "$0")/.."
COMMON="mode=infer threads=2 epochs=1 steps_per_epoch=20 repetitions=1 min_repetition_s=0 warmup_steps=1"
cells=("task=mnist_mlp precision=fp32 batch_size=128"
       "task=mnist_mlp precision=bf16 batch_size=128"
       "task=mnist_cnn engine=onnxruntime precision=fp32 batch_size=128")
for round in 1 2; do
  for i in "${!cells[@]}"; do
    for variant in full speed; do
      more=""; [ "$variant" = speed ] && more="quality=false"
      out=$R/$variant/r$round/c$i.json; mkdir -p "$(dirname "$out")"
      echo "$(date -u +%T) round $round cell $i $variant"
      # shellcheck disable=SC2086  # the terms are words
      nice -n 10 python scripts/run_cell.py ${cells[$i]} $COMMON $more --out "$out" > "$out.log" 2>&1
      echo "rc $?"
    done
  done
done
