"""One real tiny generate cell end to end through scripts/run_cell.py (a fresh worker process),
and the CUDA-graph generator's cell on the CPU recorded skipped with its reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

from devicebench.aggregate.generation import generation_best, generation_table
from devicebench.data import prepare_dataset

SCRIPT = str(REPO / "scripts" / "run_cell.py")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nietzsche")
    prepare_dataset("nietzsche", "synthetic", folder, train_samples=64, test_samples=32, seed=3)
    return folder / "manifest.json"


def generate_cell(out, manifest, generator: str, *settings: str, env=None) -> dict:
    command = [
        sys.executable, SCRIPT, "task=textgen_llm", "model=llama-tiny", "mode=generate",
        "batch_size=2", "threads=1", "repetitions=2", "prompt_len=24", "output_len=6",
        f"generator={generator}", "generate=" + json.dumps({"bandwidth_mb": 32}), *settings,
        "--data", str(manifest), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def test_a_tiny_generate_cell_records_its_token_clock_and_bound(tmp_path, manifest) -> None:
    record = generate_cell(tmp_path / "cell.json", manifest, "torch_eager")
    assert record["status"] == "ok", record["message"]
    assert record["axes"]["generator"] == "torch_eager" and record["axes"]["mode"] == "generate"
    g = record["generation"]
    # counted, and as asked: 2 repetitions x 2 requests x 6 tokens, 24 prompt tokens each
    assert g["output_tokens"] == 24 and g["prompt_tokens"] == 96 and g["requests"] == 4
    assert 0 < g["ttft_p50_s"] <= g["ttft_p99_s"]
    assert 0 < g["tpot_p50_s"] <= g["tpot_p99_s"] and g["itl_p99_s"] > 0
    assert g["decode_tokens_per_s"] > 0 and g["output_tokens_per_s"] > 0
    assert g["memory_bandwidth_gbs"] > 0 and "cpu read" in g["bandwidth_method"]
    assert 0 < g["bandwidth_fraction"] <= 1.05
    assert g["weight_bytes"] > 0 and g["kv_cache_bytes"] > 0 and g["format"] == "fp32"
    assert record["quality"] == {"status": "n/a: random weights"}
    assert record["data"]["synthetic"] is True and record["energy"]["samples"] == 24
    assert "bandwidth_measured" in record["timings"]["marks"]
    # the generation table reads it as a row, priced, and its best rows pick it
    prices = {"cpu": {"per_vcpu_hour": 0.05}}
    table = generation_table([tmp_path / "cell.json"], prices)
    row = table.iloc[0]
    assert row["status"] == "ok" and row["device_label"] == "cpu:1t"
    assert row["decode_tokens_per_s"] == g["decode_tokens_per_s"]
    assert row["cost_per_million_tokens_usd"] == pytest.approx(
        0.05 / 3600 / g["output_tokens_per_s"] * 1e6
    )
    best = generation_best(table)
    assert list(best["criterion"]) == ["cheapest per million output tokens"]  # batch 2: no b-1 row


def test_the_cuda_graph_generator_is_skipped_on_the_cpu_with_its_reason(tmp_path, manifest):
    record = generate_cell(tmp_path / "cell.json", manifest, "torch_static")
    assert record["status"] == "skipped"
    assert "runs on cuda here, not cpu" in record["message"]


def test_the_static_decode_step_compiles_to_one_graph_with_eager_tokens() -> None:
    """torch_static's step under torch.compile(fullgraph=True): no graph break, one graph for
    every generation (its cache is reused), the eager loop's tokens. CUDA graphs need a GPU."""
    import torch
    from torch._dynamo.utils import counters

    from devicebench.engines.generative._torch_loop import TorchGreedy
    from devicebench.frameworks.generator import time_generation
    from devicebench.workloads import textgen_llm

    torch._dynamo.reset()
    counters.clear()
    model = textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=2)
    prompts = [[5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16]]
    eager = time_generation(TorchGreedy(model, "cpu", static=False, compile=False), prompts, 5)
    static = TorchGreedy(model, "cpu", static=True, compile=True, max_cache_len=11)
    for _ in range(2):
        assert time_generation(static, prompts, 5).tokens == eager.tokens
    assert counters["stats"]["unique_graphs"] == 1


def test_an_openvino_genai_cell_records_the_file_it_ran(tmp_path, manifest) -> None:
    import os

    pytest.importorskip("openvino_genai")
    pytest.importorskip("llama_cpp", reason="llama.cpp quantizes its file (the tests' extra)")
    env = os.environ | {"DEVICEBENCH_GGUF_DIR": str(tmp_path / "gguf")}
    settings = ("batch_size=1", "precision=int4")
    record = generate_cell(tmp_path / "cell.json", manifest, "openvino_genai", *settings, env=env)
    assert record["status"] == "ok", record["message"]
    g = record["generation"]
    assert g["output_tokens"] == 12 and g["requests"] == 2
    assert g["format"] == "GGUF Q4_0 (llama.cpp quantize)" and "LATENCY" in g["hint"]
    assert g["weight_bytes"] == next((tmp_path / "gguf").glob("*-Q4_0.gguf")).stat().st_size
    assert 0 < g["bandwidth_fraction"] <= 1.05


def test_the_static_step_compiles_one_graph_per_bucket_and_padding_keeps_a_rows_tokens() -> None:
    """The generate server pads a batch to its bucket (1, 2, 4 ... rows): the compiled step keeps
    one graph per batch size (dynamic=False: no graph traced for any size, which CUDA graphs
    would record again per size anyway), and a stream's tokens do not depend on the padding
    rows beside it."""
    import torch
    from torch._dynamo.utils import counters

    from devicebench.engines.generative._torch_loop import TorchGreedy
    from devicebench.frameworks.generator import time_generation
    from devicebench.serving.generate_streams import batch_buckets
    from devicebench.workloads import textgen_llm

    torch._dynamo.reset()
    counters.clear()
    model = textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=3)
    prompt = [21, 22, 23, 24, 25, 26]
    static = TorchGreedy(model, "cpu", static=True, compile=True, max_cache_len=11)
    rows = {n: time_generation(static, [prompt] * n, 5).tokens for n in batch_buckets(4)}
    assert list(rows) == [1, 2, 4]
    assert all(tokens == [rows[1][0]] * n for n, tokens in rows.items())
    assert counters["stats"]["unique_graphs"] == 3
    time_generation(static, [prompt] * 2, 5)  # a bucket seen before: its graph, no new one
    assert counters["stats"]["unique_graphs"] == 3
