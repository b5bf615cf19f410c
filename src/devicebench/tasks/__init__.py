"""The task registry: what each workload trains, on which data, with which defaults.

A task names its dataset, the models it can run and the hyperparameters of the original example
it reproduces; frameworks build the architecture from the task and model names.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TaskSpec:
    """One workload of the study."""

    name: str
    dataset: str
    models: tuple[str, ...]
    num_classes: int
    epochs: int
    batch_sizes: tuple[int, ...]
    optimizer: str
    learning_rate: float
    optimizer_options: dict[str, float] = field(default_factory=dict)
    source: str = ""


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            name="mnist_mlp",
            dataset="mnist",
            models=("mlp",),
            num_classes=10,
            epochs=20,
            batch_sizes=(128,),
            optimizer="rmsprop",
            learning_rate=0.001,
            optimizer_options={"alpha": 0.9, "eps": 1e-7},
            source="keras examples mnist_mlp.py: 784-512-512-10, ReLU, dropout 0.2, RMSprop",
        ),
        TaskSpec(
            name="mnist_cnn",
            dataset="mnist",
            models=("cnn",),
            num_classes=10,
            epochs=12,
            batch_sizes=(128,),
            optimizer="adadelta",
            learning_rate=1.0,
            optimizer_options={"rho": 0.95, "eps": 1e-7},
            source="keras examples mnist_cnn.py: conv32-conv64-maxpool-dropout-dense128-dropout-10",
        ),
    )
}


def get_task(name: str) -> TaskSpec:
    """Look a task up, with an error that lists the tasks that exist."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}") from None
