"""The greedy loop both torch generators share: prefill into a KV cache, then one step per token.

`static=False` keeps transformers' DynamicCache (the eager baseline); `static=True` allocates a
StaticCache of `max_cache_len` positions and, with `compile=True`, runs each decode step through
`torch.compile(mode="reduce-overhead", fullgraph=True)`, gpt-fast style: fixed shapes, so Inductor
captures the step in a CUDA graph. The cache tensors are marked static addresses so CUDA graphs
are not skipped for mutated inputs (what compiling transformers' whole `generate` ran into).

`steps` decodes one step per `next`, so that a server can step two batches in turn (`slot`
picks each one's own cache and host buffers).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from devicebench.engines.generative._torch_model import TorchModelFacts
from devicebench.frameworks.generator import OnToken, Prefilled
from devicebench.workloads import textgen_llm


class TorchGreedy(TorchModelFacts):
    """A transformers causal LM behind the Generator protocol (greedy decoding)."""

    def __init__(
        self, model: Any, device: str, *, static: bool, compile: bool, max_cache_len: int = 0
    ) -> None:
        self.model, self.device = model, device
        self.static, self.compile, self.max_cache_len = static, compile, max_cache_len
        self.name = "torch-static" if static else "torch-eager"
        self.weight_bytes = textgen_llm.weight_bytes(model)
        self._step = None
        self._caches: dict[tuple[int, int], Any] = {}  # per batch size and slot
        self._readers: dict[tuple[int, int], _LateReader] = {}  # pinned memory made once
        self.late_read = True  # on a GPU, read tokens one step late (_LateReader)
        # the next prefill's slot: generations in progress at once (a server stepping batches
        # in turn) each need their own; 0 for one generation at a time
        self.slot = 0

    def _decode_step(self):
        if self._step is None:
            import torch

            def step(token, position, cache):
                out = self.model(
                    input_ids=token, cache_position=position, past_key_values=cache, use_cache=True
                )
                return out.logits[:, -1].argmax(-1)

            if self.compile:  # the cell's log says when CUDA graphs are skipped, and why
                torch._logging.set_logs(perf_hints=True)
                # one graph per batch size (a server's buckets), never one traced for any size
                step = torch.compile(step, mode="reduce-overhead", fullgraph=True, dynamic=False)
            self._step = step
        return self._step

    def _static_cache(self, batch: int, kind: type) -> Any:
        """One StaticCache per batch size and slot, reset between generations: its tensors keep
        their addresses, so the CUDA graph recorded for the decode step is replayed, not
        re-recorded."""
        cache = self._caches.get((batch, self.slot))
        if cache is None:
            cache = self._caches[batch, self.slot] = kind(
                config=self.model.config, max_cache_len=self.max_cache_len
            )
        else:
            import torch

            with torch.inference_mode():  # its tensors were made there, by the first prefill
                cache.reset()
        return cache

    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        import torch
        from transformers import DynamicCache, StaticCache

        ids = torch.as_tensor([list(p) for p in prompts], device=self.device)
        length = ids.shape[1]
        if self.static:
            if self.max_cache_len < length + 1:
                raise ValueError(
                    f"static cache of {self.max_cache_len} for a {length}-token prompt"
                )
            cache = self._static_cache(ids.shape[0], StaticCache)
        else:
            cache = DynamicCache(config=self.model.config)
        with torch.inference_mode():
            positions = torch.arange(length, device=self.device)
            out = self.model(
                input_ids=ids, cache_position=positions, past_key_values=cache, use_cache=True
            )
            first = out.logits[:, -1].argmax(-1)
        if self.static:
            for layer in getattr(cache, "layers", []):  # allocated by the prefill
                for tensor in (getattr(layer, "keys", None), getattr(layer, "values", None)):
                    if tensor is not None:
                        # unguarded: another slot's cache of the same shape is a new
                        # CUDA graph recorded for the one compiled step, not a recompile
                        torch._dynamo.mark_static_address(tensor, guard=False)
        return Prefilled(first_tokens=first.tolist(), state=(first, cache, length, self.slot))

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        out = [[t] for t in prefilled.first_tokens]
        for host in self.steps(prefilled, max_new_tokens):
            on_token(host)
            for row, value in zip(out, host, strict=True):
                row.append(value)
        return out

    def steps(self, prefilled: Prefilled, max_new_tokens: int) -> Iterator[list[int]]:
        """Each decode step's tokens on the host, one step per `next` (on a GPU read one step
        late, so the next step is launched first). Inference mode is entered per step, never
        held across a `yield`: two generations stepped in turn would otherwise unwind each
        other's."""
        import torch

        token, cache, length, slot = prefilled.state
        step = self._decode_step()
        with torch.inference_mode():
            # the position lives on the device and advances there: a host tensor copied in
            # each step would wait for the step before it
            position = torch.tensor([length], device=self.device)
        late = self.late_read and self.device == "cuda"
        reader = self._reader(token.shape[0], slot) if late else None
        for _ in range(max_new_tokens - 1):
            with torch.inference_mode():
                token = step(token[:, None].clone(), position, cache).clone()
                position.add_(1)
                # a step's tokens are out once they reach the host
                host = token.tolist() if reader is None else reader.push(token)
            if host is not None:
                yield host
        if reader is not None and (host := reader.finish()) is not None:
            yield host

    def _reader(self, batch: int, slot: int) -> _LateReader:
        """The batch size's and slot's late reader (its pinned memory made once), emptied."""
        if (batch, slot) not in self._readers:
            self._readers[batch, slot] = _LateReader(batch)
        return self._readers[batch, slot].start()


class _LateReader:
    """Reads each step's tokens on the host one step late, so the GPU never waits for the host.

    A step's tokens are copied into pinned memory behind the step, with an event; the host then
    launches the next step before waiting on that event, and hands the tokens on (``push``
    returns them) when the event says they are on the host. Waiting at once instead (``tolist``)
    leaves the GPU idle while the host reads, returns and launches the next step: for a 1B
    model's CUDA-graph step of about 2 ms that idle is a large share. The stamp is still the
    moment the tokens reached the host, unless the host's launch of the next step outlasts the
    step itself, when it is up to that launch late.
    """

    def __init__(self, batch: int) -> None:
        import torch

        # two buffers and their events, made once per batch size and slot: a step's copy goes to
        # one while the other's tokens are read (made per step or generation they would be work
        # inside the timed window)
        self._buffers = torch.empty((2, batch), dtype=torch.long, pin_memory=True)
        self._events = (torch.cuda.Event(), torch.cuda.Event())
        self._pending: int | None = None  # the buffer written but not read yet
        self._count = 0

    def start(self) -> _LateReader:
        """Ready for a generation: nothing pending."""
        self._pending = None
        return self

    def push(self, token) -> list[int] | None:
        """Queues this step's tokens; returns the step before's, now on the host (None first)."""
        index = self._count % 2
        self._buffers[index].copy_(token, non_blocking=True)
        self._events[index].record()
        self._count += 1
        host = self.finish()
        self._pending = index
        return host

    def finish(self) -> list[int] | None:
        """The last step's tokens once on the host (None when none is pending)."""
        if self._pending is None:
            return None
        self._events[self._pending].synchronize()
        host = self._buffers[self._pending].tolist()
        self._pending = None
        return host
