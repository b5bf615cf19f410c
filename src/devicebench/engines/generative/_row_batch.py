"""Row-level continuous batching over a static KV cache: each request holds a row, at its own
position, and joins or leaves the running batch between two decode steps.

The cache holds `rows` sequences of `max_cache_len` positions. A request's prompt is prefilled
alone (a dynamic cache), its keys and values copied into a free row; every decode step then runs
all rows at once, each writing its token's keys and values at its own position (`RowCache`)
and attending, through a mask made from the positions on the device, to its own positions
only. The step has fixed shapes, so on a GPU it is compiled into a CUDA graph (torch.compile
reduce-overhead), as the static loop's is. Free rows run too (their tokens are not read): what a
fixed-shape step costs, as vLLM's padded CUDA-graph batches do.

A decode step's attention is `row_attention`: transformers' sdpa path, given a mask, repeats
each key/value head for its query heads and falls back to the math kernel, which on the H200
cost the 8B's 64 rows 27 ms a step (one served stream's time per token, 2026-12-01); grouping
the query heads by their key/value head reads the cache once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devicebench.engines.generative._torch_model import TorchModelFacts
from devicebench.frameworks.generator import OnToken, Prefilled
from devicebench.workloads import textgen_llm

ATTENTION = "devicebench_rows"  # the name row_attention is registered under


def row_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """A decode step's attention (one query token a row) with grouped query heads read against
    their key/value head, masked per row; a prefill's is transformers' sdpa."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    rows, heads, length, dim = query.shape
    if length != 1 or attention_mask is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    kv_heads = key.shape[1]
    grouped = query.reshape(rows, kv_heads, heads // kv_heads, dim)  # query head = kv * group + g
    scale = scaling if scaling is not None else dim**-0.5
    scores = torch.matmul(grouped, key.transpose(-1, -2)).float() * scale
    scores = scores + attention_mask[:, :, :, : key.shape[2]].float()  # (rows, 1, 1, positions)
    probabilities = torch.softmax(scores, dim=-1).to(value.dtype)
    out = torch.matmul(probabilities, value)  # (rows, kv_heads, group, dim)
    return out.reshape(rows, 1, heads, dim), None


def use_row_attention(model: Any) -> None:
    """Registers row_attention with transformers and sets it on `model`."""
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, row_attention)
    model.set_attn_implementation(ATTENTION)


class RowCache:
    """Keys and values of each row at its own positions: what a model's attention `update`s.
    A prefill (more than one token) is never written here: rows are filled by `fill`."""

    is_compileable = True

    def __init__(self, config: Any, rows: int, max_len: int, device: str, dtype: Any) -> None:
        import torch

        head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
        shape = (rows, config.num_key_value_heads, max_len, head_dim)
        layers = range(config.num_hidden_layers)
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in layers]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in layers]
        self.positions = torch.zeros(rows, dtype=torch.long, device=device)  # the next write
        self.row_index = torch.arange(rows, device=device)
        self.max_len = max_len
        if device == "cuda":  # fixed addresses: the CUDA graph reads and writes them in place
            for tensor in (*self.keys, *self.values, self.positions, self.row_index):
                torch._dynamo.mark_static_address(tensor)

    def update(self, key_states, value_states, layer_idx: int, cache_kwargs=None):
        keys, values = self.keys[layer_idx], self.values[layer_idx]
        keys[self.row_index, :, self.positions] = key_states[:, :, 0]
        values[self.row_index, :, self.positions] = value_states[:, :, 0]
        return keys, values

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0  # positions are per row, given with every step

    def fill(self, row: int, prefilled: Any, length: int) -> None:
        """Copies one prompt's keys and values (a DynamicCache) into `row`; its next write is
        at `length`."""
        for layer, (keys, values) in enumerate(zip(self.keys, self.values, strict=True)):
            keys[row, :, :length] = prefilled.layers[layer].keys[0]
            values[row, :, :length] = prefilled.layers[layer].values[0]
        self.positions[row] = length


class RowBatch(TorchModelFacts):
    """A causal LM decoding `rows` requests at once, each in its own cache row (greedy, EOS
    ignored), behind the Generator protocol and a row API for the server: `fill_row`, `step`."""

    def __init__(self, model: Any, device: str, *, rows: int, max_cache_len: int) -> None:
        import torch

        if rows < 1 or max_cache_len < 2:
            raise ValueError(f"rows {rows} and max_cache_len {max_cache_len}: too small")
        self.model, self.device, self.rows, self.max_cache_len = model, device, rows, max_cache_len
        self.name = "torch-rows"
        use_row_attention(model)
        self.weight_bytes = textgen_llm.weight_bytes(model)
        dtype = next(model.parameters()).dtype
        self.cache = RowCache(model.config, rows, max_cache_len, device, dtype)
        self.tokens = torch.zeros((rows, 1), dtype=torch.long, device=device)  # each row's last
        self._step = None

    def _compiled_step(self):
        if self._step is None:
            import torch

            cache, width = self.cache, torch.arange(self.max_cache_len, device=self.device)
            blocked = torch.finfo(next(self.model.parameters()).dtype).min

            def step(tokens):
                # each row attends to its positions up to the one it writes now (an additive
                # mask, as sdpa and eager attention both read it)
                seen = width[None, :] <= cache.positions[:, None]
                mask = torch.where(seen, 0.0, blocked).to(cache.keys[0].dtype)[:, None, None, :]
                out = self.model(
                    input_ids=tokens, position_ids=cache.positions[:, None], attention_mask=mask,
                    past_key_values=cache, use_cache=True,
                )  # fmt: skip
                return out.logits[:, -1].argmax(-1)

            if self.device == "cuda":
                torch._logging.set_logs(perf_hints=True)
                step = torch.compile(step, mode="reduce-overhead", fullgraph=True, dynamic=False)
            self._step = step
        return self._step

    def fill_row(self, row: int, prompt: Sequence[int]) -> int:
        """Prefills `prompt` into `row` (whatever it held); its first new token, on the host."""
        import torch
        from transformers import DynamicCache

        if len(prompt) + 1 > self.max_cache_len:
            raise ValueError(f"a {len(prompt)}-token prompt in rows of {self.max_cache_len}")
        with torch.inference_mode():
            ids = torch.as_tensor([list(prompt)], device=self.device)
            prefilled = DynamicCache(config=self.model.config)
            out = self.model(input_ids=ids, past_key_values=prefilled, use_cache=True)
            first = out.logits[0, -1].argmax(-1)
            self.cache.fill(row, prefilled, len(prompt))
            self.tokens[row, 0] = first
        return int(first)

    def step(self) -> list[int]:
        """One decode step of every row; each row's new token on the host (a free row's too,
        unread). A row at its last position stays there (its request has ended by then)."""
        import torch

        with torch.inference_mode():
            new = self._compiled_step()(self.tokens.clone()).clone()
            self.tokens.copy_(new[:, None])
            positions = self.cache.positions
            positions.copy_(torch.clamp(positions + 1, max=self.max_cache_len - 1))
            return new.tolist()

    # The Generator protocol: a batch of prompts in the first rows, decoded step by step.
    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        if len(prompts) > self.rows:
            raise ValueError(f"{len(prompts)} prompts for {self.rows} rows")
        first = [self.fill_row(row, prompt) for row, prompt in enumerate(prompts)]
        return Prefilled(first_tokens=first, state=len(prompts))

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        count = prefilled.state
        out = [[t] for t in prefilled.first_tokens]
        for _ in range(max_new_tokens - 1):
            tokens = self.step()[:count]
            on_token(tokens)
            for row, token in zip(out, tokens, strict=True):
                row.append(token)
        return out
