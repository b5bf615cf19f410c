"""Declared machines: the buyer's "this CPU server or that GPU server", across two boots.

By default a ratio pairs only records of one boot (`environment.boot_id`) and one code version.
A user who ran the study on a CPU server and on a GPU server declares both in the price file,
each by hostname or boot_id with its instance shape and hourly price, and which CPU machine is
compared with which GPU machine:

    machines:
      - {name: cpu-server, hostname: cpu01, instance: "c7i.8xlarge (32 vCPUs)", per_hour: 1.43}
      - {name: gpu-server, boot_id: 9f66ae4f-..., instance: "1x H100 80GB", per_hour: 4.00}
    compare:
      - {cpu: cpu-server, gpu: gpu-server}

A cell on a declared machine is priced as that machine (the whole instance per hour, as it is
rented); a declared comparison forms verdict rows of its CPU machine's CPU cells against its GPU
machine's GPU cells at the same code version, each row naming both machines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

MACHINE_KEYS = ("name", "instance", "per_hour")
MATCH_KEYS = ("hostname", "boot_id")


def check_machines(prices: dict[str, Any], where: str) -> None:
    """Raise ValueError naming a declared machine or comparison that cannot be used."""
    machines = prices.get("machines") or []
    if not isinstance(machines, list):
        raise ValueError(f"price file {where}: `machines` must be a list")
    names = set()
    for index, machine in enumerate(machines):
        missing = [k for k in MACHINE_KEYS if not isinstance(machine, dict) or k not in machine]
        if missing:
            raise ValueError(f"price file {where}: machine {index} lacks {', '.join(missing)}")
        if sum(k in machine for k in MATCH_KEYS) != 1:
            raise ValueError(
                f"price file {where}: machine {machine['name']!r} must name exactly one of "
                "hostname or boot_id (how its records are recognised)"
            )
        if machine["name"] in names:
            raise ValueError(f"price file {where}: machine {machine['name']!r} declared twice")
        names.add(machine["name"])
    for pair in prices.get("compare") or []:
        if not isinstance(pair, dict) or set(pair) != {"cpu", "gpu"}:
            raise ValueError(f"price file {where}: each `compare` entry is {{cpu: ..., gpu: ...}}")
        unknown = [pair[k] for k in ("cpu", "gpu") if pair[k] not in names]
        if unknown:
            raise ValueError(
                f"price file {where}: compare names undeclared machine(s) {', '.join(unknown)}"
            )


def machine_names(cells: pd.DataFrame, prices: dict[str, Any]) -> pd.Series:
    """Per cell, the declared machine it ran on ("" where none matches)."""
    names = pd.Series("", index=cells.index, dtype="object")
    for machine in prices.get("machines") or []:
        key = next(k for k in MATCH_KEYS if k in machine)
        if key not in cells:
            continue
        mine = cells[key].astype("object").map(lambda v, m=machine, k=key: str(v) == str(m[k]))
        names = names.where(~(mine & names.eq("")), machine["name"])
    return names


def apply_machine_prices(cells: pd.DataFrame, prices: dict[str, Any]) -> pd.DataFrame:
    """cells with `machine`, and the price and shape of cells on a declared machine replaced by
    that machine's (the whole instance, as rented)."""
    df = cells.copy()
    df["machine"] = machine_names(df, prices).replace("", np.nan)
    for machine in prices.get("machines") or []:
        mine = df["machine"].eq(machine["name"])
        df.loc[mine, "price_per_hour"] = float(machine["per_hour"])
        df.loc[mine, "priced_as"] = f"{machine['name']}: {machine['instance']}"
    return df


def declared_pairs(prices: dict[str, Any]) -> list[tuple[str, str]]:
    """(CPU machine, GPU machine) of each declared comparison."""
    return [(pair["cpu"], pair["gpu"]) for pair in prices.get("compare") or []]
