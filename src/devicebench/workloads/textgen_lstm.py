"""`textgen_lstm`: the Keras example lstm_text_generation.py, next character over 40-char windows.

One-hot characters into an LSTM 128 and a softmax over the character set; quality adds the
perplexity of the held-out windows (next-char accuracy is `accuracy`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from devicebench.workloads.base import LSTM_KERNELS, TaskSpec
from devicebench.workloads.classic import ClassicWorkload, token_ids

NIETZSCHE_CHARS = 57  # the output layer of the FLOP count: the original text's character set


class TextgenLstm(ClassicWorkload):
    spec = TaskSpec(
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
    )
    flops_outputs = NIETZSCHE_CHARS

    def inputs(self, x: np.ndarray) -> np.ndarray:
        return x.astype(np.int64)  # character ids, one-hot inside the model

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

        from devicebench.workloads.classic.layers import RNN

        class CharLSTM(nn.Module):
            """One-hot characters, LSTM, softmax logits over the character set."""

            def __init__(self, chars: int, units: int, kernel: str) -> None:
                super().__init__()
                self.chars = chars
                self.rnn = RNN(chars, units, kernel, bidirectional=False)
                self.out = nn.Linear(units, chars)

            def forward(self, x):
                onehot = nn.functional.one_hot(x, self.chars).to(self.out.weight.dtype)
                return self.out(self.rnn(onehot))

        return CharLSTM(outputs, int(self.spec.option("units")), lstm_kernel)

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        from devicebench.workloads.classic.layers import keras_lstm

        layers = keras.layers
        return [
            keras.Input((int(self.spec.option("maxlen")),), dtype="int32"),
            layers.Lambda(lambda ids: keras.ops.one_hot(ids, outputs), name="one_hot"),
            keras_lstm(keras, int(self.spec.option("units")), lstm_kernel),
            layers.Dense(outputs, activation="softmax"),
        ]

    def flops_inputs(self, batch: int) -> Any:
        return token_ids(NIETZSCHE_CHARS, batch, int(self.spec.option("maxlen")))

    def quality(self, dataset: Any, predicted: Any, loss: float) -> dict[str, float]:
        quality = super().quality(dataset, predicted, loss)
        quality["perplexity"] = math.exp(min(loss, 700.0))
        return quality


WORKLOAD = TextgenLstm()
