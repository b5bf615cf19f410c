"""Energy over a timed window: RAPL through powercap, NVML where it answers, else null and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from devicebench.measure.energy import POWERCAP, EnergyMeter, per_sample, rapl_domains


def _zone(root: Path, name: str, label: str, uj: int, wrap: int = 10**12) -> Path:
    """One powercap zone as the kernel lays it out (name, energy_uj, max_energy_range_uj)."""
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(label + "\n")
    (zone / "energy_uj").write_text(f"{uj}\n")
    (zone / "max_energy_range_uj").write_text(f"{wrap}\n")
    return zone


def test_rapl_package_and_dram_over_the_window_with_a_wrapped_counter(tmp_path):
    package = _zone(tmp_path, "intel-rapl:0", "package-0", 990_000_000, wrap=1_000_000_000)
    dram = _zone(tmp_path, "intel-rapl:0:0", "dram", 5_000_000)
    _zone(tmp_path, "intel-rapl:0:1", "core", 1)  # part of the package: not added again
    meter = EnergyMeter("cpu", powercap=tmp_path).start()
    (package / "energy_uj").write_text("20000000\n")  # wrapped: 10 J to the wrap, then 20 J
    (dram / "energy_uj").write_text("8000000\n")  # 3 J
    energy = meter.stop(samples=100)
    assert energy["cpu_package_j"] == pytest.approx(30.0)
    assert energy["dram_j"] == pytest.approx(3.0)
    assert energy["cpu_reason"] is None and energy["dram_reason"] is None
    assert energy["gpu_j"] is None and energy["gpu_reason"] == "not a GPU cell"
    assert energy["covers"] == ["cpu_package", "dram"] and energy["total_j"] == pytest.approx(33.0)
    assert energy["joules_per_sample"] == pytest.approx(0.33)
    assert energy["samples_per_kwh"] == pytest.approx(100 * 3.6e6 / 33.0)


def test_no_powercap_gives_null_with_the_reason(tmp_path):
    energy = EnergyMeter("cpu", powercap=tmp_path / "absent").start().stop(samples=10)
    assert energy["cpu_package_j"] is None and energy["joules_per_sample"] is None
    assert "no " + str(tmp_path / "absent") in energy["cpu_reason"]
    assert energy["reason"].startswith("no energy counter readable")
    assert energy["samples"] == 10 and energy["window_s"] >= 0


def test_this_machine_says_why_it_has_no_cpu_energy():
    zones, reason = rapl_domains()
    if zones:
        pytest.skip("this host exposes RAPL")
    assert str(POWERCAP) in reason or "RAPL unreadable" in reason


def test_unreadable_energy_uj_is_a_reason(tmp_path):
    zone = _zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (zone / "energy_uj").chmod(0)
    if _readable(zone / "energy_uj"):
        pytest.skip("running as root: a mode-0 file is still readable")
    zones, reason = rapl_domains(tmp_path)
    assert zones == {} and "RAPL unreadable" in reason and "energy_uj" in reason


def _readable(path: Path) -> bool:
    try:
        path.read_text()
        return True
    except OSError:
        return False


def test_per_sample_without_samples_keeps_the_joules():
    out = per_sample({"gpu_j": 5.0}, samples=0)
    assert out["total_j"] == 5.0 and out["joules_per_sample"] is None and out["reason"]


def test_gpu_energy_from_nvml_where_it_answers():
    meter = EnergyMeter("cuda")
    if meter.gpu is None:
        pytest.skip(f"NVML does not answer here: {meter.gpu_reason}")
    import time

    meter.start()
    time.sleep(0.5)
    energy = meter.stop(samples=1)
    assert energy["gpu_j"] > 0 and "gpu" in energy["covers"]


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_train_and_infer_cells_record_energy_or_why_not(tmp_path, mode):
    """Every timed cell has an `energy` section over its timed window: joules, or null and why."""
    from devicebench.data import prepare_dataset
    from devicebench.plan.grid import make_cell
    from devicebench.run.runner import run_cell

    manifest = prepare_dataset(
        "mnist", "synthetic", tmp_path / "d", train_samples=256, test_samples=128, seed=1
    )
    values = dict(task="mnist_mlp", model="mlp", framework="torch", device="cpu", threads=1)
    values |= dict(precision="fp32", batch_size=64, mode=mode)
    settings = {"dataset": "mnist", "epochs": 1, "steps_per_epoch": 2, "learning_rate": 0.001,
                "repetitions": 3, "warmup_steps": 1, "seed": 1, "timeout_s": 300,
                "noise_cov": 0.1, "min_repetition_s": 0.0}  # fmt: skip
    record = run_cell(make_cell(values, {}, settings), data=manifest, out=tmp_path / "r.json")
    assert record["status"] == "ok", record.get("message")
    energy = record["energy"]
    passes = sum(record["timings"]["passes"])
    assert energy["samples"] == passes * 2 * 64  # 2 steps of 64: the cap, or all 128 test samples
    assert energy["window_s"] > 0
    if energy["joules_per_sample"] is None:
        assert energy["reason"] and (energy["cpu_reason"] or energy["gpu_reason"])
    else:
        assert energy["samples_per_kwh"] == pytest.approx(3.6e6 / energy["joules_per_sample"])
