"""The scoring service: FastAPI under uvicorn, a JPEG or a text in, top class and score out,
dynamic batching.

``python -m devicebench.serving.app --task serve_image --model mobilenetv2 --port-file F`` (or
``--task serve_text --model bert-base --seq-len 128 --tokenizer T``) builds the task's scorer
(scoring.py), binds 127.0.0.1 (another interface only with --host), takes another free port when
the asked one is in use, writes the port it serves on to --port-file, and serves until SIGTERM.
Requests wait at most --batch-wait-ms for others to share a batch of up to --max-batch samples.
Decoding (JPEG, or tokenizing) runs in --decode-workers processes (0: threads of the server
process), so the model's thread does not fight the decoders for the interpreter lock. On a GPU
batches are padded to a few sizes, each scored once at start (--batch-buckets, scoring.py).
With --replicas N, N such processes, each with its own model, serve the one port (supervisor.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request

from devicebench.engines import IN_PROCESS
from devicebench.measure.environment import torch_cuda_build
from devicebench.run.processes import die_with_parent
from devicebench.serving.decode import DEFAULT_MAX_PIXELS
from devicebench.serving.gc_pause import count_full_collections, freeze_loaded_heap
from devicebench.serving.http_limits import (
    BODY_TIMEOUT_S,
    DEFAULT_MAX_CONCURRENCY,
    add_limit_arguments,
    refused,
)
from devicebench.serving.net import bind
from devicebench.serving.scorer import BadRequest, Scorer
from devicebench.serving.scoring import make_scorer, serve_tasks
from devicebench.serving.stats import ServerStats
from devicebench.serving.uvicorn_app import (
    add_one_line_errors,
    client_of,
    publish_port,
    uvicorn_config,
)
from devicebench.workloads.base import BATCH_WAIT_MS

UTF8 = ("utf-8", "utf8", "us-ascii")  # charsets a text body may declare


class Batcher:
    """Collects queued samples into batches of up to `max_batch`, waiting at most `wait_s`, and
    has the scorer score each (collated, padded to its bucket) on the model's thread."""

    def __init__(self, scorer: Scorer, max_batch: int, wait_s: float, stats: ServerStats):
        self.scorer, self.max_batch, self.wait_s, self.stats = scorer, max_batch, wait_s, stats
        self.queue: asyncio.Queue = asyncio.Queue()
        self.model_thread = ThreadPoolExecutor(1, thread_name_prefix="model")

    async def score(self, sample) -> tuple[int, float]:
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((sample, future))
        return await future

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            items = [await self.queue.get()]
            deadline = loop.time() + self.wait_s
            while len(items) < self.max_batch:
                if not self.queue.empty():
                    items.append(self.queue.get_nowait())
                    continue
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    items.append(await asyncio.wait_for(self.queue.get(), remaining))
                except TimeoutError:
                    break
            samples = [sample for sample, _ in items]
            try:
                classes, scores = await loop.run_in_executor(
                    self.model_thread, self.scorer.score, samples
                )
            except Exception as error:  # noqa: BLE001 - each waiting request gets a 500
                for _, future in items:
                    if not future.done():
                        future.set_exception(error)
                continue
            self.stats.batch(len(items))
            for (_, future), label, score in zip(items, classes, scores, strict=True):
                if not future.done():
                    future.set_result((int(label), float(score)))


def decoder_pool(workers: int) -> Executor | None:
    """`workers` decoding processes, started now (before the model claims the device); None: 0."""
    if workers <= 0:
        return None
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=die_with_parent)
    list(pool.map(abs, range(workers)))  # start every worker before the first request
    return pool


def check_content_type(header: str, scorer: Scorer) -> str | None:
    """Why a request's content type is not the scorer's (None: it is); text must be UTF-8."""
    kind, _, params = header.partition(";")
    kind = kind.strip().lower()
    if kind != scorer.content_type:
        return f"content type {kind or 'none'!r} is not {scorer.content_type}: send {scorer.body}"
    for param in params.split(";"):
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in UTF8:
            return f"charset {charset!r} is not UTF-8: send {scorer.body}"
    return None


async def read_request(
    request: Request,
    max_body: int,
    scorer: Scorer,
    reject,
    decoder=None,
    body_timeout_s: float = BODY_TIMEOUT_S,
):
    """The request's body decoded by the scorer, or `reject(status, message)` raised: 415 for
    another content type, 413 over `max_body` bytes or over a decoding limit (decode.py), 400
    for an empty or undecodable body."""
    wrong = check_content_type(request.headers.get("content-type", ""), scorer)
    if wrong:
        raise reject(415, wrong)
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_body:
        raise reject(413, f"body of {declared} bytes is over the {max_body}-byte limit")
    body = bytearray()
    try:
        async with asyncio.timeout(body_timeout_s):  # a body sent byte by byte is cut off
            async for chunk in request.stream():
                body += chunk
                if len(body) > max_body:
                    raise reject(413, f"body is over the {max_body}-byte limit")
    except TimeoutError:
        raise reject(408, f"body not received within {body_timeout_s:g} s") from None
    if not body:
        raise reject(400, f"empty body: send {scorer.body}")
    try:
        return await asyncio.get_running_loop().run_in_executor(decoder, scorer.decode, bytes(body))
    except BadRequest as error:  # 400, or its own status (413: over a decode.py limit)
        raise reject(getattr(error, "status", 400), str(error)) from None


def create_app(
    scorer: Scorer,
    *,
    max_batch: int,
    wait_s: float,
    max_body: int,
    info,
    decoder: Executor | None = None,
    stats: ServerStats | None = None,
    body_timeout_s: float = BODY_TIMEOUT_S,
):
    """The FastAPI app: POST /predict (the scorer's content type), GET /health, GET /stats.
    A refused request is one log line; an unexpected error too (500), never a traceback per
    request (a slow body once wrote 40 lines per request, 5.8 MB in one test)."""
    from contextlib import asynccontextmanager

    stats = stats or ServerStats.in_memory(max_batch)
    batcher = Batcher(scorer, max_batch, wait_s, stats)

    @asynccontextmanager
    async def lifespan(_app):
        task = asyncio.create_task(batcher.run())
        yield
        task.cancel()

    app = FastAPI(title="devicebench scoring service", lifespan=lifespan)

    add_one_line_errors(app)

    def reject(status: int, message: str) -> HTTPException:
        stats.count(f"rejected_{status}")
        return HTTPException(status_code=status, detail=message)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", **info}

    @app.get("/stats")
    async def counters() -> dict[str, Any]:
        return stats.snapshot()

    @app.post("/predict")
    async def score(request: Request) -> dict[str, Any]:
        try:
            sample = await read_request(request, max_body, scorer, reject, decoder, body_timeout_s)
        except HTTPException as error:
            refused(error.status_code, client_of(request), str(error.detail))
            raise
        label, probability = await batcher.score(sample)
        stats.count("ok")
        return {"class": label, "score": probability}

    return app


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every scoring server takes (this one and the Ray Serve one)."""
    tasks = serve_tasks()
    parser.add_argument("--task", default=tasks[0], choices=tasks)
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument(
        "--engine", default=IN_PROCESS, help=f"{IN_PROCESS} (the framework), onnxruntime, openvino"
    )
    parser.add_argument("--image-size", type=int, default=224, help="image tasks: input size")
    parser.add_argument("--seq-len", type=int, default=128, help="serve_text: tokens at most")
    parser.add_argument("--tokenizer", type=Path, help="serve_text: the WordPiece file")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--batch-wait-ms", type=float, default=BATCH_WAIT_MS)
    parser.add_argument(
        "--batch-buckets", default="auto", help="sizes batches are padded to: auto, none, 1,4,16"
    )
    parser.add_argument("--max-body-bytes", type=int, default=1 << 20)
    parser.add_argument(
        "--max-pixels", type=int, default=DEFAULT_MAX_PIXELS, help="serve_image: header's w x h"
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=DEFAULT_MAX_CONCURRENCY,
        help="connections and requests of a process (Ray: queued requests); 503 beyond",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", type=Path, required=True, help="written once serving")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_arguments(parser)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave)")
    parser.add_argument("--decode-workers", type=int, default=0, help="0: decode on threads")
    add_limit_arguments(parser)
    parser.add_argument(
        "--replicas", type=int, default=1, help="server processes behind the port (supervisor.py)"
    )
    worker = parser.add_argument_group("one replica, as supervisor.py starts it")
    worker.add_argument("--listen-fd", type=int, help="the listening socket it inherited")
    worker.add_argument("--stats-table", type=Path, help="the replicas' shared counters")
    worker.add_argument("--replica-slot", type=int, default=0, help="its row there")
    worker.add_argument("--port-note", default="", help="what binding the port said")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    return args


def scorer_of(args: argparse.Namespace) -> Scorer:
    """The scorer the server's options describe (both engines build theirs here)."""
    return make_scorer(
        args.task,
        args.framework,
        args.model,
        args.device,
        args.precision,
        max_batch=args.max_batch,
        image_size=args.image_size,
        seq_len=args.seq_len,
        tokenizer=args.tokenizer,
        buckets=args.batch_buckets,
        max_pixels=args.max_pixels,
        engine=args.engine,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replicas > 1 and args.listen_fd is None:
        from devicebench.serving.supervisor import supervise

        return supervise(args, sys.argv[1:] if argv is None else argv)
    return serve(args)


def serve(args: argparse.Namespace) -> int:
    """Serve as one process, or as one of --replicas workers on an inherited socket."""
    import uvicorn

    replica = args.listen_fd is not None
    threads = max(1, args.threads // args.replicas) if args.threads else 0
    if threads and args.framework in ("torch", "keras-torch"):
        import torch

        torch.set_num_threads(threads)
    started = time.perf_counter()
    decoder = decoder_pool(args.decode_workers)
    scorer = scorer_of(args)
    scorer.warm_up(args.max_batch)
    load_s = time.perf_counter() - started
    if replica:
        sock, note = socket.socket(fileno=args.listen_fd), args.port_note
        stats = ServerStats.shared(
            args.stats_table, args.replicas, args.max_batch, args.replica_slot
        )
    else:
        sock, note = bind(args.host, args.port)
        stats = ServerStats.in_memory(args.max_batch)
    stats.started()
    frozen = freeze_loaded_heap()  # the model's objects out of every later collection
    count_full_collections(stats)
    port = sock.getsockname()[1]
    info = {"task": args.task, "model": args.model, "framework": args.framework}
    info |= {"parameters": scorer.parameters, "decode_workers": args.decode_workers}
    info |= {"replicas": args.replicas, "replica": args.replica_slot, "pid": os.getpid()}
    info |= {"batch_wait_ms": args.batch_wait_ms}
    info |= {"load_s": load_s, "port": port, "port_note": note, "gc_frozen_objects": frozen}
    info |= scorer.info
    info |= torch_cuda_build()  # for the record's environment: the worker loads no torch
    app = create_app(
        scorer,
        max_batch=args.max_batch,
        wait_s=args.batch_wait_ms / 1000,
        max_body=args.max_body_bytes,
        info=info,
        decoder=decoder,
        stats=stats,
        body_timeout_s=args.body_timeout_s,
    )
    config = uvicorn_config(app, args)
    server = uvicorn.Server(config)
    publish_port(args.port_file, port)
    where = f"replica {args.replica_slot} of {args.replicas}" if replica else "one process"
    print(f"[serve] {args.model} ({args.framework}) on {args.host}:{port}, {where} {note}")
    sys.stdout.flush()
    try:
        server.run(sockets=[sock])
    finally:
        if decoder is not None:
            decoder.shutdown(cancel_futures=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
