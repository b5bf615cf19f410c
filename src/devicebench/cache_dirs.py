"""Where a cache of derived files lives: the folder an environment variable names, else a
default. One rule for the GGUF files, converted GGUFs and FLOP counts, so that a user moves any
of them the same way (an engine's exported models keep a per-process default: engines/export)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(name: str) -> Path:
    """`~/.cache/devicebench/<name>`: a default that outlives one study's results folder."""
    return Path.home() / ".cache" / "devicebench" / name


def cache_folder(variable: str, default: Path) -> Path:
    """The folder `variable` names (read on every call: a test or a host may set it late),
    else `default`."""
    found = os.environ.get(variable)
    return Path(found) if found else default
