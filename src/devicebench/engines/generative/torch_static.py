"""torch with a static KV cache and a compiled decode step in a CUDA graph (GPU only).

gpt-fast's recipe over the same transformers model (see _torch_loop). On the CPU it is skipped:
CUDA graphs have no CPU counterpart, and the CPU's torch cell is torch_eager.
"""

from __future__ import annotations

from typing import Any

from devicebench.engines.generative.torch_eager import TorchEager


class TorchStatic(TorchEager):
    name = "torch_static"
    devices = ("cuda",)
    static = True
    description = "torch static KV cache + torch.compile reduce-overhead (CUDA graphs)"

    def describe(self, options: Any) -> dict[str, Any]:
        return super().describe(options) | {"hint": "reduce-overhead"}


ENGINE = TorchStatic()
