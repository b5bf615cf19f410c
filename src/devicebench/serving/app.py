"""The scoring service: FastAPI under uvicorn, JPEG in, top class and score out, dynamic batching.

``python -m devicebench.serving.app --framework torch --model mobilenetv2 --port-file F`` builds
the model, binds 127.0.0.1 (another interface only with --host), takes another free port when the
asked one is in use, writes the port it serves on to --port-file, and serves until SIGTERM.
Requests wait at most --batch-wait-ms for others to share a batch of up to --max-batch images.
JPEG decoding runs in --decode-workers processes (0: threads of the server process), so the
model's thread does not fight the decoders for the interpreter lock.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import io
import resource
import socket
import sys
import time
from collections import Counter
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, HTTPException, Request

JPEG = "image/jpeg"


class BadImage(ValueError):
    """A body that is not a decodable JPEG image."""


def decode_jpeg(body: bytes, size: int) -> np.ndarray:
    """Decode and resize one JPEG as a service would (Pillow); H×W×3 uint8."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(body)) as image:
            if image.format != "JPEG":
                raise BadImage(f"the body is a {image.format} image, not JPEG")
            image.load()  # a truncated JPEG fails here
            rgb = image.convert("RGB").resize((size, size), Image.BILINEAR)
    except UnidentifiedImageError as error:
        raise BadImage("the body is not an image Pillow can identify") from error
    except (OSError, SyntaxError) as error:
        raise BadImage(f"the JPEG cannot be decoded: {error}") from error
    return np.asarray(rgb, dtype=np.uint8)


class Batcher:
    """Collects queued images into batches of up to `max_batch`, waiting at most `wait_s`."""

    def __init__(self, predict, max_batch: int, wait_s: float):
        self.predict, self.max_batch, self.wait_s = predict, max_batch, wait_s
        self.queue: asyncio.Queue = asyncio.Queue()
        self.sizes: Counter[int] = Counter()
        self.model_thread = ThreadPoolExecutor(1, thread_name_prefix="model")

    async def score(self, image: np.ndarray) -> tuple[int, float]:
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((image, future))
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
            batch = np.stack([image for image, _ in items])
            try:
                classes, scores = await loop.run_in_executor(self.model_thread, self.predict, batch)
            except Exception as error:  # noqa: BLE001 - each waiting request gets a 500
                for _, future in items:
                    if not future.done():
                        future.set_exception(error)
                continue
            self.sizes[len(items)] += 1
            for (_, future), label, score in zip(items, classes, scores, strict=True):
                if not future.done():
                    future.set_result((int(label), float(score)))


def die_with_parent() -> None:
    """A decoder process gets SIGKILL when its server dies, however the server ends (Linux)."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def decoder_pool(workers: int) -> Executor | None:
    """`workers` decoding processes, started now (before the model claims the device); None: 0."""
    if workers <= 0:
        return None
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=die_with_parent)
    list(pool.map(abs, range(workers)))  # start every worker before the first request
    return pool


async def read_image(
    request: Request, max_body: int, image_size: int, reject, decoder: Executor | None = None
) -> np.ndarray:
    """The request's JPEG decoded, or `reject(status, message)` raised: 415 for another content
    type, 413 over `max_body` bytes, 400 for an empty body or one that is not a JPEG."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != JPEG:
        raise reject(415, f"content type {kind or 'none'!r} is not {JPEG}: send JPEG bytes")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_body:
        raise reject(413, f"body of {declared} bytes is over the {max_body}-byte limit")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body:
            raise reject(413, f"body is over the {max_body}-byte limit")
    if not body:
        raise reject(400, "empty body: send the JPEG bytes of one image")
    try:
        return await asyncio.get_running_loop().run_in_executor(
            decoder, decode_jpeg, bytes(body), image_size
        )
    except BadImage as error:
        raise reject(400, str(error)) from None


def create_app(
    predict,
    *,
    image_size: int,
    max_batch: int,
    wait_s: float,
    max_body: int,
    info,
    decoder: Executor | None = None,
):
    """The FastAPI app: POST /predict (image/jpeg), GET /health, GET /stats."""
    from contextlib import asynccontextmanager

    batcher = Batcher(predict, max_batch, wait_s)
    counts: Counter[str] = Counter()

    @asynccontextmanager
    async def lifespan(_app):
        task = asyncio.create_task(batcher.run())
        yield
        task.cancel()

    app = FastAPI(title="devicebench scoring service", lifespan=lifespan)

    def reject(status: int, message: str) -> HTTPException:
        counts[f"rejected_{status}"] += 1
        return HTTPException(status_code=status, detail=message)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", **info}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        sizes = {str(k): v for k, v in sorted(batcher.sizes.items())}
        return {"batch_sizes": sizes, "counts": dict(counts), "peak_rss_mb": peak_mb}

    @app.post("/predict")
    async def score(request: Request) -> dict[str, Any]:
        image = await read_image(request, max_body, image_size, reject, decoder)
        label, probability = await batcher.score(image)
        counts["ok"] += 1
        return {"class": label, "score": probability}

    return app


def bind(host: str, port: int) -> tuple[socket.socket, str]:
    """A listening socket on `port`, or on a free port when that one is in use; and a note."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    note = ""
    try:
        sock.bind((host, port))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        sock.bind((host, 0))
        note = f"port {port} in use; took {sock.getsockname()[1]}"
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock, note


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every scoring server takes (this one and the Ray Serve one)."""
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--model", default="mobilenetv2")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--batch-wait-ms", type=float, default=5.0)
    parser.add_argument("--max-body-bytes", type=int, default=1 << 20)
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", type=Path, required=True, help="written once serving")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_arguments(parser)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave)")
    parser.add_argument("--decode-workers", type=int, default=0, help="0: decode on threads")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import uvicorn

    from devicebench.serving.models import Classifier

    if args.threads and args.framework in ("torch", "keras-torch"):
        import torch

        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    decoder = decoder_pool(args.decode_workers)
    model = Classifier(args.framework, args.model, args.image_size, args.device, args.precision)
    model.predict(np.zeros((args.max_batch, args.image_size, args.image_size, 3), np.uint8))
    load_s = time.perf_counter() - started
    sock, note = bind(args.host, args.port)
    port = sock.getsockname()[1]
    info = {"model": args.model, "framework": args.framework, "parameters": model.parameters}
    info |= {"decode_workers": args.decode_workers}
    info |= {"load_s": load_s, "port": port, "port_note": note}
    app = create_app(
        model.predict,
        image_size=args.image_size,
        max_batch=args.max_batch,
        wait_s=args.batch_wait_ms / 1000,
        max_body=args.max_body_bytes,
        info=info,
        decoder=decoder,
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(port))
    tmp.replace(args.port_file)  # the port is bound: connections queue until uvicorn accepts
    print(f"[serve] {args.model} ({args.framework}) on {args.host}:{port} {note}", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        if decoder is not None:
            decoder.shutdown(cancel_futures=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
