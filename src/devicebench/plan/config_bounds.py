"""What loading a config may cost, and the values no setting may hold, checked before any use.

- YAML aliases share one object per anchor, so a 419-byte file of nested aliases is a tiny graph
  that anything walking it (the schema's validator, a message printing it) expands to billions of
  values: `check_size` counts the expanded values without expanding them and refuses beyond
  `MAX_VALUES`.
- A message prints at most `SHORT` characters of a value (`short`).
- No number is NaN or infinite (`check_finite`): `.nan` as a time limit crashed planning, and in
  `min_repetition_s` it was written into records as a bare `NaN`, which is not JSON.
- An integer setting holds an integer (`strict_validator`): JSON Schema takes 64.0 as an integer,
  and `batch_sizes: [64.0]` passed the check and failed every run.
"""

from __future__ import annotations

import math
from typing import Any

MAX_VALUES = 1_000_000  # values of a config with every alias expanded (the study's: ~3,000)
SHORT = 120  # characters of a value a message shows


class ConfigTooLarge(ValueError):
    """A config whose aliases expand past MAX_VALUES."""


def short(value: Any, limit: int = SHORT) -> str:
    """`repr(value)`, cut to `limit` characters (without building a longer one for a huge value)."""
    if isinstance(value, (dict, list)) and count_values(value, limit) > limit:
        kind = "mapping" if isinstance(value, dict) else "list"
        return f"<a {kind} of more than {limit} values>"
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def count_values(value: Any, limit: int = MAX_VALUES) -> int:
    """Values in `value` with shared parts counted as often as they appear (as a walk would
    visit them), stopping once past `limit`; a shared object is sized once, not walked again."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        if id(node) in sizes:
            return sizes[id(node)]
        if depth > 200:
            raise ConfigTooLarge("the config is nested more than 200 levels deep")
        children = list(node.items()) if isinstance(node, dict) else node
        total = 1
        for child in children:
            if isinstance(child, tuple):  # a mapping's (key, value)
                total += 1 + size(child[1], depth + 1)
            else:
                total += size(child, depth + 1)
            if total > limit:
                break
        sizes[id(node)] = total
        return total

    return size(value, 0)


def check_size(value: Any, where: str) -> None:
    """Raise ConfigTooLarge when `value`, aliases expanded, holds more than MAX_VALUES values."""
    if count_values(value) > MAX_VALUES:
        raise ConfigTooLarge(
            f"{where}: more than {MAX_VALUES:,} values once its YAML aliases (*name) are "
            "expanded; a study config holds a few thousand (nested aliases multiply)"
        )


def non_finite(value: Any, path: str = "") -> str | None:
    """The dotted key of the first NaN or infinite number in `value`, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(top level)"
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        where = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
        if found := non_finite(item, where):
            return found
    return None


def strict_validator(base: type) -> type:
    """`base` (a jsonschema validator class) whose "integer" is an int, never a float like 64.0
    or a bool."""
    import jsonschema

    def is_integer(_checker: Any, instance: Any) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    checker = base.TYPE_CHECKER.redefine("integer", is_integer)
    return jsonschema.validators.extend(base, type_checker=checker)
