"""A transformers model on transformers' ContinuousBatchingManager, behind two faces.

- `submit`/`cancel`: a request's tokens handed to a callback as they reach the host; the server's
  streams use it, so a request joins the running batch at the next step.
- The Generator protocol (`prefill`, `decode`): a batch of prompts submitted together and read
  back step by step, so the generate scenario's one clock times this engine as it times the
  others.

Greedy, EOS ignored (every request runs to its tokens), prefix sharing off (the other engines
recompute every prompt: a benchmark repeating its prompts would otherwise time a cache).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from devicebench.engines.generative._torch_model import TorchModelFacts
from devicebench.frameworks.generator import OnToken, Prefilled
from devicebench.workloads import textgen_llm

# A request's new tokens, whether it ended, and the error it ended with (None: it ran out);
# returns whether the request still wants tokens (False: it is cancelled).
OnTokens = Callable[[list[int], bool, "str | None"], bool]
PAGE = 128  # tokens per KV-cache page
POLL_S = 0.1  # how often the dispatcher looks at a manager that has no output


def manager_config(
    max_batch: int, max_cache_len: int, max_batch_tokens: int, cuda_graphs: bool | None
) -> Any:
    """The manager's configuration: room for `max_batch` requests of `max_cache_len` positions
    (not transformers' default, 90 % of the device's free memory); CUDA graphs as asked (None:
    transformers' choice, which turns them off for an attention that needs a mask, as sdpa's
    paged attention does, and on for flash attention)."""
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    if max_batch < 1 or max_cache_len < 2:
        raise ValueError(f"max_batch {max_batch} and max_cache_len {max_cache_len}: too small")
    pages = max_batch * math.ceil((max_cache_len + 1) / PAGE) + 1
    # transformers renamed block_size page_size after 5.17 (the GPU host's version)
    fields = ContinuousBatchingConfig.__dataclass_fields__
    size = "page_size" if "page_size" in fields else "block_size"
    return ContinuousBatchingConfig(
        **{size: PAGE}, num_blocks=pages, max_batch_tokens=max(max_batch_tokens, max_batch),
        max_requests_per_batch=max_batch, allow_block_sharing=False,
        use_cuda_graph=cuda_graphs,
    )  # fmt: skip


@dataclass
class _Rows:
    """The tokens of a batch's requests as they arrive (the Generator face)."""

    rows: list[list[int]]
    done: threading.Condition = field(default_factory=threading.Condition)
    error: str | None = None

    def handler(self, row: int) -> OnTokens:
        def on_tokens(tokens: list[int], finished: bool, error: str | None) -> bool:
            with self.done:
                self.rows[row].extend(tokens)
                self.error = self.error or error
                self.done.notify_all()
            return True

        return on_tokens

    def wait(self, count: int) -> list[int]:
        """Each row's `count`-th token, once every row has it; RuntimeError if one failed."""
        with self.done:
            while self.error is None and min(map(len, self.rows)) < count:
                self.done.wait()
            if self.error is not None:
                raise RuntimeError(f"continuous batching: {self.error}")
            return [row[count - 1] for row in self.rows]


class ContinuousGreedy(TorchModelFacts):
    """A causal LM generating on transformers' continuous batching manager (greedy)."""

    def __init__(
        self, model: Any, device: str, *, max_batch: int, max_cache_len: int,
        max_batch_tokens: int, cuda_graphs: bool | None = None,
    ) -> None:  # fmt: skip
        self.model, self.device = model, device
        self.name = "transformers-cb"
        self.weight_bytes = textgen_llm.weight_bytes(model)
        self.config = manager_config(max_batch, max_cache_len, max_batch_tokens, cuda_graphs)
        self._handlers: dict[str, OnTokens] = {}
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._manager: Any = None
        self._stopping = threading.Event()

    def start(self) -> None:
        """The manager's thread and the dispatcher's (made once, at the first request)."""
        if self._manager is not None:
            return
        from transformers import GenerationConfig

        greedy = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=0)
        self._manager = self.model.init_continuous_batching(
            generation_config=greedy, continuous_batching_config=self.config
        )
        self._manager.start()
        threading.Thread(target=self._dispatch, name="cb-dispatch", daemon=True).start()

    def submit(self, prompt: Sequence[int], max_tokens: int, on_tokens: OnTokens) -> str:
        """Queues a request; `on_tokens` gets its tokens (from the dispatcher's thread) as they
        reach the host, and its end."""
        self.start()
        request = f"r{next(self._ids)}"
        with self._lock:
            self._handlers[request], self._seen[request] = on_tokens, 0
        added = self._manager.add_request(
            list(prompt), request_id=request, max_new_tokens=max_tokens, streaming=True,
            eos_token_id=-1,
        )  # fmt: skip
        if added is None:
            self._forget(request)
            raise RuntimeError("the continuous batching manager takes no new request (stopped)")
        return request

    def cancel(self, request: str) -> None:
        """Stops a request between two steps; its callback is not called again."""
        if self._forget(request) and self._manager is not None:
            self._manager.cancel_request(request)

    def _forget(self, request: str) -> bool:
        with self._lock:
            self._seen.pop(request, None)
            return self._handlers.pop(request, None) is not None

    def _dispatch(self) -> None:
        """Hands each output's new tokens to its request's callback; fails every open request
        if the manager's thread dies."""
        while not self._stopping.is_set():
            output = self._manager.get_result(timeout=POLL_S)
            if output is None:
                if not self._manager.is_running():
                    return self._fail_all("the manager's thread stopped")
                continue
            with self._lock:
                handler = self._handlers.get(output.request_id)
                seen = self._seen.get(output.request_id, 0)
                new = list(output.generated_tokens[seen:])
                self._seen[output.request_id] = seen + len(new)
            if handler is None:
                continue  # cancelled
            finished = output.is_finished()
            if finished:
                self._forget(output.request_id)
            if not handler(new, finished, output.error if finished else None) and not finished:
                self.cancel(output.request_id)

    def _fail_all(self, why: str) -> None:
        fatal = getattr(self._manager.background_thread_status, "fatal_error", None)
        said = f"{why}: {fatal}" if fatal is not None else why
        with self._lock:
            handlers = list(self._handlers.values())
            self._handlers.clear()
        for handler in handlers:
            handler([], True, said)  # each request's end: what it answers does not matter

    def stop(self) -> None:
        if self._manager is not None:
            self._stopping.set()
            self._manager.stop(block=True, timeout=30)

    # The Generator protocol: a batch submitted together, read back a step at a time.
    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        rows = _Rows([[] for _ in prompts])
        requests = [self.submit(p, max_new_tokens, rows.handler(i)) for i, p in enumerate(prompts)]
        try:
            first = rows.wait(1)
        except BaseException:
            for request in requests:
                self.cancel(request)
            raise
        return Prefilled(first_tokens=first, state=(rows, requests))

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        rows, requests = prefilled.state
        try:
            for count in range(2, max_new_tokens + 1):
                on_token(rows.wait(count))
        except BaseException:
            for request in requests:
                self.cancel(request)
            raise
        return [row[:max_new_tokens] for row in rows.rows]
