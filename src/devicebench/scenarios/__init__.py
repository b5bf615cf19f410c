"""The scenario registry: what a cell measures (train, infer, serve, ...), one module each.

A scenario module ``devicebench.scenarios.<name>`` defines ``SCENARIO``, an instance of a
``devicebench.scenarios.base.Scenario`` subclass whose ``NAME`` is ``<name>``. Modules are found
on disk (no hand-kept list): every module of this package but ``base``, plus the modules of the
folders listed in ``DEVICEBENCH_SCENARIO_PATH`` (os.pathsep-separated; a scenario kept outside
the package, e.g. the tests' own). The registry imports a module only when asked.

Which scenario measures a cell is decided here and nowhere else (``for_cell``): the scenarios
whose ``MODE`` is the cell's mode; of those, the one that claims the cell's engine, else the one
that claims no engine in particular.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from devicebench.scenarios.base import Scenario

PATH_VARIABLE = "DEVICEBENCH_SCENARIO_PATH"
_NOT_SCENARIOS = {"base"}


def _extra_folders() -> list[Path]:
    return [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(os.pathsep) if p]


@cache
def _found() -> dict[str, str | Path]:
    """name -> module name (package) or file path (extra folders), as found on disk."""
    found: dict[str, str | Path] = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name not in _NOT_SCENARIOS and not info.name.startswith("_"):
            found[info.name] = f"{__name__}.{info.name}"
    for folder in _extra_folders():
        for path in sorted(folder.glob("scenario_*.py")):
            found.setdefault(path.stem.removeprefix("scenario_"), path)
    return found


def names() -> tuple[str, ...]:
    """Every scenario's name, sorted."""
    return tuple(sorted(_found()))


@cache
def get(name: str) -> Scenario:
    """The scenario named `name`, its module imported now; ValueError naming the known ones."""
    where = _found().get(name)
    if where is None:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(names())}")
    if isinstance(where, Path):  # a scenario kept outside the package
        loader = importlib.util.spec_from_file_location(f"devicebench_scenario_{name}", where)
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    scenario = module.SCENARIO
    if scenario.NAME != name:
        raise ValueError(f"scenario module {name!r} defines SCENARIO named {scenario.NAME!r}")
    return scenario


def settings_of(mode: str) -> dict[str, tuple[tuple[type, ...], float | None]]:
    """The run settings the scenarios of `mode` own (``Scenario.SETTINGS``), merged."""
    found = [get(name) for name in names()]
    return {k: v for s in found if s.MODE == mode for k, v in s.SETTINGS.items()}


TRAITS = ("trains", "to_target", "fixed_passes", "scores", "serves", "generates")


def modes(**traits: bool) -> tuple[str, ...]:
    """The modes whose scenarios have these traits (``Scenario.trains`` and the rest: what their
    records mean), sorted: e.g. ``modes(trains=True, to_target=False)``. The aggregate, the
    report, the planner and the runner tell modes apart by these, not by mode names (no module
    outside the registries compares a mode with a mode's name: tests/test_architecture.py).
    ValueError naming an unknown trait,
    or a mode whose scenarios disagree on one."""
    unknown = sorted(set(traits) - set(TRAITS))
    if unknown:
        raise ValueError(f"unknown scenario trait(s) {unknown}; known: {', '.join(TRAITS)}")
    found: dict[str, set[tuple[bool, ...]]] = {}
    for scenario in map(get, names()):
        values = tuple(bool(getattr(scenario, trait)) for trait in TRAITS)
        found.setdefault(scenario.MODE, set()).add(values)
    split = sorted(mode for mode, values in found.items() if len(values) > 1)
    if split:
        raise ValueError(f"the scenarios of mode(s) {split} disagree on their traits")
    wanted = [(TRAITS.index(trait), bool(value)) for trait, value in traits.items()]
    return tuple(
        sorted(
            mode
            for mode, (values,) in found.items()
            if all(values[at] == value for at, value in wanted)
        )
    )


def for_cell(settings: Mapping[str, Any]) -> Scenario:
    """The scenario that measures a cell: its mode's scenario for its engine (see module doc)."""
    mode, engine = settings["mode"], settings.get("engine")
    fitting = [s for s in map(get, names()) if s.MODE == mode]
    claims = [s for s in fitting if engine in s.ENGINES]
    general = [s for s in fitting if not s.ENGINES]
    chosen = claims or general
    if not chosen:
        modes = sorted({get(n).MODE for n in names()})
        raise ValueError(f"no scenario measures mode {mode!r}; modes: {', '.join(modes)}")
    return chosen[0]
