"""The confirm step of a serving sweep: which jobs it has, and the cell each job runs.

A serve task whose `serve.slo.confirm` is `best` runs its replica and thread sweep with short
probes alone (serving.slo: status probed); the minutes of confirming runs (MLPerf: 3 runs of at
least 60 s) are spent once per (task, model, device), on that device's best sweep cell. Each such
group is one job of the workflow (rules/confirm.smk) whose inputs are exactly the sweep records it
chooses from, so editing one sweep cell reruns that cell, its group's confirm and the aggregates.

Its record lies at results/cells/confirm/task~T/model~M/device~D.json (beside the cells, so that
the aggregates and gpu_host.sh's archive find it; the cell rule's ids start with task~, so no
cell job can make it). The confirm cell is the chosen sweep cell with an extra axis
`confirm: best` (its own cell id, never a duplicate of the sweep cell's) and its search told to
confirm, starting at the sweep cell's probe rate with `confirm_probes` probes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from devicebench.plan.cellspec import CellSpec
from devicebench.plan.config import ConfigError

CONFIRM_DIR = "confirm"  # under results/cells
CONFIRM_AXIS = "confirm"  # the confirm cell's extra axis (value: best)
# serve.slo keys of the confirm step alone: kept out of the sweep cells' settings (grid.py), so
# that editing them reruns the confirm jobs, not the sweep
CONFIRM_ONLY = {"confirm_probes": 2, "confirm_budget_s": 600.0}
# the confirm cell's time limit beyond its search's budget: start-up, the closed-loop window,
# the capacity run, the in-process yardstick and the record (serving.cell keeps 60 s of it)
CONFIRM_SLACK_S = 150.0


@dataclass(frozen=True)
class ConfirmGroup:
    """The sweep cells of one (serve task, model, device) that one confirm job chooses from."""

    task: str
    model: str
    device: str
    members: tuple[CellSpec, ...]
    settings: tuple[tuple[str, Any], ...] = tuple(CONFIRM_ONLY.items())  # confirm_probes ...

    @property
    def group_id(self) -> str:
        """The record's path under results/cells, without .json."""
        return f"{CONFIRM_DIR}/task~{self.task}/model~{self.model}/device~{self.device}"

    @property
    def values(self) -> dict[str, str]:
        """What a block's `confirms` selector matches."""
        return {"task": self.task, "model": self.model, "device": self.device}


def slo_settings(cell: CellSpec) -> dict[str, Any]:
    """A serve cell's `serve.slo` mapping ({} without the search)."""
    serve = cell.settings.get("serve")
    return dict((json.loads(serve) if serve else {}).get("slo") or {})


def confirms_best(cell: CellSpec) -> bool:
    """Whether a cell is a probes-only sweep cell that a confirm step confirms."""
    return slo_settings(cell).get("confirm") == "best"  # only serve cells have serve settings


def sweep_serve(serve: dict[str, Any]) -> dict[str, Any]:
    """A serve task's settings as its cells receive them: without the confirm step's own keys."""
    slo = serve.get("slo")
    if not isinstance(slo, dict) or not set(slo) & set(CONFIRM_ONLY):
        return serve
    return serve | {"slo": {k: v for k, v in slo.items() if k not in CONFIRM_ONLY}}


def step_settings(task: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A serve task's confirm-step settings (CONFIRM_ONLY, its config's values over them)."""
    slo = (task.get("serve") or {}).get("slo") or {}
    return tuple((key, slo.get(key, default)) for key, default in CONFIRM_ONLY.items())


def confirm_groups(
    cells: Iterable[CellSpec], tasks: dict[str, Any] | None = None
) -> dict[str, ConfirmGroup]:
    """The confirm jobs of a grid, by record id, members in grid order; `tasks` (the study's)
    gives each its confirm-step settings."""
    members: dict[tuple[str, str, str], list[CellSpec]] = {}
    for cell in cells:
        if confirms_best(cell):
            values = cell.values
            key = (values["task"], values["model"], values["device"])
            members.setdefault(key, []).append(cell)
    tasks = tasks or {}
    groups = [
        ConfirmGroup(*key, tuple(cells), step_settings(tasks.get(key[0]) or {}))
        for key, cells in members.items()
    ]
    return {group.group_id: group for group in groups}


def confirm_spec(
    chosen: CellSpec, probe_qps: float, settings: dict[str, Any] | None = None
) -> CellSpec:
    """The chosen sweep cell as its confirm cell: the search confirms, starting at the sweep's
    probe rate with `confirm_probes` probes, within `confirm_budget_s` (`settings`, CONFIRM_ONLY's
    defaults under them); no LoadGen Offline or SingleStream runs (the sweep cell has them)."""
    step = CONFIRM_ONLY | dict(settings or {})
    serve = json.loads(chosen.settings["serve"])
    slo = dict(serve["slo"])
    budget = float(step["confirm_budget_s"])
    slo |= {
        "confirm": "each",
        "start_qps": float(probe_qps),
        "max_probes": int(step["confirm_probes"]),
        "budget_s": budget,
    }
    serve |= {"slo": slo, "loadgen_scenarios": []}
    axes = [pair for pair in chosen.axes if pair[0] != "mode"]
    axes += [(CONFIRM_AXIS, "best"), ("mode", chosen.values["mode"])]
    timeout = max(float(chosen.settings.get("timeout_s") or 0), budget + CONFIRM_SLACK_S)
    run = chosen.settings | {"serve": json.dumps(serve, sort_keys=True), "timeout_s": timeout}
    return CellSpec(tuple(axes), tuple(run.items()), chosen.engine_options)


def assign_confirms(
    blocks: dict[str, Any], groups: Iterable[ConfirmGroup]
) -> dict[str, list[ConfirmGroup]]:
    """Confirm jobs of each block (its `confirms` selectors); ConfigError where a job is in no
    block or in two, or a selector picks none. A study without blocks has none to check."""
    if not blocks:
        return {}
    found: dict[str, list[ConfirmGroup]] = {name: [] for name in blocks}
    used = {(name, i): 0 for name, b in blocks.items() for i in range(len(b.get("confirms", [])))}
    orphans = []
    for group in groups:
        homes = []
        for name, block in blocks.items():
            hits = [
                i
                for i, rule in enumerate(block.get("confirms", []))
                if all(group.values.get(key) == value for key, value in rule.items())
            ]
            for index in hits:
                used[(name, index)] += 1
            if hits:
                homes.append(name)
        if len(homes) > 1:
            raise ConfigError(
                f"config key blocks: confirm step {group.group_id} is in blocks "
                f"{', '.join(homes)}; a confirm step runs in exactly one block"
            )
        if not homes:
            orphans.append(group.group_id)
        else:
            found[homes[0]].append(group)
    if orphans:
        raise ConfigError(
            f"config key blocks: {len(orphans)} confirm steps are in no block (give a block "
            f"`confirms: [{{task: T, model: M, device: D}}]`): {', '.join(orphans[:5])}"
        )
    for (name, index), count in used.items():
        if count == 0:
            rule = blocks[name]["confirms"][index]
            raise ConfigError(
                f"config key blocks.{name}.confirms[{index}]: {rule} selects no confirm step"
            )
    return found
