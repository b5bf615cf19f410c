"""Launchers: how a cell's worker is started, chosen in one place (``for_cell``).

Each module here but ``base`` defines ``LAUNCHER``; the default one (``inprocess``: one worker
process, ``Launcher.default``) takes any cell no other launcher claims, ``torchrun`` the
data-parallel ones. A scoring
server or a Spark session is started by its scenario inside the worker, not by the runner.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from typing import Any

from devicebench.run.launchers.base import Launcher


@cache
def found() -> dict[str, Launcher]:
    """Every launcher on disk, by module name."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name != "base"]
    return {name: importlib.import_module(f"{__name__}.{name}").LAUNCHER for name in sorted(names)}


def for_cell(settings: Mapping[str, Any]) -> Launcher:
    """The launcher that starts a cell: the one other than the default that fits, else the
    default; ValueError where two claim it."""
    launchers = found()
    claims = [n for n, one in launchers.items() if not one.default and one.fits(settings)]
    if len(claims) > 1:
        raise ValueError(f"launchers {', '.join(claims)} all claim the cell; one may")
    if claims:
        return launchers[claims[0]]
    return next(one for one in launchers.values() if one.default)
