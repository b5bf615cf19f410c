"""Hostile input against a real scoring server, as an adversary on the loopback would send it.

``python tests/hostile_inputs.py --engine uvicorn`` (or ``ray-serve``; ``--json F`` writes the
result) starts a serve_image server (MobileNetV2, 32 px, 1 thread) and a serve_text server (the
tiny BERT of the tests, seq_len 32), sends each hostile input below, and prints what came back:
the status and message, the server's resident memory (its whole process tree) before and after
20 over-limit images, and the median latency of valid requests before and after. Used by
tests/test_hostile_inputs.py, which checks the statuses and the memory bound.
"""

from __future__ import annotations

import argparse
import io
import json
import socket
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import httpx
import psutil

JPEG = {"content-type": "image/jpeg"}
TEXT = {"content-type": "text/plain; charset=utf-8"}
SMALL_THREADS = 1


def jpeg_claiming(width: int, height: int) -> bytes:
    """A tiny real JPEG (8x8) whose frame header claims `width` x `height` (643 bytes or so)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buffer, format="JPEG")
    data = bytearray(buffer.getvalue())
    sof = data.index(b"\xff\xc0")  # baseline frame: length(2) precision(1) height(2) width(2)
    data[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def png_claiming(width: int, height: int) -> bytes:
    """A PNG of a few bytes of data whose header claims `width` x `height`."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = zlib.compress(b"\x00" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def valid_jpeg(size: int = 64) -> bytes:
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 255, (size, size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")
    return buffer.getvalue()


def tree_rss_mb(pid: int) -> float:
    """Resident memory of the server process and every descendant (decoders, replicas, Ray)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def latency_ms(url: str, body: bytes, headers: dict, n: int) -> float:
    """Median latency of `n` valid requests, each checked 200."""
    times = []
    with httpx.Client(timeout=60) as client:
        for _ in range(n):
            started = time.perf_counter()
            answer = client.post(f"{url}/predict", content=body, headers=headers)
            times.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                raise AssertionError(f"a valid request got {answer.status_code}: {answer.text}")
    return statistics.median(times)


def post(url: str, body: bytes, headers: dict) -> dict[str, Any]:
    started = time.perf_counter()
    answer = httpx.post(f"{url}/predict", content=body, headers=headers, timeout=60)
    try:
        detail = answer.json().get("detail", "")
    except ValueError:
        detail = answer.text[:200]
    ms = (time.perf_counter() - started) * 1000
    return {"status": answer.status_code, "detail": str(detail)[:200], "ms": round(ms, 1)}


def raw(
    url: str, request: bytes, trickle_s: float = 0.0, wait_s: float = 30.0, to_close: bool = False
) -> dict[str, Any]:
    """Send `request` bytes on a fresh connection (a byte every `trickle_s` when > 0, until the
    server closes) and read the answer: its status line (or '' when closed without one) and how
    long the connection stayed open."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    started = time.perf_counter()
    with socket.create_connection((host.strip("[]"), int(port)), timeout=wait_s) as sock:
        try:
            if trickle_s:
                for byte in request:
                    sock.sendall(bytes([byte]))
                    time.sleep(trickle_s)
                    if time.perf_counter() - started > wait_s:
                        break
            else:
                sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer, closed = b"", False
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and not (trickle_s or to_close):
                    break
            else:
                closed = True  # the server closed the connection (not our wait running out)
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            pass
    line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    status = int(line.split()[1]) if line.startswith("HTTP/") else 0
    open_s = round(time.perf_counter() - started, 2)
    return {"status": status, "line": line, "closed_by_server": closed, "open_s": open_s}


def header_request(headers: list[tuple[str, str]]) -> bytes:
    """GET /health (200 when the server takes the headers) with `headers` added."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers)
    return f"GET /health HTTP/1.1\r\nhost: x\r\n{lines}\r\n".encode()


def listening(pid: int) -> list[str]:
    """The addresses the server's process tree listens on (Ray's own services included)."""
    root = psutil.Process(pid)
    pids = {root.pid} | {p.pid for p in root.children(recursive=True)}
    found = {
        f"{c.laddr.ip}:{c.laddr.port}"
        for c in psutil.net_connections("inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    }
    return sorted(found)


def image_cases(url: str, pid: int) -> dict[str, Any]:
    """Each hostile image and HTTP input; memory and valid latency around the image bombs."""
    good = valid_jpeg()
    out: dict[str, Any] = {"listening": listening(pid)}
    out["valid_ms_before"] = latency_ms(url, good, JPEG, 20)
    bombs = {
        "jpeg header 11000x11000": jpeg_claiming(11000, 11000),
        "jpeg header 60000x60000": jpeg_claiming(60000, 60000),
        "png header 20000x20000": png_claiming(20000, 20000),
        "jpeg header 5000x5000": jpeg_claiming(5000, 5000),
    }
    out["rss_mb_before"] = tree_rss_mb(pid)
    cases: dict[str, Any] = {}
    for name, body in bombs.items():
        answers = [post(url, body, JPEG) for _ in range(20)]
        cases[f"{name} x20"] = answers[0] | {"statuses": sorted({a["status"] for a in answers})}
    out["rss_mb_after"] = tree_rss_mb(pid)
    cases["headers 64 KB"] = raw(url, header_request([("x-pad", "a" * 65536)]))
    cases["headers 1 MB"] = raw(url, header_request([("x-pad", "a" * 2**20)]))
    cases["20,000 headers"] = raw(url, header_request([(f"x-{i}", "1") for i in range(20000)]))
    # header timeout 1 s and at most 4 connections (server() below; Ray Serve's proxy through
    # serving/ray_limits.py): these connections are given up after 15 s
    cases["idle connection"] = raw(url, b"", wait_s=15)
    health = b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n"
    cases["idle after an answer (keep-alive)"] = raw(url, health, wait_s=15, to_close=True)
    cases["slowloris headers"] = raw(url, header_request([("x-slow", "a" * 300)]), 0.05, 15)
    cases["over the concurrency limit"] = over_the_limit(url, good)
    out["cases"] = cases
    out["valid_ms_after"] = latency_ms(url, good, JPEG, 20)
    return out


def over_the_limit(url: str, good: bytes) -> dict[str, Any]:
    """Hold 4 connections open (the server's limit in this script), then send a valid request."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    held = [socket.create_connection((host, int(port))) for _ in range(4)]
    try:
        time.sleep(0.2)
        return post(url, good, JPEG)
    finally:
        for sock in held:
            sock.close()


def text_cases(url: str) -> dict[str, Any]:
    normal = b"a fine film with a good cast and a story that holds together " * 4
    huge = (b"a long review of a film that goes on and on " * 24000)[: 2**20 - 1000]
    normal_ms = latency_ms(url, normal, TEXT, 10)
    return {
        "valid_ms_before": normal_ms,
        "cases": {"review of 1 MB": post(url, huge, TEXT)},
        "huge_ms": latency_ms(url, huge, TEXT, 5),
        "valid_ms_after": latency_ms(url, normal, TEXT, 10),
    }


def server(engine: str, **options: Any):
    """A ServerProcess or RayServeProcess (header timeout 1 s, 4 connections at most)."""
    from devicebench.serving.process import ServerProcess
    from devicebench.serving.ray_process import RayServeProcess

    common = {"framework": "torch", "threads": SMALL_THREADS, "max_batch": 4} | options
    common |= {"max_concurrency": 4}
    common["server_arguments"] = ["--header-timeout-s", "1", "--keep-alive-s", "1"]
    if engine == "ray-serve":
        return RayServeProcess(**common, replicas=1)
    return ServerProcess(**common)


def tokenizer_file(folder: Path) -> Path:
    """The WordPiece file of a small synthetic IMDb, as the serve cell's server gets it."""
    from devicebench.data import prepare_dataset
    from devicebench.workloads import serve_text, text_classify

    manifest = prepare_dataset("imdb", "synthetic", folder, train_samples=64, test_samples=16)
    text_classify.prepare_data(manifest.parent)
    return serve_text.load_data({"data": str(manifest)}).tokenizer


def run(engine: str) -> dict[str, Any]:
    """Every hostile input against `engine`'s image server, then its text server."""
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        result: dict[str, Any] = {"engine": engine}
        with server(engine, model="mobilenetv2", image_size=32) as running:
            result["image"] = image_cases(running.url, running.pid)
        tokenizer = tokenizer_file(Path(tmp) / "imdb")
        text = {"task": "serve_text", "model": "bert-tiny", "seq_len": 32, "tokenizer": tokenizer}
        with server(engine, **text) as running:
            result["text"] = text_cases(running.url)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=["uvicorn", "ray-serve"], default="uvicorn")
    parser.add_argument("--json", type=Path, help="write the result here too")
    args = parser.parse_args(argv)
    result = run(args.engine)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
