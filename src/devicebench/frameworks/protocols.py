"""The backend protocols a scenario may need (``Scenario.needs``), beside ``generator.Generator``.

A backend supplies device-resident steps that end in a device synchronize; the scenario owns the
clock, so each framework is timed the same way.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Scored(Protocol):
    """What every classic backend reports: its name, loop, sizes, and held-out predictions."""

    name: str
    fit_loop: str
    train_samples: int
    test_samples: int

    def new_model(self, seed: int) -> None: ...
    def parameter_count(self) -> int: ...
    def evaluate(self) -> tuple[np.ndarray, float]: ...
    def peak_device_memory_mb(self) -> float | None: ...


@runtime_checkable
class Trainable(Scored, Protocol):
    """A backend that trains: `steps` optimizer steps, synchronized at the end."""

    def train_steps(self, steps: int) -> None: ...


@runtime_checkable
class Classifier(Trainable, Protocol):
    """A backend that scores batches: each batch's latency (s), synchronized per batch."""

    def infer_batches(self, steps: int) -> list[float]: ...
