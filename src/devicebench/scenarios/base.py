"""What a scenario is: one kind of measurement of a cell (train, infer, converge, serve, ...).

A scenario names the grid mode it measures (``MODE``), the engines it claims (``ENGINES``: empty
for "any engine no other scenario claims"), and the backend protocol it needs from a workload
(``needs``: ``frameworks.protocols.Trainable``/``Classifier``, ``frameworks.generator.Generator``,
or None when its model lives elsewhere, e.g. a scoring server). The worker looks the scenario up
and calls ``run``; the scenario returns the record sections it fills (timings, throughput,
quality, memory, model, utilization, energy, environment, ...), and the worker adds status.

Standard library only at import time: the runner asks a scenario why a cell cannot run before
the worker imports any framework.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

LauncherT = TypeVar("LauncherT")

# The setting of a scenario that can measure speed only (infer): `quality: false` skips the
# untimed training, the scoring and the fp32 reference pass (devicebench.run.window.speed_only).
QUALITY_SETTING: dict[str, tuple[tuple[type, ...], float | None]] = {"quality": ((bool,), None)}


class Scenario(ABC):
    """One measurement: found by ``NAME`` in ``devicebench.scenarios``."""

    NAME: ClassVar[str]
    MODE: ClassVar[str]  # the value of the grid's `mode` axis it measures
    ENGINES: ClassVar[tuple[str, ...]] = ()  # engine axis values it claims (empty: the rest)
    needs: ClassVar[type | None] = None  # the backend protocol its workload must offer
    # False where the cell's process needs no framework (a serve cell only sends requests): the
    # worker then sets no determinism and no precision math in it.
    uses_framework: ClassVar[bool] = True
    # Run settings of its own, beside plan.cellspec.RUN_TYPES: key -> (types, smallest value or
    # None), e.g. {"max_new_tokens": ((int,), 1)}; a cell of its mode may hold them.
    SETTINGS: ClassVar[dict[str, tuple[tuple[type, ...], float | None]]] = {}
    # What its records mean to the aggregate and the report, and what its cells get from the
    # planner (plan.grid.ModeKinds), the launchers and the FLOP count: all read these through
    # ``scenarios.modes(...)`` instead of naming modes; every scenario of one mode agrees on them.
    trains: ClassVar[bool] = False  # it trains its model in the timed window: training FLOPs,
    # accuracy compared across devices (train, converge)
    to_target: ClassVar[bool] = False  # it trains to a target: cost to target is the price of
    # the time it took, not of a fixed run that reached it (converge)
    fixed_passes: ClassVar[bool] = False  # it repeats a pass of fixed samples: its throughput
    # is samples_per_pass over the median repetition (train, infer)
    scores: ClassVar[bool] = False  # it scores a classifier it is given: random weights void
    # its quality, a reduced format needs a check against a trained fp32 reference (infer, serve)
    serves: ClassVar[bool] = False  # a server measured from outside: a serving section instead
    # of timed repetitions, judged at a latency bound (serve)
    generates: ClassVar[bool] = False  # a language model generating tokens: the generation
    # table, the LLM class of the answer (generate)
    # What it starts besides its worker, by need (run.launchers.base: ScoringServerLauncher,
    # SparkLauncher, ...): it asks ``launcher(settings, need)`` for the one that fits the cell.
    launches: ClassVar[tuple[type, ...]] = ()

    def launcher(self, settings: Mapping[str, Any], need: type[LauncherT]) -> LauncherT:
        """The launcher of `need` for this cell (run.launchers.for_cell: chosen there, not by the
        scenario); ValueError for a need the scenario does not declare in ``launches``."""
        if need not in self.launches:
            raise ValueError(f"scenario {self.NAME!r} does not launch a {need.__name__}")
        from devicebench.run import launchers

        return launchers.for_cell(settings, need)

    def skip_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Why this scenario cannot run the cell on this host (recorded ``skipped``), or None.

        Called by the runner before the worker starts: light, imports no framework. By default,
        the engine's reasons (an engine or number format this cell cannot run)."""
        from devicebench import engines, spark

        reason = spark.skip_reason(dict(settings), claimed=self.ENGINES)
        return reason or engines.skip_reason(dict(settings))

    @abstractmethod
    def run(self, settings: Mapping[str, Any], workload: Any, dataset: Any) -> dict[str, Any]:
        """Measure the cell and return its record sections.

        ``settings`` are the cell's decoded run settings (``CellSpec.run_settings()``),
        ``workload`` its ``devicebench.workloads`` entry and ``dataset`` what
        ``workload.load_data(settings)`` returned. The scenario owns the clock (through
        ``devicebench.run.window`` where it times repetitions) and raises on failure: the worker
        turns an exception into an error or oom record.
        """
