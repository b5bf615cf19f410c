"""A generate cell's own settings (config key `tasks.<task>.generate`): bandwidth buffer, quality
tokens, corpus folder; the grid passes them as one JSON string, as it does serve settings."""

from __future__ import annotations

import json
from typing import Any


def generate_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The cell's `generate` settings (a JSON string from the grid, or a mapping)."""
    given = settings.get("generate") or {}
    return json.loads(given) if isinstance(given, str) else dict(given)
