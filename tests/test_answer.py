"""The answer by workload class and the words it uses, on small hand-made verdict rows: which
class a row falls in, when a lead is too close to call, ranges from the aggregate's columns when
present, and an honest "not measured" where a class has no row."""

from __future__ import annotations

import math

import pandas as pd

from devicebench.report.answer import CLASSES, answer, call, row_ranges
from devicebench.report.verdict import BEST_COLUMNS
from devicebench.report.words import applicable, column_name, configuration, lead, money


def row(task, mode, ratio, **extra):
    cpu_cost, gpu_cost = ratio, 1.0
    out = dict.fromkeys(BEST_COLUMNS)
    out.update(
        task=task,
        mode=mode,
        pick="cheapest",
        boot_id="b",
        code_version="v",
        cpu_cell=f"{task}-{mode}-cpu",
        gpu_cell=f"{task}-{mode}-gpu",
        cpu_samples_per_s=100.0,
        gpu_samples_per_s=100.0 * ratio,
        cpu_usd_per_million=cpu_cost,
        gpu_usd_per_million=gpu_cost,
        cost_ratio=ratio,
        cheaper="gpu" if ratio > 1 else "cpu",
    )
    out.update(extra)
    return out


def cells_for(best: pd.DataFrame, **extra) -> pd.DataFrame:
    rows = []
    for _, r in best.iterrows():
        for side, device in (("cpu", "cpu"), ("gpu", "cuda")):
            rows.append(
                dict(
                    cell_id=r[f"{side}_cell"],
                    device=device,
                    threads=16,
                    cpu_cores=16,
                    batch_size=32,
                    status="ok",
                    median_s=1.0,
                    iqr_s=0.1,
                    **extra,
                )
            )
    return pd.DataFrame(rows)


def test_each_row_lands_in_its_class_and_missing_classes_say_so():
    best = pd.DataFrame(
        [
            row("text_classify", "train", 40.0),
            row("mnist_mlp", "train", 0.5),
            row("mnist_cnn", "converge", 3.0),
            row("mnist_cnn", "infer", 2.0),
        ]
    )
    got = {a.key: a for a in answer(best, cells_for(best))}
    assert list(got) == [c.key for c in CLASSES]
    assert got["train_transformers"].verdict == "GPU cheaper"
    assert got["train_transformers"].range == "GPU 40x cheaper"
    assert got["train_small"].verdict == "GPU cheaper in 1 of 2, CPU in 1 (mnist_mlp train)"
    assert got["train_small"].range == "CPU 2.0x to GPU 3.0x cheaper"
    assert got["batch_inference"].verdict == "GPU cheaper"
    assert got["serving_bound"].verdict == "not measured: no serve cell in this study"
    assert got["llm_generation"].verdict.startswith("not measured: ")
    assert not got["llm_generation"].measured and got["llm_generation"].range == "—"


def test_closed_loop_serving_is_not_serving_at_a_bound_but_a_bounded_row_is():
    best = pd.DataFrame([row("serve_image", "serve", 1.5)])
    serving = pd.DataFrame({"cell_id": list(best["gpu_cell"]), "p99_ms": [321.0]})
    serve = answer(best, cells_for(best), serving)[3]
    assert serve.verdict == (
        "not measured: the 1 serve comparison ran a closed-loop client pool (p99 321-321 ms) "
        "with no latency bound"
    )
    bounded = pd.DataFrame([row("serve_image", "serve", 1.5, p99_bound_ms=100.0)])
    assert answer(bounded, cells_for(bounded))[3].verdict == "GPU cheaper"
    searched = pd.DataFrame([row("serve_text", "serve", 0.5, cpu_max_valid_qps=40.0)])
    assert answer(searched, cells_for(searched))[3].verdict == "CPU cheaper"
    breakeven = pd.DataFrame([row("serve_text", "serve", 0.5, breakeven_gpu_usd_per_hour=2.0)])
    assert answer(breakeven, cells_for(breakeven))[3].verdict.startswith("not measured: ")


def test_serve_rows_that_never_ran_the_search_say_so():
    from devicebench.aggregate.serving_best import PREDATES_NOTE

    unsearched = [row("serve_image", "serve", math.nan, note=PREDATES_NOTE, model=m) for m in "ab"]
    best = pd.DataFrame(unsearched)
    assert answer(best, cells_for(best))[3].verdict == (
        "not measured: no serve cell ran the latency-bound search (serve_image serve (a), "
        "serve_image serve (b) ran a closed-loop client only)"
    )
    other = pd.DataFrame([row("serve_image", "serve", math.nan, note="something else")])
    assert "latency-bound search" not in answer(other, cells_for(other))[3].verdict


def test_generation_rows_answer_the_llm_class():
    best = pd.DataFrame([row("textgen_llm", "generate", 0.4)])
    llm = answer(best, cells_for(best))[4]
    assert llm.measured and llm.verdict == "CPU cheaper" and llm.range == "CPU 2.5x cheaper"


def test_a_range_or_confidence_that_crosses_even_is_too_close_to_call():
    # within the 1.35x lease-to-lease variance either way: too close, whatever the side
    assert call(pd.Series(row("mnist_cnn", "infer", 1.3))) == "close"
    assert call(pd.Series(row("mnist_cnn", "infer", 1 / 1.3))) == "close"
    assert call(pd.Series(row("mnist_cnn", "infer", 1.4))) == "gpu"
    assert call(pd.Series(row("mnist_cnn", "infer", 1 / 1.4))) == "cpu"
    crossing = row("mnist_cnn", "infer", 1.5, cost_ratio_low=0.9, cost_ratio_high=2.0)
    assert call(pd.Series(crossing)) == "close"
    # the rule is computed from the numbers, so a stale confidence column cannot change a call
    stale = row("mnist_cnn", "infer", 3.0, confidence="too close to call")
    assert call(pd.Series(stale)) == "gpu"
    best = pd.DataFrame([crossing, row("cifar10_cnn", "infer", 4.0)])
    infer = answer(best, cells_for(best))[2]
    assert infer.verdict == "GPU cheaper in 1 of 2, 1 too close to call (mnist_cnn infer)"
    assert infer.range == "CPU 1.1x to GPU 4.0x cheaper"  # from cost_ratio_low, not 1.5


def test_ranges_come_from_the_aggregate_or_from_the_repetitions_spread():
    best = pd.DataFrame([row("mnist_cnn", "infer", 2.0)])
    from devicebench.report.verdict import labelled

    rows = labelled(best)
    ranged = row_ranges(rows, cells_for(best))  # iqr 0.1 of 1.0 s on both sides
    assert math.isclose(ranged["low"].iloc[0], 2.0 * 0.95 / 1.05)
    assert math.isclose(ranged["high"].iloc[0], 2.0 * 1.05 / 0.95)
    given = labelled(
        pd.DataFrame([row("mnist_cnn", "infer", 2.0, cost_ratio_low=1.5, cost_ratio_high=2.5)])
    )
    ranged = row_ranges(given, pd.DataFrame())
    assert ranged[["low", "high"]].iloc[0].tolist() == [1.5, 2.5]


def test_caveats_name_a_one_thread_cpu_win_and_an_idle_gpu():
    best = pd.DataFrame([row("mnist_mlp", "train", 0.5)])
    cells = cells_for(best, gpu_util_mean=20.0)
    cells.loc[cells["device"].eq("cpu"), "threads"] = 1
    caveats = answer(best, cells)[1].caveats
    assert caveats[0].startswith("the CPU's cheapest pick (mnist_mlp train) ran 1 thread of a 16")
    assert "the GPU pick ran under 50 % busy in 1 of 1" in caveats


def test_configurations_read_as_a_person_writes_them():
    openvino = dict(
        framework="torch",
        engine="openvino",
        precision="int8",
        device="cpu",
        threads=16,
        batch_size=32.0,
        lstm_kernel="cudnn",
        seq_len=float("nan"),
    )
    assert configuration(openvino) == "OpenVINO int8, 16 threads, batch 32"
    one = dict(framework="torch", precision="fp32", device="cpu", threads=1, batch_size=128)
    assert configuration(one) == "PyTorch fp32, 1 thread, batch 128"
    gpu = dict(
        framework="torch",
        compile="compiled",
        precision="bf16",
        device="cuda",
        batch_size=256,
        seq_len=128.0,
        lstm_kernel="cudnn",
        replicas=8.0,
        clients=384.0,
    )
    assert configuration(gpu) == (
        "PyTorch compiled bf16, batch 256, 128-token inputs, cuDNN LSTM, 8 replicas, 384 clients"
    )
    every = dict(framework="torch", precision="fp32", device="cpu", threads="all", cpu_cores=16)
    assert configuration(every) == "PyTorch fp32, 16 threads"


def test_money_ratios_and_column_names_in_words():
    assert money(4.17e-06) == "US$0.00000417" and "e-" not in money(1.5e-9)
    assert money(0.68) == "US$0.68" and money(float("nan")) == "—"
    assert lead(87.4) == "GPU 87x" and lead(1 / 1.71) == "CPU 1.7x" and lead(1.04) == "GPU 1.04x"
    assert column_name("device_label") == "device" and column_name("cpu_util_peak") == (
        "cpu util peak"
    )


def test_without_a_verdict_table_or_a_second_device_nothing_is_claimed():
    assert {a.verdict for a in answer(None, pd.DataFrame())} == {
        "not measured: these tables have no verdict table (tables/best.csv)"
    }
    best = pd.DataFrame(
        [
            row(t, "train", 1.0)
            for t in ("mnist_mlp", "mnist_cnn", "cifar10_cnn", "imdb_bilstm", "textgen_lstm")
        ]
    )
    best = best.assign(gpu_samples_per_s=None, gpu_usd_per_million=None, cost_ratio=None)
    small = answer(best, cells_for(best))[1]
    assert small.verdict == (
        "not measured: only the CPU ran (cifar10_cnn train, imdb_bilstm train, mnist_cnn train "
        "and 2 more)"
    )


def test_a_table_shows_no_axis_where_it_does_not_apply():
    table = pd.DataFrame(
        {
            "device_label": ["cpu:16t", "cuda", "cpu:16t"],
            "framework": ["torch", "torch", "torch"],
            "engine": [None, None, "openvino"],
            "lstm_kernel": ["cudnn", "cudnn", "cudnn"],
        }
    )
    shown = applicable(table)
    assert shown["lstm_kernel"].tolist() == [None, "cudnn", None]
    assert shown["framework"].tolist() == ["torch", "torch", "OpenVINO"]
    assert "engine" not in shown


def test_a_serve_cell_on_one_device_only_says_which_ran():
    best = pd.DataFrame([row("serve_image", "serve", 1.0)])
    best = best.assign(gpu_samples_per_s=None, gpu_usd_per_million=None, cost_ratio=None)
    assert answer(best, cells_for(best))[3].verdict == (
        "not measured: only the CPU ran (serve_image serve)"
    )


def test_serve_rows_with_no_confirmed_rate_on_either_device_give_the_bound_s_account():
    note = (
        "judged at p99 <= 50 ms: LoadGen Server max_valid_qps; CPU: no confirmed rate at p99 <= "
        "50 ms (over_budget 1); GPU: no confirmed rate at p99 <= 50 ms (over_budget 1)"
    )
    rows = [row("serve_image", "serve", 1.0, note=note, pick=p) for p in ("fastest", "cheapest")]
    best = pd.DataFrame(rows).assign(
        cpu_samples_per_s=None, gpu_samples_per_s=None, cost_ratio=None,
        cpu_usd_per_million=None, gpu_usd_per_million=None,
    )  # fmt: skip
    verdict = answer(best, cells_for(best))[3].verdict
    assert verdict == f"not measured: {note}", verdict  # said once, not per pick


def test_a_workload_unpaired_on_two_machines_is_named_once_and_a_paired_one_says_where():
    """The caveat names each unpaired workload once (ResNet-152's sweeps on two machines,
    2026-11-30); its machine and code only where the same workload also has a pair."""
    unpaired = dict(cost_ratio=None, cheaper=None, p99_bound_ms=100.0)
    best = pd.DataFrame([
        row("serve_image", "serve", 2.0, model="resnet50", p99_bound_ms=50.0),
        row("serve_image", "serve", 2.0, model="resnet152", boot_id="m7", **unpaired),
        row("serve_image", "serve", 2.0, model="resnet152", boot_id="m8", **unpaired),
        row("serve_image", "serve", 2.0, model="mobilenetv2", boot_id="m5", p99_bound_ms=50.0),
        row("serve_image", "serve", 2.0, model="mobilenetv2", boot_id="m7", **unpaired),
    ])  # fmt: skip
    serve = answer(best, cells_for(best))[3]
    assert serve.verdict == "GPU cheaper in all 2"
    assert serve.caveat == (
        "no pair for serve_image serve (mobilenetv2) [v m7], serve_image serve (resnet152)"
    )
