"""What the six classic workloads share in torch: the LSTM kernels and Keras' initialisation.

Keras' defaults (Glorot-uniform kernels, zero biases, uniform ±0.05 embeddings, orthogonal
recurrent kernels with forget-gate bias 1) are used so that the torch and Keras runs of one task
start from the same distribution and reach comparable accuracy. Parameter counts equal Keras'
trainable counts: torch's LSTM has a second, redundant bias, which is frozen at zero here.
Imported only by a torch cell (it imports torch).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class LoopLSTM(nn.Module):
    """A generic LSTM: gate matmuls unrolled over time in Python, no fused or cuDNN kernel.

    One input bias, as Keras has; returns the final hidden state.
    """

    def __init__(self, inputs: int, units: int) -> None:
        super().__init__()
        self.units = units
        self.ih = nn.Linear(inputs, 4 * units)
        self.hh = nn.Linear(units, 4 * units, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.units)
        c = torch.zeros_like(h)
        projected = self.ih(x)  # all time steps at once, as Keras' generic loop does
        for t in range(x.shape[1]):
            i, f, g, o = (projected[:, t] + self.hh(h)).chunk(4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h


class RNN(nn.Module):
    """Final hidden state of a (bi)directional LSTM, with the fused kernel or the generic loop."""

    def __init__(self, inputs: int, units: int, kernel: str, bidirectional: bool) -> None:
        super().__init__()
        self.kernel, self.bidirectional = kernel, bidirectional
        if kernel == "generic":
            self.forward_rnn = LoopLSTM(inputs, units)
            self.backward_rnn = LoopLSTM(inputs, units) if bidirectional else None
        else:
            self.lstm = nn.LSTM(inputs, units, batch_first=True, bidirectional=bidirectional)
            for name, param in self.lstm.named_parameters():
                if name.startswith("bias_hh"):
                    param.requires_grad_(False)  # Keras has one bias; keep this one at zero

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kernel == "generic":
            h = self.forward_rnn(x)
            if self.backward_rnn is not None:
                h = torch.cat([h, self.backward_rnn(x.flip(1))], dim=1)
            return h
        _, (h_n, _) = self.lstm(x)
        return torch.cat(list(h_n), dim=1)


def keras_init(module: nn.Module) -> None:
    """Glorot-uniform weights and zero biases, as Keras layers start."""
    if isinstance(module, nn.Linear | nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.uniform_(module.weight, -0.05, 0.05)
    elif isinstance(module, nn.LSTM):
        for name, param in module.named_parameters():
            if name.startswith("weight_ih"):
                nn.init.xavier_uniform_(param)
            elif name.startswith("weight_hh"):
                nn.init.orthogonal_(param)
            else:
                nn.init.zeros_(param)
                if name.startswith("bias_ih"):
                    param.data.chunk(4)[1].fill_(1.0)  # unit forget bias
    elif isinstance(module, LoopLSTM):
        nn.init.orthogonal_(module.hh.weight)
        module.ih.bias.data.chunk(4)[1].fill_(1.0)


def keras_lstm(keras: Any, units: int, kernel: str) -> Any:
    """Keras' LSTM layer: use_cudnn="auto" takes the fused cuDNN kernel where eligible (a CUDA
    device); False forces Keras' generic step loop."""
    return keras.layers.LSTM(units, use_cudnn="auto" if kernel == "cudnn" else False)
