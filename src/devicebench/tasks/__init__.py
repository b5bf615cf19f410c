"""The task registry: what each workload trains, on which data, with which defaults.

A task names its dataset, the models it can run and the hyperparameters of the original example
it reproduces; frameworks build the architecture from the task and model names. A task's
``kind`` decides its loss and metrics: ``image`` and ``next_char`` are softmax classification
(next_char adds perplexity), ``binary_text`` is a sigmoid output with binary cross-entropy.
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
    kind: str = "image"  # image | binary_text | next_char (workloads/ modules add their own)
    options: dict[str, int | float | str] = field(default_factory=dict)
    # Extra grid axes the task has, with their allowed values (the first is the default).
    axes: dict[str, tuple[str | int | float, ...]] = field(default_factory=dict)
    modes: tuple[str, ...] = ("train", "infer")  # the modes the task runs in

    def option(self, name: str) -> int | float:
        """A hyperparameter of the original example (vocabulary, sequence length, units ...)."""
        return self.options[name]


LSTM_KERNELS = ("cudnn", "generic")
SERVING_MODELS = ("mobilenetv2", "nasnetmobile", "resnet50", "resnet152", "nasnetlarge")


def axis_key(axis: str) -> str:
    """The config key listing an axis's values: `lstm_kernels`, `servers`, `clients`."""
    return axis if axis.endswith("s") else f"{axis}s"


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
        TaskSpec(
            name="cifar10_cnn",
            dataset="cifar10",
            models=("cnn",),
            num_classes=10,
            epochs=20,
            batch_sizes=(32,),
            optimizer="rmsprop",
            learning_rate=0.0001,
            optimizer_options={"alpha": 0.9, "eps": 1e-7},
            source="keras examples cifar10_cnn.py: conv32x2-pool-conv64x2-pool-dense512-10, "
            "shift 0.1 + horizontal-flip augmentation, RMSprop 1e-4 (its 1e-6 decay is left out)",
            options={"max_shift": 3},
        ),
        TaskSpec(
            name="imdb_fasttext",
            dataset="imdb",
            models=("fasttext",),
            num_classes=2,
            epochs=5,
            batch_sizes=(32,),
            optimizer="adam",
            learning_rate=0.001,
            optimizer_options={"eps": 1e-7},
            source="keras examples imdb_fasttext.py: 20,000 words + bigrams, maxlen 400, "
            "embedding 50, global average pooling, sigmoid",
            kind="binary_text",
            options={"vocab_size": 20_000, "bigram_buckets": 100_000, "maxlen": 400, "embed": 50},
        ),
        TaskSpec(
            name="imdb_bilstm",
            dataset="imdb",
            models=("bilstm",),
            num_classes=2,
            epochs=4,
            batch_sizes=(32,),
            optimizer="adam",
            learning_rate=0.001,
            optimizer_options={"eps": 1e-7},
            source="keras examples imdb_bidirectional_lstm.py: embedding 128, BiLSTM 64, "
            "dropout 0.5, sigmoid, maxlen 100",
            kind="binary_text",
            options={"vocab_size": 20_000, "maxlen": 100, "embed": 128, "units": 64},
            axes={"lstm_kernel": LSTM_KERNELS},
        ),
        TaskSpec(
            name="textgen_lstm",
            dataset="nietzsche",
            models=("lstm",),
            num_classes=0,  # the character set of the text (57 for Nietzsche)
            epochs=10,
            batch_sizes=(128,),
            optimizer="rmsprop",
            learning_rate=0.01,
            optimizer_options={"alpha": 0.9, "eps": 1e-7},
            source="keras examples lstm_text_generation.py: one-hot chars, LSTM 128 over 40-char "
            "windows every 3 chars, softmax, RMSprop 0.01",
            kind="next_char",
            options={"maxlen": 40, "step": 3, "units": 128},
            axes={"lstm_kernel": LSTM_KERNELS},
        ),
        TaskSpec(
            name="serve_image",
            dataset="jpeg_images",
            models=SERVING_MODELS,
            num_classes=1000,
            epochs=1,  # unused: a serve cell does not train
            batch_sizes=(8,),
            optimizer="none",
            learning_rate=1.0,
            source="cloud deployment study: the five models behind an HTTP scoring API, "
            "20-50 concurrent clients scoring 1,000 JPEG images; batch_size is the server's "
            "largest dynamic batch",
            kind="serve",
            axes={"server": ("uvicorn", "ray-serve"), "clients": (20, 30, 50), "replicas": (1,)},
            modes=("serve",),
        ),
    )
}


def _register_workloads() -> None:
    """Add the workloads of devicebench.workloads (one module each) to the registry."""
    from devicebench.workloads import specs

    for spec in specs():
        if spec.name in TASKS:
            raise ValueError(f"workload {spec.name!r} is registered twice")
        TASKS[spec.name] = spec


_register_workloads()


def get_task(name: str) -> TaskSpec:
    """Look a task up, with an error that lists the tasks that exist."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}") from None
