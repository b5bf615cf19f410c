"""Generative engines: each turns the cell's model into a Generator the token clock can time.

One module per engine, found by name (imported only when asked); each defines ``ENGINE`` with
``skip_reason(settings)`` (light: imports nothing heavy) and ``load(settings) -> Generator``. A
Generator's ``generate(prompts, max_new_tokens, on_token)`` calls ``on_token`` once per decode
step with that step's token of every request, as soon as the tokens are on the host.
"""

from __future__ import annotations

import importlib
from typing import Any

MODULES: dict[str, str] = {
    "torch": "devicebench.engines.generative.torch_eager",
    "torch-static": "devicebench.engines.generative.torch_static",
    "openvino-genai": "devicebench.engines.generative.openvino_genai",
}


def get(name: str) -> Any:
    """The engine of a value of the `generator` axis."""
    if name not in MODULES:
        raise ValueError(f"unknown generator {name!r}; known: {', '.join(MODULES)}")
    return importlib.import_module(MODULES[name]).ENGINE


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why this generator cannot run this cell here, or None."""
    return get(str(settings["generator"])).skip_reason(settings)
