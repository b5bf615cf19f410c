"""`imdb_bilstm`: the Keras example imdb_bidirectional_lstm.py, embedding 128 and a BiLSTM 64.

The `lstm_kernel` axis picks the fused (cuDNN on a GPU) kernel or the generic step loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from devicebench.workloads.base import LSTM_KERNELS, TaskSpec
from devicebench.workloads.classic import ClassicWorkload, token_ids


class ImdbBiLstm(ClassicWorkload):
    spec = TaskSpec(
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
    )

    def inputs(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x[:, -int(self.spec.option("maxlen")) :].astype(np.int64))

    def torch_model(self, model: str, *, outputs: int, lstm_kernel: str) -> Any:
        from torch import nn

        from devicebench.workloads.classic.layers import RNN

        class BiLSTM(nn.Module):
            """Embedding, bidirectional LSTM, dropout 0.5, one logit."""

            def __init__(self, rows: int, embed: int, units: int, kernel: str) -> None:
                super().__init__()
                self.embedding = nn.Embedding(rows, embed)
                self.rnn = RNN(embed, units, kernel, bidirectional=True)
                self.dropout = nn.Dropout(0.5)
                self.out = nn.Linear(2 * units, 1)

            def forward(self, x):
                return self.out(self.dropout(self.rnn(self.embedding(x)))).squeeze(1)

        spec = self.spec
        embed, units = int(spec.option("embed")), int(spec.option("units"))
        return BiLSTM(self.vocabulary(), embed, units, lstm_kernel)

    def keras_layers(self, keras: Any, model: str, *, outputs: int, lstm_kernel: str) -> list:
        from devicebench.workloads.classic.layers import keras_lstm

        layers = keras.layers
        return [
            keras.Input((int(self.spec.option("maxlen")),), dtype="int32"),
            layers.Embedding(self.vocabulary(), int(self.spec.option("embed"))),
            layers.Bidirectional(keras_lstm(keras, int(self.spec.option("units")), lstm_kernel)),
            layers.Dropout(0.5),
            layers.Dense(1, activation="sigmoid"),
        ]

    def flops_inputs(self, batch: int) -> Any:
        return token_ids(self.vocabulary(), batch, int(self.spec.option("maxlen")))


WORKLOAD = ImdbBiLstm()
