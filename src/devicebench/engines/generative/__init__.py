"""Generative engines: one module each (``ENGINE``, a ``base.GenerativeEngine``), found on disk.

``get(name)`` imports the engine's module only when asked, so the grid and the config check need
none of the engines' libraries.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

from devicebench.engines.generative.base import GenerativeEngine


def names() -> tuple[str, ...]:
    """Every generative engine's name (its module's), sorted."""
    found = pkgutil.iter_modules([str(Path(__file__).parent)])
    return tuple(sorted(m.name for m in found if m.name != "base" and not m.name.startswith("_")))


@cache
def get(name: str) -> GenerativeEngine:
    """The generative engine named `name`; ValueError naming the known ones."""
    if name not in names():
        raise ValueError(f"unknown generative engine {name!r}; known: {', '.join(names())}")
    engine = importlib.import_module(f"{__name__}.{name}").ENGINE
    if engine.name != name:
        raise ValueError(f"generative engine module {name!r} defines ENGINE named {engine.name!r}")
    return engine
