"""The scoring service on Ray Serve: the uvicorn app's routes and answers, Serve's batching.

``python -m devicebench.serving.ray_app --replicas N --port-file F ...`` starts a local Ray
(``ray.init(num_cpus=threads, include_dashboard=False)``; or joins the cluster at --ray-address),
deploys N replicas of the classifier behind Serve's HTTP proxy on 127.0.0.1 at a free port, writes
that port to --port-file once every replica answers, and serves until SIGTERM, when it shuts
Serve and its local Ray down. Each replica batches with ``@serve.batch`` (at most --max-batch
samples, waiting at most --batch-wait-ms) and reports the batch sizes it formed to one stats actor,
so GET /stats sums them over every replica, including replicas that died and were replaced (its
peak_rss_mb is the sum of the replicas' peaks).
"""

import argparse
import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import HTTPException, Request

from devicebench.serving.app import add_server_arguments, read_request, scorer_of
from devicebench.serving.gc_pause import freeze_loaded_heap
from devicebench.serving.http_limits import add_limit_arguments, refused
from devicebench.serving.ray_limits import runtime_env
from devicebench.serving.uvicorn_app import add_one_line_errors, client_of

APP_NAME = "devicebench"


class BatchStats:
    """A Ray actor: the latest counters each replica reported, summed on request."""

    def __init__(self) -> None:
        self.replicas: dict[str, dict[str, Any]] = {}

    def report(self, replica: str, report: dict[str, Any]) -> None:
        self.replicas[replica] = report

    def snapshot(self) -> dict[str, Any]:
        sizes: Counter[str] = Counter()
        counts: Counter[str] = Counter()
        for report in self.replicas.values():
            sizes.update(report["batch_sizes"])
            counts.update(report["counts"])
        return {
            "batch_sizes": dict(sorted(sizes.items(), key=lambda item: int(item[0]))),
            "counts": dict(counts),
            "peak_rss_mb": sum(r["peak_rss_mb"] for r in self.replicas.values()),
            "replicas": self.replicas,
        }


def deployment(args: argparse.Namespace, info: dict[str, Any]):
    """The Serve application: a FastAPI ingress over N classifier replicas."""
    from fastapi import FastAPI
    from ray import serve

    api = FastAPI(title="devicebench scoring service (Ray Serve)")
    add_one_line_errors(api)
    cuda = args.device.startswith("cuda")
    options = {"num_cpus": args.threads / args.replicas}
    if cuda:
        options["num_gpus"] = 1 / args.replicas  # the replicas share the GPU
    threads = max(1, args.threads // args.replicas)
    ledger = serve_stats_actor()

    @serve.deployment(
        name="scorer",
        num_replicas=args.replicas,
        ray_actor_options=options,
        max_ongoing_requests=max(64, 4 * args.max_batch),
        max_queued_requests=args.max_concurrency,  # 503 beyond
        health_check_period_s=2,
    )
    @serve.ingress(api)
    class Scorer:
        def __init__(self) -> None:
            if args.framework in ("torch", "keras-torch"):
                import torch

                torch.set_num_threads(threads)
            started = time.perf_counter()
            device = "cuda" if cuda else args.device  # Ray picks the GPU (CUDA_VISIBLE_DEVICES)
            self.scorer = scorer_of(argparse.Namespace(**{**vars(args), "device": device}))
            self.scorer.warm_up(args.max_batch)
            self.load_s = time.perf_counter() - started
            self.gc_frozen_objects = freeze_loaded_heap()  # gc_pause.py
            self.model_thread = ThreadPoolExecutor(1, thread_name_prefix="model")
            self.sizes: Counter[int] = Counter()
            self.counts: Counter[str] = Counter()
            self.name = f"{serve.get_replica_context().replica_id.unique_id}:{os.getpid()}"

        def _report(self) -> None:
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            ledger.report.remote(
                self.name,
                {
                    "batch_sizes": {str(k): v for k, v in self.sizes.items()},
                    "counts": dict(self.counts),
                    "peak_rss_mb": peak_mb,
                    "pid": os.getpid(),
                },
            )

        def _reject(self, status: int, message: str) -> HTTPException:
            self.counts[f"rejected_{status}"] += 1
            self._report()
            return HTTPException(status_code=status, detail=message)

        @api.get("/health")
        async def health(self) -> dict[str, Any]:
            parameters = self.scorer.parameters
            return {"status": "ok", **info, **self.scorer.info, "parameters": parameters,
                    "load_s": self.load_s,
                    "gc_frozen_objects": self.gc_frozen_objects}  # fmt: skip

        @api.get("/stats")
        async def stats(self) -> dict[str, Any]:
            self._report()
            await asyncio.sleep(0.2)  # the other replicas' last fire-and-forget reports land
            return await ledger.snapshot.remote()

        @api.post("/predict")
        async def predict(self, request: Request) -> dict[str, Any]:
            try:
                sample = await read_request(
                    request,
                    args.max_body_bytes,
                    self.scorer,
                    self._reject,
                    body_timeout_s=args.body_timeout_s,
                )
            except HTTPException as error:
                refused(error.status_code, client_of(request), str(error.detail))
                raise
            label, probability = await self.score(sample)
            self.counts["ok"] += 1
            return {"class": label, "score": probability}

        @serve.batch(max_batch_size=args.max_batch, batch_wait_timeout_s=args.batch_wait_ms / 1000)
        async def score(self, samples: list[Any]) -> list[tuple[int, float]]:
            loop = asyncio.get_running_loop()
            classes, scores = await loop.run_in_executor(
                self.model_thread, self.scorer.score, samples
            )
            self.sizes[len(samples)] += 1
            self._report()
            return [(int(c), float(s)) for c, s in zip(classes, scores, strict=True)]

    return Scorer.bind()


def serve_stats_actor():
    import ray

    return ray.remote(num_cpus=0)(BatchStats).remote()


def free_port(host: str, port: int) -> tuple[int, str]:
    """`port` when it is free on `host`, else a free one; and a note saying so."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if port:
            try:
                sock.bind((host, port))
                return port, ""
            except OSError:
                pass
        sock.bind((host, 0))
        taken = sock.getsockname()[1]
    return taken, (f"port {port} in use; took {taken}" if port else "")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_server_arguments(parser)
    add_limit_arguments(parser)  # Serve's proxy gets them through ray_limits.py
    parser.add_argument("--threads", type=int, default=1, help="CPUs of all replicas together")
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--ray-address", default="", help="a Ray cluster to join (default: local)")
    parser.add_argument("--object-store-mb", type=int, default=256)
    args = parser.parse_args(argv)
    if args.replicas < 1 or args.threads < 1:
        parser.error("--replicas and --threads must be at least 1")
    return args


def loopback_only() -> None:
    """A local Ray's own services (GCS, raylet, workers, agents) listen on 127.0.0.1 only, not
    on every interface. Ray takes the loopback address as its node address only where it runs
    without cluster support (its switch for Windows and macOS hosts); before `ray` is imported,
    so that every process it starts inherits it."""
    if "ray" in sys.modules:
        raise RuntimeError("loopback_only() must run before ray is imported")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"


def start_ray(args: argparse.Namespace) -> None:
    """A local Ray of --threads CPUs (and the GPU on cuda cells), or the cluster --ray-address."""
    import ray

    if args.ray_address:
        ray.init(address=args.ray_address, log_to_driver=True)
        return
    gpus = 1 if args.device.startswith("cuda") else 0
    ray.init(
        runtime_env=runtime_env(args),  # the proxy's limits: ray_limits.py
        num_cpus=args.threads,
        num_gpus=gpus,
        include_dashboard=False,
        object_store_memory=args.object_store_mb << 20,
        log_to_driver=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the host
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # every refusal's log line, not "repeated 5x"
    if not args.ray_address:
        loopback_only()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run the finally: below
    # The cell's address-space cap (RLIMIT_AS) would break Ray's shared-memory object store;
    # the replicas are bounded by the host instead, and their peaks are recorded.
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    from ray import serve

    started = time.perf_counter()
    command = [sys.executable, "-m", "devicebench.serving.ray_guard", str(os.getpid())]
    subprocess.Popen(command, stdin=subprocess.DEVNULL)  # outlives a SIGKILL of this process
    start_ray(args)
    try:
        port, note = free_port(args.host, args.port)
        http = {"host": args.host, "port": port, "keep_alive_timeout_s": args.keep_alive_s}
        serve.start(http_options=http)
        info = {"task": args.task, "model": args.model, "framework": args.framework}
        info |= {"server": "ray-serve"}
        info |= {"replicas": args.replicas, "port": port, "port_note": note}
        info |= {"decode_workers": 0, "ray_address": args.ray_address or "local"}
        serve.run(deployment(args, info), name=APP_NAME, route_prefix="/")
        print(f"[serve] ray-serve up in {time.perf_counter() - started:.1f} s", flush=True)
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
        print(
            f"[serve] {args.model} ({args.framework}) x{args.replicas} replicas on Ray Serve "
            f"at {args.host}:{port} {note}",
            flush=True,
        )
        while True:
            time.sleep(3600)
    finally:
        shutdown(args)
    return 0


def shutdown(args: argparse.Namespace) -> None:
    """Serve first (its replicas and proxy), then the local Ray this process started."""
    import ray

    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut this short
    try:
        from ray import serve

        serve.shutdown()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
