#!/usr/bin/env bash
# Build the wheels a GPU host call carries (`.whl`, at most 64 MiB with the tree), for Python 3.12.
#
#   benchmarks/gpu_wheels.sh SET OUTDIR
#
# SET llm: generate cells (config/h200.yaml): snakemake's closure, gguf, torchao, llama.cpp built
#   for the host's CPU (AVX-512, no AMX, no OpenMP; about 4 minutes on 2 cores) and trimmed,
#   OpenVINO trimmed to its CPU plugin and GGUF/IR readers, OpenVINO GenAI and its tokenizers,
#   and the serving wheels for the served cells: 52 wheels, 59.3 MB (2026-11-29).
# SET serve: serve cells (config/h200_serving.yaml): snakemake's closure, the serving wheels and
#   OpenVINO with its ONNX and PyTorch front ends: 46 wheels, 44 MB (2026-11-29).
# What the host's image already has (KINDS.md's package list, 2026-11-17: numpy, pyyaml,
# requests, ...) is left out, and pulp (snakemake imports it only for its ILP scheduler).
# gpu_host.sh checks on the host that every carried wheel's requirements are there
# (benchmarks/wheel_requirements.py) before any cell runs. docs/gpu-hosts.md says why each is so.
set -euo pipefail
set_name=${1:?SET: llm or serve}
out=${2:?output folder}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pin() { grep -o "\"$1==[^\"]*\"" pyproject.toml | tr -d '"' | head -1; }
# wheels for the host's CPython 3.12 on x86-64 Linux (pip matches each tag exactly)
for3_12=(--only-binary=:all: --python-version 3.12 --implementation cp)
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1; do
    for3_12+=(--platform "${tag}_x86_64")
done
for3_12+=(--platform any)
download() {
    echo "[wheels] downloading $*" >&2
    python3 -m pip download -q --no-deps "${for3_12[@]}" -d "$work/dl" "$@"
}
# snakemake's closure for 3.12, less what the host has; connection_pool is a source archive
python3 -m pip download -q --no-deps -d "$work/sdist" connection_pool==0.0.3
python3 -m pip wheel -q --no-deps -w "$work/dl" "$work"/sdist/*
echo "[wheels] snakemake's closure" >&2
python3 -m pip download -q "${for3_12[@]}" -d "$work/dl" -f "$work/dl" "$(pin snakemake)"
host_has="numpy pulp attrs certifi charset_normalizer idna jinja2 markupsafe packaging psutil
pyyaml requests tabulate tqdm typing_extensions urllib3 wrapt"
# the serving wheels: fastapi imports opentelemetry-api (its absence killed two served cells)
download "$(pin fastapi)" "$(pin starlette)" "$(pin uvicorn)" "$(pin httptools)" \
    "$(pin mlcommons-loadgen)" "$(pin opentelemetry-api)" "$(pin openvino)" \
    "$(pin openvino-telemetry)"
drop="libopenvino_intel_gpu_plugin.so libopenvino_intel_npu_plugin.so cache.json
libopenvino_tensorflow* libopenvino_paddle* libopenvino_jax*"
frontends="jax paddle tensorflow"
if [ "$set_name" = llm ]; then
    download "$(pin gguf)" "$(pin torchao)" "$(pin openvino-genai)" "$(pin openvino-tokenizers)" \
        "$(pin diskcache)"
    drop="$drop libopenvino_pytorch* libopenvino_onnx*" # the GGUF and IR readers stay
    frontends="$frontends pytorch onnx"
    echo "[wheels] building llama-cpp-python (about 4 minutes on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
-DGGML_OPENMP=OFF" python3 -m pip wheel -q --no-cache-dir --no-deps \
        --no-binary llama-cpp-python -w "$work/dl" "$(pin llama-cpp-python)"
    # each library once as .so and once as .so.0 (what the loader asks for); no headers
    zip -q -d "$work"/dl/llama_cpp_python-*.whl 'lib/*' 'include/*' 'llama_cpp/lib/*.so.0.*' \
        'bin/*' || true
elif [ "$set_name" != serve ]; then
    echo "unknown set '$set_name': llm or serve" >&2
    exit 2
fi
# OpenVINO: its CPU plugin and the readers the cells use; the rest of the wheel as published
patterns=()
for name in $drop; do patterns+=("openvino/libs/$name"); done
for name in $frontends; do patterns+=("openvino/frontend/$name/*.so"); done
zip -q -d "$work"/dl/openvino-[0-9]*.whl 'openvino/include/*' "${patterns[@]}"
for wheel in "$work"/dl/*.whl; do
    name=$(basename "$wheel" | cut -d- -f1 | tr 'A-Z' 'a-z')
    case " $(echo $host_has) " in *" $name "*) continue ;; esac
    cp "$wheel" "$out/"
done
echo "[wheels] $set_name: $(ls "$out" | wc -l) wheels, $(du -sh "$out" | cut -f1) in $out" >&2
