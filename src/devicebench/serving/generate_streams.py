"""The generate server's streams: each request's tokens handed from the one model thread to its
response as they come, waiting streams of one shape generated together (static batching), each
cut between two tokens when over its time or when its client left. With `max_batches` above 1
the model thread steps up to that many batches in turn, a token each, and starts waiting streams
as a new batch between two steps: a stream waits for a step, not for a whole batch to end. A
generator that batches continuously itself (`submit`: transformers_cb) gets each stream as it
opens, and the stream joins its running batch at the next step; one with a row per stream
(`fill_row`, `step`: torch_rows) gets waiting streams prefilled into its free rows between two
steps."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from devicebench.serving.http_limits import refused

if TYPE_CHECKING:
    from devicebench.serving.generate_app import Limits


class Stopped(Exception):
    """A stream cut between two tokens: over its time, or its client left."""


class Stream:
    """One request's tokens, handed from the model's thread to the response as they come."""

    def __init__(self, prompt: list[int], max_tokens: int, deadline: float, loop) -> None:
        self.prompt, self.max_tokens, self.deadline, self.loop = prompt, max_tokens, deadline, loop
        self.queue: asyncio.Queue = asyncio.Queue()
        self.left = threading.Event()  # the response is over (sent, or its client left)
        self.ended = False  # its last line is queued (the model's thread alone sets it)

    def put(self, kind: str, value: Any) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, value))

    def check(self, limit_s: float) -> None:
        if self.left.is_set():
            raise Stopped("client left")
        if time.monotonic() > self.deadline:
            raise Stopped(f"stream over its {limit_s:g} s limit")

    async def lines(self):
        sent = 0
        try:
            while True:
                kind, value = await self.queue.get()
                if kind == "token":
                    sent += 1
                    yield json.dumps({"token": value}) + "\n"
                elif kind == "done":
                    yield json.dumps({"done": True, "tokens": sent}) + "\n"
                    return
                else:
                    yield json.dumps({"error": value, "tokens": sent}) + "\n"
                    return
        finally:
            self.left.set()  # the model's thread stops at its next token


def batch_buckets(max_batch: int) -> tuple[int, ...]:
    """The batch sizes a fixed-shape generator is compiled for: the powers of two under
    `max_batch`, and `max_batch` (vLLM captures CUDA graphs at such sizes). Padding every batch
    to `max_batch` made one 8B stream prefill sixteen prompts: 0.50 s to its first token served,
    0.05 s in-process (H200, 1024/128, 2026-11-29)."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be positive, not {max_batch}")
    return (*(1 << k for k in range(max_batch.bit_length()) if 1 << k < max_batch), max_batch)


def padded_rows(streams: int, max_batch: int) -> int:
    """The rows a fixed-shape generator runs for `streams` streams: the smallest bucket."""
    return next(size for size in batch_buckets(max_batch) if size >= streams)


@dataclass
class Running:
    """A batch the model thread steps in turn with others: its streams (those it generates for
    first), its steps' tokens and the generator slot (cache) it holds."""

    taken: list[Stream]
    batch: list[Stream]
    steps: Iterator[list[int]]
    slot: int


class Streams:
    """The open streams (at most `max_streams`) and the one model thread generating them, up to
    `max_batch` at once: streams waiting with the same prompt length and tokens asked start
    together (static batching). With `max_batches` 1 a batch runs to its end before the next
    starts; above 1 (a generator with `steps`) batches are stepped in turn. A generator with
    fixed shapes (CUDA graphs: `static`) gets every batch padded to its bucket
    (`batch_buckets`), the shapes it was warmed up at."""

    def __init__(self, generator: Any, limits: Limits, counts: dict[str, int]) -> None:
        self.generator, self.limits, self.counts = generator, limits, counts
        self.pad = bool(getattr(generator, "static", False))
        self.continuous = hasattr(generator, "submit")  # it batches requests itself
        self.rowwise = hasattr(generator, "fill_row")  # a row per stream, joining between steps
        self.active: dict[int, list] = {}  # row -> [stream, tokens sent] (the model thread's)
        if limits.max_batches > 1 and not hasattr(generator, "steps"):
            name = getattr(generator, "name", type(generator).__name__)
            raise ValueError(
                f"max_batches {limits.max_batches}: generator {name} decodes a batch whole, "
                "not a step at a time (steps); serve it with max_batches 1"
            )
        self.model_thread = ThreadPoolExecutor(1, thread_name_prefix="model")
        self.lock = threading.Lock()
        self.open_streams = 0
        self.waiting: list[Stream] = []
        self.running: list[Running] = []  # the model thread's alone

    def open(self, prompt: list[int], max_tokens: int) -> Stream | None:
        """A stream, its generation queued on the model's thread; None when `max_streams` are
        open."""
        deadline = time.monotonic() + self.limits.max_stream_s
        stream = Stream(prompt, max_tokens, deadline, asyncio.get_running_loop())
        with self.lock:
            if self.open_streams >= self.limits.max_streams:
                return None
            self.open_streams += 1
            if not self.continuous:
                self.waiting.append(stream)
        if self.continuous:
            self._submit(stream)
            return stream
        # one job per stream: none is left waiting
        job = self._next_batch if self.limits.max_batches == 1 else self._turns
        self.model_thread.submit(self._rows if self.rowwise else job)
        return stream

    def _submit(self, stream: Stream) -> None:
        """Hands the stream to a continuously batching generator. Its tokens come on the
        generator's thread, which alone ends the stream: done, failed, or cut between two tokens
        (then the request is cancelled)."""

        def on_tokens(tokens: list[int], finished: bool, error: str | None) -> bool:
            was_open = not stream.ended
            for token in tokens:
                if stream.ended:
                    break
                stream.put("token", int(token))
                self._going(stream)
            if finished and not stream.ended:
                if error is None:
                    self._finish([stream])
                else:
                    self._fail([stream], RuntimeError(error))
            if stream.ended and was_open:
                self._close([stream])
            return not stream.ended

        try:
            self.generator.submit(stream.prompt, stream.max_tokens, on_tokens)
        except Exception as error:  # noqa: BLE001 - the stream's last line says what failed
            self._fail([stream], error)
            self._close([stream])

    def _rows(self) -> None:
        """The model thread's loop while any row runs: waiting streams are prefilled into free
        rows, then every row steps once and each stream gets its row's token."""
        while True:
            self._fill_rows()
            if not self.active:
                return
            try:
                tokens = self.generator.step()
            except Exception as error:  # noqa: BLE001 - the streams' last line says what failed
                streams = [stream for stream, _ in self.active.values()]
                self._fail(streams, error)
                self._close(streams)
                self.active.clear()
                continue
            for row, held in list(self.active.items()):
                stream = held[0]
                self._send([stream], [tokens[row]])
                held[1] += 1
                if held[1] == stream.max_tokens and not stream.ended:
                    self._finish([stream])
                if stream.ended:
                    del self.active[row]
                    self._close([stream])

    def _fill_rows(self) -> None:
        """Prefills waiting streams (oldest first) into free rows, each its first token out."""
        while len(self.active) < self.generator.rows:
            with self.lock:
                if not self.waiting:
                    return
                stream = self.waiting.pop(0)
            if not self._going(stream):
                self._close([stream])
                continue
            row = min(set(range(self.generator.rows)) - set(self.active))
            try:
                first = self.generator.fill_row(row, stream.prompt)
            except Exception as error:  # noqa: BLE001 - the stream's last line says what failed
                self._fail([stream], error)
                self._close([stream])
                continue
            self._send([stream], [first])
            if stream.max_tokens == 1 and not stream.ended:
                self._finish([stream])
            if stream.ended:
                self._close([stream])
                continue
            self.active[row] = [stream, 1]
            self.counts["largest_batch"] = max(self.counts["largest_batch"], len(self.active))

    def _take(self) -> list[Stream]:
        """The oldest waiting stream and those that can share its batch."""
        with self.lock:
            if not self.waiting:
                return []
            first = self.waiting[0]
            shape = (len(first.prompt), first.max_tokens)
            batch = [s for s in self.waiting if (len(s.prompt), s.max_tokens) == shape]
            batch = batch[: self.limits.max_batch]
            self.waiting = [s for s in self.waiting if all(s is not b for b in batch)]
            return batch

    def _next_batch(self) -> None:
        batch = self._take()
        try:
            self._generate([s for s in batch if self._going(s)])
        finally:
            self._close(batch)

    def _close(self, taken: list[Stream]) -> None:
        with self.lock:
            self.open_streams -= len(taken)

    def _turns(self) -> None:
        """The model thread's loop while any batch runs: start waiting streams as a batch while
        fewer than `max_batches` run, then step each running batch once."""
        while True:
            while len(self.running) < self.limits.max_batches and (taken := self._take()):
                self._start(taken)
            if not self.running:
                return
            for running in list(self.running):
                self._advance(running)

    def _start(self, taken: list[Stream]) -> None:
        """Prefills a batch in a free slot and hands out its first tokens."""
        batch = [s for s in taken if self._going(s)]
        if not batch:
            return self._close(taken)
        slot = min(set(range(self.limits.max_batches)) - {r.slot for r in self.running})
        self.generator.slot = slot
        try:
            prefilled = self._prefill(batch)
            steps = self.generator.steps(prefilled, batch[0].max_tokens)
        except Stopped:
            return self._close(taken)
        except Exception as error:  # noqa: BLE001 - the streams' last line says what failed
            self._fail(batch, error)
            return self._close(taken)
        self.running.append(Running(taken, batch, steps, slot))
        self.counts["batches_at_once"] = max(self.counts["batches_at_once"], len(self.running))

    def _advance(self, running: Running) -> None:
        """One step of a running batch; at its end (or its streams') the batch leaves."""
        try:
            self._send(running.batch, next(running.steps))
            if not all(s.ended for s in running.batch):
                return
            running.steps.close()
        except StopIteration:
            self._finish(running.batch)
        except Exception as error:  # noqa: BLE001 - the streams' last line says what failed
            self._fail(running.batch, error)
        self.running.remove(running)
        self._close(running.taken)

    def _going(self, stream: Stream) -> bool:
        """Whether the stream still wants tokens; if not, its last line says why."""
        if stream.ended:
            return False
        try:
            stream.check(self.limits.max_stream_s)
            return True
        except Stopped as why:
            stream.ended = True
            self.counts["cut"] += 1
            stream.put("error", str(why))
            return False

    def _send(self, batch: list[Stream], tokens) -> None:
        for stream, token in zip(batch, tokens, strict=False):  # padding rows: no stream
            if not stream.ended:
                stream.put("token", int(token))
                self._going(stream)

    def _prefill(self, batch: list[Stream]):
        """The batch's prefill (padded to its bucket), its first tokens handed out; Stopped when
        every stream of the batch ended."""
        self.counts["batches"] += 1
        self.counts["largest_batch"] = max(self.counts["largest_batch"], len(batch))
        rows = padded_rows(len(batch), self.limits.max_batch) if self.pad else len(batch)
        self.counts["rows_run"] += rows
        prompts = [s.prompt for s in batch]
        prompts += [prompts[0]] * (rows - len(prompts))  # padding rows: no stream reads them
        prefilled = self.generator.prefill(prompts, batch[0].max_tokens)
        self._send(batch, prefilled.first_tokens)
        if all(s.ended for s in batch):
            raise Stopped("every stream of the batch ended")
        return prefilled

    def _generate(self, batch: list[Stream]) -> None:
        """Prefill, then decode step by step, each token handed over as it reaches the host."""
        if not batch:
            return
        try:
            prefilled = self._prefill(batch)

            def on_token(tokens) -> None:
                self._send(batch, tokens)
                if all(s.ended for s in batch):
                    raise Stopped("every stream of the batch ended")

            if batch[0].max_tokens > 1:
                self.generator.decode(prefilled, batch[0].max_tokens, on_token)
        except Stopped:
            return  # each stream's last line is out
        except Exception as error:  # noqa: BLE001 - the streams' last line says what failed
            return self._fail(batch, error)
        self._finish(batch)

    def _fail(self, batch: list[Stream], error: Exception) -> None:
        said = f"generation failed: {type(error).__name__}: {error}"
        refused("stream", None, said)
        for stream in batch:
            if not stream.ended:
                stream.ended = True
                self.counts["failed"] += 1
                stream.put("error", said)

    def _finish(self, batch: list[Stream]) -> None:
        for stream in batch:
            if not stream.ended:
                stream.ended = True
                self.counts["ok"] += 1
                stream.put("done", None)
