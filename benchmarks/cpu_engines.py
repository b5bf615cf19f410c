#!/usr/bin/env python3
"""Each inference engine and number format on one CPU, in one run: samples/s and agreement.

    PYTHONPATH=src python benchmarks/cpu_engines.py --models resnet50,bert-base --batch 32 \
        --json out.json
    PYTHONPATH=src python benchmarks/cpu_engines.py --smoke      # tiny models, a few seconds each

Per model and batch size, every variant below scores the same random-weight model on the same
held-out inputs (random token ids / images, seeded), with the thread variables a cell's worker
gets (the script restarts itself with them): torch fp32 eager (what the study measured),
torch bf16 autocast, torch.compile fp32 (--compile), ONNX Runtime fp32 and int8 (static QDQ for
convolutional models, dynamic for the rest), OpenVINO f32, bf16 (LATENCY hint, one request;
THROUGHPUT hint, several requests in flight through an AsyncInferQueue) and int8 (NNCF). Each is
loaded through devicebench.engines, as the study's cells are; export, quantization and
compilation happen before timing and are reported apart. A variant's samples/s is the median of
`--reps` windows of at least `--min-s` seconds; agreement is the share of held-out samples whose
top-1 class equals torch fp32's. A variant that cannot run here (engine not installed, no
kernels) is a row with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench import engines  # noqa: E402
from devicebench.engines.agreement import agreement, top1  # noqa: E402
from devicebench.engines.base import LoadOptions  # noqa: E402
from devicebench.engines.cell import is_convolutional  # noqa: E402
from devicebench.engines.cpu_features import cpu_features  # noqa: E402
from devicebench.engines.openvino_engine import OpenVINOOptions  # noqa: E402

# (engine, format, openvino hint); torch compiled is added by --compile.
VARIANTS = [
    ("torch", "fp32", None),
    ("torch", "bf16", None),
    ("onnxruntime", "fp32", None),
    ("onnxruntime", "int8", None),
    ("openvino", "fp32", "LATENCY"),
    ("openvino", "bf16", "LATENCY"),
    ("openvino", "bf16", "THROUGHPUT"),
    ("openvino", "int8", "LATENCY"),
    ("openvino", "int8", "THROUGHPUT"),
]
MODELS = ("bert-base", "distilbert", "resnet50", "mobilenetv2", "vit-base", "mnist-cnn")
SMOKE = ("bert-tiny", "resnet-tiny", "mnist-cnn")


class Positional:
    """Wraps a transformers classifier: positional tensors in, logits out (made lazily)."""

    @staticmethod
    def make(model: Any, keys: tuple[str, ...]) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: Any) -> Any:
                return self.model(**dict(zip(keys, inputs, strict=True))).logits

        return Wrapped().eval()


def build(name: str, seq_len: int) -> tuple[Any, Any]:
    """(model taking positional inputs, inputs(n, seed) -> dict of arrays) for a model name."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    text = {
        "bert-base": (tf.BertConfig, tf.BertForSequenceClassification, {}),
        "distilbert": (tf.DistilBertConfig, tf.DistilBertForSequenceClassification, {}),
        "bert-tiny": (
            tf.BertConfig,
            tf.BertForSequenceClassification,
            dict(
                hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512
            ),
        ),
    }
    image = {
        "resnet50": (tf.ResNetConfig, tf.ResNetForImageClassification, {}, 224),
        "resnet-tiny": (
            tf.ResNetConfig,
            tf.ResNetForImageClassification,
            dict(hidden_sizes=[16, 32], depths=[1, 1], embedding_size=16),
            64,
        ),
        "mobilenetv2": (tf.MobileNetV2Config, tf.MobileNetV2ForImageClassification, {}, 224),
        "vit-base": (tf.ViTConfig, tf.ViTForImageClassification, {}, 224),
    }
    if name in text:
        config_class, model_class, arguments = text[name]
        model = model_class(config_class(num_labels=2, **arguments)).eval()
        vocab = model.config.vocab_size

        def inputs(n: int, seed: int) -> dict[str, np.ndarray]:
            rng = np.random.default_rng(seed)
            ids = rng.integers(1000, vocab, (n, seq_len), dtype=np.int64)
            return {"input_ids": ids, "attention_mask": np.ones_like(ids)}

        return Positional.make(model, ("input_ids", "attention_mask")), inputs
    if name in image:
        config_class, model_class, arguments, size = image[name]
        model = model_class(config_class(num_labels=1000, **arguments)).eval()

        def inputs(n: int, seed: int) -> dict[str, np.ndarray]:
            rng = np.random.default_rng(seed)
            return {"pixel_values": rng.standard_normal((n, 3, size, size), dtype=np.float32)}

        return Positional.make(model, ("pixel_values",)), inputs
    if name == "mnist-cnn":
        from devicebench.workloads import get

        model = get("mnist_cnn").build_torch("cnn", 0, outputs=10, lstm_kernel="cudnn").eval()

        def inputs(n: int, seed: int) -> dict[str, np.ndarray]:
            rng = np.random.default_rng(seed)
            return {"x": rng.random((n, 1, 28, 28), dtype=np.float32)}

        return model, inputs
    raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS + SMOKE)}")


def skip_reason(engine: str, precision: str) -> str | None:
    if not engines.installed(engine):
        return f"{engines.package(engine)} is not installed"
    if engine == "openvino" and precision == "int8":
        import importlib.util

        if importlib.util.find_spec("nncf") is None:
            return "nncf is not installed (OpenVINO int8 is NNCF post-training quantization)"
    return engines.get(engine).skip_reason("cpu", precision)


def timed(loaded: Any, batches: list[dict], reps: int, min_s: float) -> dict[str, Any]:
    """Warm up on every batch, then `reps` windows of whole passes of at least `min_s`."""
    start = time.perf_counter()
    loaded.score_all(batches[:1])
    first_call_s = time.perf_counter() - start
    loaded.score_all(batches)
    rates = []
    samples = sum(len(next(iter(b.values()))) for b in batches)
    for _ in range(reps):
        count, start = 0, time.perf_counter()
        while count == 0 or time.perf_counter() - start < min_s:
            loaded.score_all(batches)
            count += 1
        rates.append(count * samples / (time.perf_counter() - start))
    return {"samples_per_s": statistics.median(rates), "rates": rates, "first_call_s": first_call_s}


def run_model(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    model, make_inputs = build(name, args.seq_len)
    rows = []
    for batch in args.batch:
        held_out = make_inputs(batch * args.eval_batches, seed=1)
        batches = [
            {k: v[i * batch : (i + 1) * batch] for k, v in held_out.items()}
            for i in range(args.eval_batches)
        ]
        calibration = [make_inputs(batch, seed=100 + i) for i in range(args.calibration_batches)]
        reference = None
        variants = list(VARIANTS) + ([("torch", "fp32-compiled", None)] if args.compile else [])
        for engine, precision, hint in variants:
            if args.engines and engine not in args.engines:
                continue
            row: dict[str, Any] = {"model": name, "batch": batch, "engine": engine}
            row |= {"format": precision, "hint": hint}
            compiled = precision == "fp32-compiled"
            fmt = "fp32" if compiled else precision
            if reason := skip_reason(engine, fmt):
                rows.append(row | {"status": "skipped", "message": reason})
                print(f"{name} b{batch} {engine} {precision}: skipped: {reason}", flush=True)
                continue
            options = LoadOptions(
                precision=fmt,
                threads=args.threads,
                engine=OpenVINOOptions(hint=hint) if engine == "openvino" else None,
                calibration=calibration if fmt == "int8" else None,
                convolutional=is_convolutional(model),
                compile=compiled,
            )
            try:
                start = time.perf_counter()
                loaded = engines.get(engine).load(model, batches[0], options)
                load_s = time.perf_counter() - start
                outputs, _ = loaded.score_all(batches)
                predicted = np.concatenate([top1(o, False) for o in outputs])
                if reference is None:  # torch fp32 is the first variant
                    reference = predicted
                row |= timed(loaded, batches, args.reps, args.min_s)
                row |= {"status": "ok", "load_s": load_s, "info": _plain(loaded.info)}
                row["agreement_fp32"] = agreement(predicted, reference)
            except Exception as error:  # noqa: BLE001 - a row with the reason, the run goes on
                traceback.print_exc()
                row |= {"status": "error", "message": f"{type(error).__name__}: {error}"[:500]}
            rows.append(row)
            print(_line(row), flush=True)
    return rows


def _plain(info: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v if isinstance(v, int | float | str | bool | list) else str(v) for k, v in info.items()
    }


def _line(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        return f"{row['model']} b{row['batch']} {row['engine']} {row['format']}: {row['message']}"
    return (
        f"{row['model']} b{row['batch']} {row['engine']} {row['format']} {row['hint'] or ''}: "
        f"{row['samples_per_s']:.1f}/s agreement {row['agreement_fp32']:.3f} "
        f"(load {row['load_s']:.1f} s)"
    )


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown: one line per variant, samples/s, x torch fp32, agreement, what ran."""
    lines = [
        "| model | batch | engine | format | hint (requests) | samples/s | x torch fp32 | "
        "agreement | ran |",
        "|---|---:|---|---|---|---:|---:|---:|---|",
    ]
    base: dict[tuple, float] = {}
    for row in rows:
        key = (row["model"], row["batch"])
        if row["engine"] == "torch" and row["format"] == "fp32" and row["status"] == "ok":
            base[key] = row["samples_per_s"]
    for row in rows:
        key = (row["model"], row["batch"])
        info = row.get("info", {})
        hint = f"{row['hint']} ({info.get('requests_in_flight', 1)})" if row["hint"] else ""
        if row["status"] != "ok":
            lines.append(
                f"| {row['model']} | {row['batch']} | {row['engine']} | {row['format']} | {hint} "
                f"| {row['status']}: {row['message'][:90]} | | | |"
            )
            continue
        ratio = row["samples_per_s"] / base[key] if key in base else float("nan")
        ran = info.get("format_ran", "")
        if "quantization" in info:
            ran = f"{ran} ({info['quantization']})"
        lines.append(
            f"| {row['model']} | {row['batch']} | {row['engine']} | {row['format']} | {hint} | "
            f"{row['samples_per_s']:.1f} | {ratio:.2f} | {row['agreement_fp32']:.3f} | {ran} |"
        )
    return "\n".join(lines)


def versions() -> dict[str, str]:
    import importlib.metadata as metadata

    found = {}
    for package in ("torch", "transformers", "onnxruntime", "openvino", "nncf", "onnx"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batch", default="32", help="comma-separated batch sizes")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--engines", default="", help="only these engines (comma-separated)")
    parser.add_argument("--eval-batches", type=int, default=4, help="held-out batches")
    parser.add_argument("--calibration-batches", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--min-s", type=float, default=2.0)
    parser.add_argument("--compile", action="store_true", help="add torch.compile fp32")
    parser.add_argument("--smoke", action="store_true", help="tiny models, short windows")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        args.models, args.min_s, args.reps = ",".join(SMOKE), 0.2, 3
    args.batch = [int(b) for b in args.batch.split(",")]
    args.engines = [e for e in args.engines.split(",") if e]
    from devicebench.run.threads import thread_environment

    wanted = thread_environment(args.threads)
    if __name__ == "__main__" and any(os.environ.get(k) != v for k, v in wanted.items()):
        # as a cell's worker: thread pools sized by the environment before numpy/torch load
        os.execve(sys.executable, [sys.executable, *sys.argv], os.environ | wanted)
    import torch

    torch.set_num_threads(args.threads)
    report: dict[str, Any] = {
        "host": platform.node(),
        "cpu": platform.processor() or cpu_model(),
        "threads": args.threads,
        "thread_environment": {k: os.environ.get(k) for k in wanted},
        "cpu_features": cpu_features(),
        "versions": versions(),
        "inputs": "random token ids / images (seeded), random-weight models",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rows": [],
    }
    for name in args.models.split(","):
        report["rows"] += run_model(name, args)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))
    print(table(report["rows"]))
    return 0


def cpu_model() -> str:
    from devicebench.measure.environment import capture

    return str(capture(1).get("cpu_model"))


if __name__ == "__main__":
    sys.exit(main())
