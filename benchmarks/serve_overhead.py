#!/usr/bin/env python3
"""What does the server cost? In-process inference against the same model behind the server.

    python benchmarks/serve_overhead.py --device cpu --threads 2 --cases mobilenetv2:8:64
    python benchmarks/serve_overhead.py --device cuda --precision bf16 \\
        --cases resnet50:32:224 resnet50:64:224 mobilenetv2:64:224 --client-processes 4
    python benchmarks/serve_overhead.py --server ray-serve --replicas 2 --device cpu --threads 2
    python3 benchmarks/serve_overhead.py --device cuda --precision bf16 --replicas 4 \\
        --cases resnet50:32:224 --clients 256 --client-processes 4
    python benchmarks/serve_overhead.py --device cuda --precision bf16 --cases bert-base:32:128

A case is model:batch:image_size, or for a text model (serve_text: bert-base, roberta-base,
distilbert-base, tinybert, minilm, bert-tiny) model:batch:seq_len. `in-process` times predict on
a batch of already decoded images, or of already tokenized reviews padded to the batch's longest
(the model's own throughput, host-to-device copy included, as an infer cell sees it); `server`
is the same model in the scoring server (FastAPI under uvicorn, dynamic batches of up to `batch`,
--replicas processes behind the port; or Ray Serve with --replicas replicas sharing the device
and @serve.batch), driven over HTTP by
closed-loop clients sending JPEG bytes or review text (synthetic IMDb-like reviews of 40-300
words, tokenized by a WordPiece trained here on synthetic training reviews), so it pays for HTTP,
decoding or tokenizing, batching and the answer. `ratio` = server /
in-process; `paired` the median of per-round ratios (rounds alternate the two sides, so both
see the same machine state). The issue's target with dynamic batching on an H100 is >= 0.8 for
ResNet50. Both models stay loaded (the server's copy and this process's) for the whole case.
Needs torch, transformers, fastapi, uvicorn, httpx, aiohttp and pillow (tokenizers for text
cases, and ray[serve] for --server ray-serve); no keras, snakemake or network.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.data.jpeg_images import make_synthetic  # noqa: E402
from devicebench.serving.clients import run_pool  # noqa: E402
from devicebench.serving.process import ServerProcess  # noqa: E402
from devicebench.serving.ray_process import RayServeProcess  # noqa: E402
from devicebench.workloads import get  # noqa: E402
from devicebench.workloads.serve_image import Classifier  # noqa: E402
from devicebench.workloads.text_classify import MODELS as TEXT_MODELS  # noqa: E402


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def in_process(model, batches: list, batch: int, seconds: float) -> float:
    """Samples per second of predict() over ready batches (decoded images, tokenized reviews),
    repeated for `seconds`."""
    for index in range(3):
        model.predict(batches[index % len(batches)])
    sync(model.device)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        model.predict(batches[count % len(batches)])  # returns numpy: the device work is done
        count += 1
    return count * batch / (time.perf_counter() - start)


def image_case(args: argparse.Namespace, model_name: str, batch: int, size: int) -> dict:
    """The image classifier, its decoded batch, the JPEG payloads and the server's options."""
    payloads, _ = make_synthetic(0, 64, "test", size=size)
    model = Classifier("torch", model_name, size, args.device, args.precision)
    images = np.random.default_rng(0).integers(0, 256, (batch, size, size, 3), dtype=np.uint8)
    server = {"task": "serve_image", "image_size": size}
    return {"model": model, "batches": [images], "payloads": payloads, "server": server}


def text_case(args: argparse.Namespace, model_name: str, batch: int, seq_len: int) -> dict:
    """The sequence classifier, tokenized review batches, the review texts and the server's
    options (a WordPiece trained here on synthetic training reviews, as data preparation does)."""
    from devicebench.data.imdb import synthetic_reviews
    from devicebench.workloads.serve_text import TextClassifier, decode_text, pad_longest
    from devicebench.workloads.text_classify import train_tokenizer

    path = Path(tempfile.mkdtemp(prefix="serve-overhead-")) / "wordpiece.json"
    train = [text for text, _ in synthetic_reviews(0, 2000, "train")]
    train_tokenizer(train, 30522).save(str(path))
    payloads = [text.encode() for text, _ in synthetic_reviews(0, 256, "test")]
    rows = [decode_text(body, str(path), seq_len) for body in payloads]
    batches = [pad_longest(rows[i : i + batch]) for i in range(0, len(rows) - batch + 1, batch)]
    model = TextClassifier(model_name, args.device, args.precision, seq_len)
    server = {"task": "serve_text", "seq_len": seq_len, "tokenizer": path}
    return {"model": model, "batches": batches, "payloads": payloads, "server": server}


def through_server(
    url: str, payloads, clients: int, requests: int, processes: int, kind: str
) -> dict:
    """Samples per second over HTTP; the clients in `processes` processes, so the client side
    is not what limits a fast server."""
    result = run_pool(
        url, payloads, clients=clients, requests=requests, window_s=0.5, content_type=kind,
        processes=processes,
    )  # fmt: skip
    p99 = result["latency_ms"].get("p99", float("nan"))
    return {"rate": result["samples_per_s"], "errors": result["errors"], "p99": p99}


def make_server(args: argparse.Namespace, model_name: str, batch: int, task: dict):
    """The server of --server with --replicas replicas: uvicorn (processes behind one port) or
    Ray Serve (replicas behind Serve's proxy)."""
    common = dict(framework="torch", model=model_name, device=args.device)
    common |= dict(precision=args.precision, max_batch=batch, **task)
    common |= dict(batch_wait_ms=args.batch_wait_ms, batch_buckets=args.batch_buckets)
    if args.server == "ray-serve":
        threads = args.threads or os.cpu_count() or 1
        return RayServeProcess(**common, threads=threads, replicas=args.replicas)
    return ServerProcess(
        **common, threads=args.threads, decode_workers=args.decode_workers, replicas=args.replicas
    )


def run_case(args: argparse.Namespace, model_name: str, batch: int, size: int) -> dict:
    """Rounds alternate in-process and server, so both sides see the same machine state."""
    text = model_name in TEXT_MODELS
    case = (text_case if text else image_case)(args, model_name, batch, size)
    payloads, kind = case["payloads"], get(case["server"]["task"]).client_content_type
    clients = args.clients or 2 * batch
    local, served, errors, p99 = [], [], 0, []
    processes = args.client_processes
    with make_server(args, model_name, batch, case["server"]) as server:
        url = f"{server.url}/predict"
        through_server(url, payloads, clients, 4 * clients, processes, kind)  # warm-up
        for _ in range(args.rounds):
            local.append(in_process(case["model"], case["batches"], batch, args.seconds))
            result = through_server(url, payloads, clients, args.requests, processes, kind)
            served.append(result["rate"])
            errors += result["errors"]
            p99.append(result["p99"])
        sizes = server.stats()["batch_sizes"]
    formed = sum(int(k) * v for k, v in sizes.items()) / max(1, sum(sizes.values()))
    row = {
        "model": model_name,
        "device": args.device,
        "precision": args.precision,
        "batch": batch,
        "size": f"seq {size}" if text else f"{size}px",
        "clients": clients,
        "decode_workers": args.decode_workers,
        "server_engine": f"{args.server} x{args.replicas}",
        "in_process": statistics.median(local),
        "server": statistics.median(served),
        "paired": statistics.median(s / i for s, i in zip(served, local, strict=True)),
        "mean_batch_formed": formed,
        "server_p99_ms": statistics.median(p99),
        "errors": errors,
        "rounds_in_process": local,
        "rounds_server": served,
    }
    row["ratio"] = row["server"] / row["in_process"]
    return row


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave)")
    parser.add_argument("--cases", nargs="+", default=["mobilenetv2:8:64"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="per in-process round")
    parser.add_argument("--requests", type=int, default=400, help="per server round")
    parser.add_argument("--clients", type=int, default=0, help="default: 2 x batch")
    parser.add_argument("--client-processes", type=int, default=1)
    parser.add_argument("--batch-wait-ms", type=float, default=5.0)
    parser.add_argument("--decode-workers", type=int, default=0, help="0: decode on threads")
    parser.add_argument("--server", default="uvicorn", choices=["uvicorn", "ray-serve"])
    parser.add_argument("--replicas", type=int, default=1, help="server replicas")
    parser.add_argument("--batch-buckets", default="auto", help="auto, none or sizes 1,4,16")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    rows = []
    for case in args.cases:
        model_name, batch, size = case.split(":")
        rows.append(run_case(args, model_name, int(batch), int(size)))
        print(f"[serve_overhead] {case}: {rows[-1]['ratio']:.3f}", file=sys.stderr, flush=True)
    print("| model | engine | device | precision | batch | input | clients | decoders "
          "| in-process samples/s | server samples/s | ratio | paired | mean batch formed "
          "| server p99 ms | errors |")  # fmt: skip
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['server_engine']} | {r['device']} | {r['precision']} | "
            f"{r['batch']} | "
            f"{r['size']} | {r['clients']} | {r['decode_workers']} | "
            f"{r['in_process']:,.1f} | {r['server']:,.1f} | "
            f"{r['ratio']:.3f} | {r['paired']:.3f} | {r['mean_batch_formed']:.1f} | "
            f"{r['server_p99_ms']:.1f} | "
            f"{r['errors']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
