"""The study's architectures as native PyTorch modules, initialised as Keras initialises them.

Keras' defaults (Glorot-uniform kernels, zero biases, uniform ±0.05 embeddings, orthogonal
recurrent kernels with forget-gate bias 1) are used so that the torch and Keras runs of one task
start from the same distribution and reach comparable accuracy. Parameter counts equal Keras'
trainable counts: torch's LSTM has a second, redundant bias, which is frozen at zero here.
"""

from __future__ import annotations

import torch
from torch import nn

from devicebench.tasks import get_task
from devicebench.tasks.inputs import vocabulary


def mnist_mlp() -> nn.Module:
    """784-512-512-10 with ReLU and dropout 0.2 (Keras example mnist_mlp.py)."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 512),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Dropout(0.2),
        nn.Linear(512, 10),
    )


def mnist_cnn() -> nn.Module:
    """conv32-conv64-maxpool-dropout 0.25-dense128-dropout 0.5-10 (Keras example mnist_cnn.py)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 3),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(9216, 128),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(128, 10),
    )


def cifar10_cnn() -> nn.Module:
    """conv32(same)-conv32-pool-drop-conv64(same)-conv64-pool-drop-512-drop-10 (cifar10_cnn.py)."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout(0.25),
        nn.Flatten(),
        nn.Linear(2304, 512),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Linear(512, 10),
    )


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


class FastText(nn.Module):
    """Embedding 50, global average pooling, one logit (imdb_fasttext.py)."""

    def __init__(self, rows: int, embed: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(rows, embed)
        self.out = nn.Linear(embed, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.embedding(x).mean(dim=1)).squeeze(1)


class BiLSTM(nn.Module):
    """Embedding 128, bidirectional LSTM 64, dropout 0.5, one logit (imdb_bidirectional_lstm)."""

    def __init__(self, rows: int, embed: int, units: int, kernel: str) -> None:
        super().__init__()
        self.embedding = nn.Embedding(rows, embed)
        self.rnn = RNN(embed, units, kernel, bidirectional=True)
        self.dropout = nn.Dropout(0.5)
        self.out = nn.Linear(2 * units, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(self.rnn(self.embedding(x)))).squeeze(1)


class CharLSTM(nn.Module):
    """One-hot characters, LSTM 128, softmax logits over the character set."""

    def __init__(self, chars: int, units: int, kernel: str) -> None:
        super().__init__()
        self.chars = chars
        self.rnn = RNN(chars, units, kernel, bidirectional=False)
        self.out = nn.Linear(units, chars)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        onehot = nn.functional.one_hot(x, self.chars).to(self.out.weight.dtype)
        return self.out(self.rnn(onehot))


BUILDERS = {("mnist_mlp", "mlp"): mnist_mlp, ("mnist_cnn", "cnn"): mnist_cnn}
INPUT_SHAPES = {"mnist_mlp": (784,), "mnist_cnn": (1, 28, 28), "cifar10_cnn": (3, 32, 32)}


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


def build_model(
    task: str, model: str, seed: int, *, outputs: int = 10, lstm_kernel: str = "cudnn"
) -> nn.Module:
    """A freshly initialised model; the same seed gives the same weights."""
    torch.manual_seed(seed)
    spec = get_task(task)
    if (task, model) in BUILDERS:
        net = BUILDERS[(task, model)]()
    elif (task, model) == ("cifar10_cnn", "cnn"):
        net = cifar10_cnn()
    elif (task, model) == ("imdb_fasttext", "fasttext"):
        net = FastText(vocabulary(spec), int(spec.option("embed")))
    elif (task, model) == ("imdb_bilstm", "bilstm"):
        units = int(spec.option("units"))
        net = BiLSTM(vocabulary(spec), int(spec.option("embed")), units, lstm_kernel)
    elif (task, model) == ("textgen_lstm", "lstm"):
        net = CharLSTM(outputs, int(spec.option("units")), lstm_kernel)
    else:
        raise KeyError(f"no torch model {model!r} for task {task!r}")
    net.apply(keras_init)  # children first: LoopLSTM's own init runs after its Linears'
    return net


def make_optimizer(
    name: str, params, lr: float, options: dict[str, float]
) -> torch.optim.Optimizer:
    """The task's optimizer with Keras' hyperparameter conventions."""
    params = [p for p in params if p.requires_grad]
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, **options)
    if name == "adadelta":
        return torch.optim.Adadelta(params, lr=lr, **options)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, **options)
    raise KeyError(f"unknown optimizer {name!r}")
