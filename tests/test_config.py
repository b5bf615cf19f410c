"""Every bad config is refused with a message that names the key, before any job starts."""

from __future__ import annotations

import pytest
from conftest import REPO

from devicebench.measure import devices
from devicebench.plan.config import ConfigError, check_config, load_config


def test_shipped_configs_are_valid():
    study = load_config(REPO / "config" / "config.yaml")
    assert study["repetitions"] >= 3
    assert study["devices"]["cpu"]["threads"]


def test_defaults_are_filled(tiny_config):
    del tiny_config["seed"]
    study = check_config(tiny_config)
    assert study["seed"] == 1234
    assert study["noise_cov"] == 0.1


def _mutate(config: dict, path: str, value) -> dict:
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return config


BAD = [
    # (key path to set, value, words the message must contain)
    ("tasks.mnist_mlp.batch_sizes", [0], ["tasks.mnist_mlp.batch_sizes[0]", "0"]),
    ("batch_sizes", [-4], ["batch_sizes[0]", "-4"]),
    ("batch_sizes", [], ["batch_sizes", "[]"]),
    ("frameworks", [], ["frameworks"]),
    ("modes", ["train", "deploy"], ["modes[1]", "deploy"]),
    ("frameworks", ["jax"], ["frameworks[0]", "jax", "torch"]),
    ("tasks.resnet9000", {"epochs": 1}, ["tasks.resnet9000", "unknown task"]),
    ("tasks.mnist_mlp.models", ["transformer"], ["tasks.mnist_mlp.models[0]", "transformer"]),
    ("batch_szes", [1], ["batch_szes", "unknown key"]),
    ("tasks.mnist_mlp.epoch", 3, ["tasks.mnist_mlp", "epoch"]),
    ("batch_sizes", [32, 32], ["batch_sizes", "duplicate", "32"]),
    ("devices.cpu.threads", [1, 1], ["devices.cpu.threads", "duplicate"]),
    ("devices.cpu.threads", [0], ["devices.cpu.threads[0]", "0"]),
    ("devices.tpu", True, ["devices", "tpu"]),
    ("repetitions", 1, ["repetitions", "1"]),
    ("seed", "abc", ["seed", "abc"]),
    ("precisions", ["fp8"], ["precisions[0]", "fp8"]),
    ("datasets.mnist.source", "ftp", ["datasets.mnist.source", "ftp"]),
    ("datasets.mnist.source", "path", ["datasets.mnist.path", "required"]),
    ("tasks", {}, ["tasks"]),
    ("frameworks", KeyError, ["frameworks", "required"]),
    ("memory_limit_mb", 0, ["memory_limit_mb", "0"]),
    ("tasks.mnist_mlp.timeout_s", -1, ["tasks.mnist_mlp.timeout_s", "-1"]),
    ("slurm", {"partiton": "gpu"}, ["slurm", "partiton", "unknown key"]),
    ("slurm", {"mem_mb": "lots"}, ["slurm.mem_mb", "lots"]),
    ("slurm", {"gpu_model": "h100:2"}, ["slurm.gpu_model", "h100:2"]),
]


@pytest.mark.parametrize(("path", "value", "words"), BAD, ids=[b[0] + repr(b[1]) for b in BAD])
def test_bad_config_names_the_key(tiny_config, path, value, words):
    config = _mutate(tiny_config, path, value)
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    message = str(caught.value)
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"


def test_required_cuda_on_a_host_without_it_is_an_error(tiny_config, monkeypatch):
    monkeypatch.setattr(devices, "cuda_device_count", lambda: 0)
    tiny_config["devices"]["cuda"] = True
    with pytest.raises(ConfigError, match=r"devices\.cuda.*no cuda device"):
        check_config(tiny_config)
    tiny_config["check_devices"] = False  # a cluster: jobs run on other hosts
    assert check_config(tiny_config)["devices"]["cuda"] is True


def test_thread_count_above_the_cores_warns(tiny_config):
    tiny_config["devices"]["cpu"]["threads"] = [devices.host_cores() + 1]
    with pytest.warns(UserWarning, match=r"devices\.cpu\.threads.*more than"):
        check_config(tiny_config)
