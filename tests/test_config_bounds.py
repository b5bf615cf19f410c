"""Hostile configs are refused quickly, with a short message naming the file or key."""

from __future__ import annotations

import pytest
from conftest import REPO

from devicebench.plan.config import ConfigError, check_config, combine_configs
from devicebench.plan.config_files import main as check_files
from devicebench.plan.config_files import read_yaml

KEYS = ["study", "repetitions", "seed", "timeout_s", "noise_cov", "warmup_steps", "modes"]


def alias_bomb(levels: int) -> str:
    """Nested aliases: a few hundred bytes that expand to 9**levels values."""
    lines = [f"{KEYS[0]}: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"{KEYS[i]}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(7))  # 4.8 million values expanded
    assert path.stat().st_size < 600
    with pytest.raises(ConfigError, match=r"bomb\.yaml: more than 1,000,000 values"):
        read_yaml(path)


def test_a_message_never_prints_a_huge_value(tmp_path):
    path = tmp_path / "aliases.yaml"
    path.write_text(alias_bomb(6))  # 531,441 values: under the limit, wrong types
    config = combine_configs(read_yaml(REPO / "config" / "config.yaml"), [read_yaml(path)])
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert len(str(caught.value)) < 400, str(caught.value)[:400]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("key", ["timeout_s", "min_repetition_s", "noise_cov"])
def test_nan_and_infinity_name_the_key(tiny_config, key, value):
    tiny_config[key] = value
    with pytest.raises(ConfigError, match=rf"config key {key}: NaN or infinity"):
        check_config(tiny_config)


def test_nan_deep_inside_names_its_path(tiny_config):
    tiny_config["tasks"]["mnist_mlp"]["timeout_s"] = float("nan")
    with pytest.raises(ConfigError, match=r"tasks\.mnist_mlp\.timeout_s"):
        check_config(tiny_config)


@pytest.mark.parametrize(("key", "value"), [("batch_sizes", [64.0]), ("repetitions", 3.0)])
def test_integers_stay_integers(tiny_config, key, value):
    tiny_config[key] = value
    with pytest.raises(ConfigError, match=rf"config key {key}.*not of type 'integer'"):
        check_config(tiny_config)


def test_a_non_utf8_file_is_named(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("study: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin1\.yaml: not UTF-8 text \(byte 0xe9 at offset 10"):
        read_yaml(path)


def test_a_complex_key_is_named(tmp_path):
    path = tmp_path / "complex.yaml"
    path.write_text("? [a, b]\n: 1\n")
    with pytest.raises(ConfigError, match=r"complex\.yaml, line 1: a key must be a name"):
        read_yaml(path)


def test_the_checker_reports_every_file_and_never_crashes(tmp_path, capsys):
    files = {
        "latin1.yaml": "seed: caf\u00e9\n".encode("latin-1"),
        "complex.yaml": b"? {a: 1}\n: 1\n",
        "deep.yaml": b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n",
        "bomb.yaml": alias_bomb(7).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    good = REPO / "config" / "config.yaml"
    assert check_files([str(tmp_path / name) for name in files] + [str(good)]) == 1
    out = capsys.readouterr()
    for name in files:
        assert f"config file {tmp_path / name}" in out.err + out.out
    assert f"{good}: readable" in out.out
    assert "Traceback" not in out.err + out.out
