"""A tiny torch language model behind the Generator protocol (greedy, with a real cache).

Used by the tests to prove the Generator seam and the scenario seam over a real model: an
embedding, a GRU (its hidden state is the cache decode carries) and a head, random weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from devicebench.frameworks.generator import OnToken, Prefilled


class TinyGenerator:
    name = "tiny-gru"

    def __init__(self, vocab: int = 50, width: int = 16, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.embed = torch.nn.Embedding(vocab, width)
        self.rnn = torch.nn.GRU(width, width, batch_first=True)
        self.head = torch.nn.Linear(width, vocab)
        self.modules = (self.embed, self.rnn, self.head)

    @torch.no_grad()
    def _step(self, tokens: torch.Tensor, hidden: torch.Tensor | None):
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.head(out[:, -1]).argmax(-1), hidden

    def prefill(self, prompts: Sequence[Sequence[int]], max_new_tokens: int) -> Prefilled:
        if len({len(p) for p in prompts}) != 1:
            raise ValueError("tiny generator: prompts of one length only")
        first, hidden = self._step(torch.tensor([list(p) for p in prompts]), None)
        return Prefilled(first_tokens=first.tolist(), state=(first, hidden))

    def decode(self, prefilled: Prefilled, max_new_tokens: int, on_token: OnToken):
        last, hidden = prefilled.state
        out = [[t] for t in prefilled.first_tokens]
        for _ in range(max_new_tokens - 1):
            last, hidden = self._step(last[:, None], hidden)
            step = last.tolist()
            on_token(step)
            for row, token in zip(out, step, strict=True):
                row.append(token)
        return out

    def parameter_count(self) -> int:
        return sum(p.numel() for m in self.modules for p in m.parameters())

    def peak_device_memory_mb(self) -> float | None:
        return None
