"""The generate server: a language model behind FastAPI/uvicorn, streaming each token as it is made.

``python -m devicebench.serving.generate_app --model llama-tiny --generator torch_eager
--port-file F`` loads the model (the generate scenario's engines, engines.generative), generates
once to warm up (and compile), binds 127.0.0.1 and writes its port to --port-file.

POST /generate, a JSON body ``{"prompt": [token ids], "max_tokens": n}``: 200 and one JSON line
per token as it reaches the host (``{"token": id}``, the first straight after prefill), then
``{"done": true, "tokens": n}``; EOS is ignored, so a stream always has `max_tokens` tokens.
Up to --max-batch waiting streams with the same prompt length and tokens asked generate
together (static batching, greedy); the others wait their turn. What a request may cost is
bounded before any work: the body's bytes (413) and time (408), its prompt tokens (413) and its
tokens asked (400), the streams open at once (503); once streaming, a stream over
--max-stream-s (from its arrival) or whose client left is cut between two tokens, and its last
line says why (``{"error": ...}``). Connections are bounded as the scoring server's are
(http_limits.py). GET /health, GET /stats.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse

from devicebench.serving.app import read_request
from devicebench.serving.decode import OverLimit
from devicebench.serving.gc_pause import freeze_loaded_heap
from devicebench.serving.generate_streams import Streams, batch_buckets
from devicebench.serving.http_limits import (
    BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_KEEP_ALIVE_S,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_MAX_PER_CLIENT,
    refused,
)
from devicebench.serving.net import bind
from devicebench.serving.scorer import BadRequest
from devicebench.serving.uvicorn_app import (
    add_one_line_errors,
    client_of,
    publish_port,
    uvicorn_config,
)

JSON = "application/json"
STREAM = "application/x-ndjson"


@dataclass(frozen=True)
class Limits:
    """What one request may cost the server."""

    max_prompt_tokens: int = 2048
    max_new_tokens: int = 256
    max_streams: int = 64  # generating or waiting their turn; 503 beyond
    max_batch: int = 1  # streams generated together (same prompt length and tokens asked)
    max_batches: int = 1  # batches stepped in turn, a token each (1: each batch to its end)
    max_stream_s: float = 120.0  # from a request's arrival to its last token
    max_body: int = 1 << 20
    body_timeout_s: float = BODY_TIMEOUT_S
    vocab: int = 0  # token ids must be below it (0: not checked)


@dataclass(frozen=True)
class PromptReader:
    """What app.read_request needs of a scorer: the body's media type and how to read it."""

    limits: Limits
    content_type: str = JSON
    body: str = 'a JSON object {"prompt": [token ids], "max_tokens": n}'

    def decode(self, raw: bytes) -> tuple[list[int], int]:
        """The prompt's token ids and the tokens asked; BadRequest (413 over a limit)."""
        try:
            given = json.loads(raw)
        except ValueError:
            raise BadRequest(f"body is not JSON: send {self.body}") from None
        if not isinstance(given, dict) or set(given) - {"prompt", "max_tokens"}:
            raise BadRequest(f"send {self.body}")
        prompt, wanted = given.get("prompt"), given.get("max_tokens")
        if not isinstance(prompt, list) or not prompt:
            raise BadRequest("`prompt` must be a non-empty list of token ids")
        if len(prompt) > self.limits.max_prompt_tokens:
            raise OverLimit(
                f"prompt of {len(prompt)} tokens is over the {self.limits.max_prompt_tokens}-token"
                " limit"
            )
        top = self.limits.vocab or float("inf")
        if not all(type(t) is int and 0 <= t < top for t in prompt):
            raise BadRequest(f"`prompt` must hold token ids from 0 to {top} (exclusive)")
        if type(wanted) is not int or not 1 <= wanted <= self.limits.max_new_tokens:
            raise BadRequest(
                f"`max_tokens` must be an integer from 1 to {self.limits.max_new_tokens} "
                f"(got {wanted!r})"
            )
        return prompt, wanted


def create_app(generator: Any, limits: Limits, info: dict[str, Any]) -> FastAPI:
    """The FastAPI app: POST /generate (streamed), GET /health, GET /stats."""
    counts = {"ok": 0, "cut": 0, "failed": 0, "batches": 0, "largest_batch": 0, "rows_run": 0}
    counts["batches_at_once"] = 0  # the most batches stepped in turn (max_batches above 1)
    streams = Streams(generator, limits, counts)
    reader = PromptReader(limits)
    app = FastAPI(title="devicebench generate service")

    add_one_line_errors(app)

    def reject(status: int, message: str) -> HTTPException:
        key = f"rejected_{status}"
        counts[key] = counts.get(key, 0) + 1
        return HTTPException(status_code=status, detail=message)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", **info}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        return dict(counts) | {"open_streams": streams.open_streams}

    @app.post("/generate")
    async def generate(request: Request):
        try:
            body = await read_request(
                request, limits.max_body, reader, reject, None, limits.body_timeout_s
            )
            stream = streams.open(*body)
            if stream is None:
                raise reject(503, f"over the {limits.max_streams}-stream limit: try again later")
        except HTTPException as error:
            refused(error.status_code, client_of(request), str(error.detail))
            raise
        return StreamingResponse(stream.lines(), media_type=STREAM)

    return app


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="llama-tiny")
    parser.add_argument("--generator", default="torch_eager", help="engines.generative's name")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: leave)")
    for name, value in vars(Limits()).items():
        if name != "vocab":
            flag = "--" + name.replace("_", "-").replace("max-body", "max-body-bytes")
            parser.add_argument(flag, dest=name, type=type(value), default=value)
    parser.add_argument("--max-header-bytes", type=int, default=DEFAULT_MAX_HEADER_BYTES)
    parser.add_argument("--header-timeout-s", type=float, default=DEFAULT_HEADER_TIMEOUT_S)
    parser.add_argument("--keep-alive-s", type=int, default=DEFAULT_KEEP_ALIVE_S)
    parser.add_argument("--max-concurrency", type=int, default=DEFAULT_MAX_CONCURRENCY)
    parser.add_argument("--max-connections-per-client", type=int, default=DEFAULT_MAX_PER_CLIENT)
    parser.add_argument("--host", default="127.0.0.1", help="interface (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--port-file", required=True, help="written once serving")
    args = parser.parse_args(argv)
    positive = ("max_prompt_tokens", "max_new_tokens", "max_streams", "max_stream_s", "max_batch")
    for name in (*positive, "max_batches"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    return args


def load(args: argparse.Namespace) -> tuple[Any, Limits, dict[str, Any]]:
    """The warmed-up generator, the limits and what /health says; ValueError before loading
    when the longest prompt plus the most tokens do not fit the model's positions."""
    from devicebench.engines import generative
    from devicebench.frameworks.generator import time_generation
    from devicebench.generation.run import engine_options
    from devicebench.workloads import textgen_llm

    why = textgen_llm.too_long(args.model, args.max_prompt_tokens, args.max_new_tokens)
    if why:
        raise ValueError(f"--max-prompt-tokens/--max-new-tokens: {why}")
    chosen = generative.get(args.generator)
    if reason := chosen.skip_reason(args.device, args.precision):
        raise ValueError(reason)
    if why := chosen.step_in_turn_reason(args.max_batches):
        raise ValueError(f"{why}; serve it with --max-batches 1")
    if chosen.max_batch:  # llama.cpp holds one sequence: it serves streams one at a time
        args.max_batch = min(args.max_batch, chosen.max_batch)
    settings = vars(args) | {"threads_resolved": args.threads or 1}
    settings |= {"prompt_len": args.max_prompt_tokens, "output_len": args.max_new_tokens}
    engine, options = engine_options(settings)
    started = time.perf_counter()
    generator = engine.load(args.model, options)
    static = getattr(generator, "static", False)
    continuous = hasattr(generator, "submit")
    buckets = batch_buckets(args.max_batch) if static else (1,)
    steps = max(2, min(4, args.max_new_tokens))  # CUDA graph trees: warm, record, replay
    for slot in range(args.max_batches if static else 1):  # each slot its own cache
        generator.slot = slot
        for rows in buckets:  # warm-up; a fixed-shape generator compiles each bucket's shape
            print(f"[serve] warming up {rows} row(s), slot {slot}", flush=True)
            time_generation(generator, [[0] * args.max_prompt_tokens] * rows, steps)
    if static:
        generator.slot = 0
    limits = Limits(
        **{name: getattr(args, name) for name in vars(Limits()) if name != "vocab"},
        vocab=int(textgen_llm.model_config(args.model).vocab_size),
    )
    info = {"model": args.model, "generator": engine.name, "device": args.device}
    info |= {"precision": args.precision, "load_s": time.perf_counter() - started}
    batching = f"static: up to {limits.max_batch} streams of one prompt length and token count"
    if static:
        batching += f", padded to {'/'.join(map(str, buckets))} rows (the shapes compiled)"
    if limits.max_batches > 1:
        batching += f"; up to {limits.max_batches} batches stepped in turn, a token each"
    batched = max(limits.max_batch, limits.max_batches) > 1
    if continuous:  # its own scheduler: streams of any length join between two steps
        batching = f"continuous ({engine.name}): up to {limits.max_batch} streams a step"
    if rowwise := hasattr(generator, "fill_row"):  # streams of any length, a cache row each
        batching = f"continuous ({engine.name}): up to {generator.rows} streams, a row each"
    batched = batched or continuous or rowwise
    info |= {"limits": vars(limits), "batching": batching if batched else "none"}
    return generator, limits, info | engine.describe(options)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    args = parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    generator, limits, info = load(args)
    info["gc_frozen_objects"] = freeze_loaded_heap()  # gc_pause.py: no full-collection pauses
    sock, note = bind(args.host, args.port)
    port = sock.getsockname()[1]
    app = create_app(generator, limits, info | {"port": port, "port_note": note})
    config = uvicorn_config(app, args)
    publish_port(args.port_file, port)
    print(f"[serve] {args.model} ({args.generator}) generating on {args.host}:{port} {note}")
    sys.stdout.flush()
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:  # a generator with threads of its own (transformers_cb) ends them
        if stop := getattr(generator, "stop", None):
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
