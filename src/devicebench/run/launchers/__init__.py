"""Launchers: what starts the processes a cell runs in, chosen in one place (``for_cell``).

Each module here but ``base`` defines ``LAUNCHER``, an instance of one need's base class
(``base.WorkerLauncher``, ``ScoringServerLauncher``, ``GenerateServerLauncher``,
``SparkLauncher``). The runner asks for the cell's worker launcher (``inprocess``, the default:
one worker process; ``torchrun``: the data-parallel ranks); a scenario asks, by the need it
declares (``Scenario.launches``), for the server or Spark session it measures through, and gets
it started and stopped by the launcher (``server``/``ray_serve``, ``generate_server``,
``spark``), not by a branch of its own.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from devicebench.run.launchers.base import Launcher, WorkerLauncher

NeedT = TypeVar("NeedT", bound=Launcher)


@cache
def found() -> dict[str, Launcher]:
    """Every launcher on disk, by module name."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name != "base"]
    return {name: importlib.import_module(f"{__name__}.{name}").LAUNCHER for name in sorted(names)}


def of_need(need: type[NeedT]) -> dict[str, NeedT]:
    """The launchers that start what `need` is (a base class of base.py), by module name."""
    return {name: one for name, one in found().items() if isinstance(one, need)}


def for_cell(settings: Mapping[str, Any], need: type[NeedT] = WorkerLauncher) -> NeedT:
    """The launcher of `need` for a cell (by default: what starts its worker): the one other than
    the need's default that fits, else the default; ValueError where two claim it, or where none
    does and the need has no default."""
    launchers = of_need(need)
    claims = [n for n, one in launchers.items() if not one.default and one.fits(settings)]
    if len(claims) > 1:
        raise ValueError(f"launchers {', '.join(claims)} all claim the cell; one may")
    if claims:
        return launchers[claims[0]]
    default = [one for one in launchers.values() if one.default]
    if not default:
        raise ValueError(need.unclaimed(settings, launchers))
    return default[0]
