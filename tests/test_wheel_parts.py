"""Wheels carried to a GPU host. One over a call's carry travels in parts over consecutive calls:
gpu_host.sh joins the parts it has gathered and installs the wheel once it is whole, checked
against its SHA-256. Installed with --no-deps, their requirements are checked before any cell."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import wheel_parts  # noqa: E402
import wheel_requirements  # noqa: E402


def _wheel(
    folder: Path, payload_bytes: int, name: str = "carried_pkg", requires: tuple[str, ...] = ()
) -> Path:
    """A real, installable wheel of one module holding `payload_bytes` of incompressible data,
    whose metadata names `requires`."""
    version = "1.0"
    needs = "".join(f"Requires-Dist: {line}\n" for line in requires)
    files = {
        f"{name}/__init__.py": b"ANSWER = 42\n",
        f"{name}/blob.bin": hashlib.shake_256(b"seed").digest(payload_bytes),
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}".encode()
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
        for path, data in files.items()
    ]
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def test_a_wheel_split_then_joined_over_two_calls_installs(tmp_path):
    wheel = _wheel(tmp_path, 300_000)
    parts = wheel_parts.split(wheel, tmp_path / "parts", part_mib=0.2)
    assert [p.name.rsplit(".", 1)[1] for p in parts] == ["part-1-of-2", "part-2-of-2"]
    assert all(p.stat().st_size <= 0.2 * 2**20 + 80 for p in parts)
    store, joined = tmp_path / "store", tmp_path / "joined"
    first_call, second_call = tmp_path / "call1", tmp_path / "call2"
    first_call.mkdir()
    second_call.mkdir()
    parts[0].rename(first_call / parts[0].name)
    parts[1].rename(second_call / parts[1].name)

    made, waiting = wheel_parts.join(first_call, store, joined)
    assert made == [] and waiting == [f"{wheel.name}: has 1 of 2 parts, waits for [2]"]
    assert not list(first_call.iterdir()), "the carried part moved into the store"

    made, waiting = wheel_parts.join(second_call, store, joined)
    assert waiting == [] and made == [joined / wheel.name]
    assert made[0].read_bytes() == wheel.read_bytes()

    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
         "--target", str(site), str(made[0])],
        check=True,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", "import carried_pkg; print(carried_pkg.ANSWER)"],
        capture_output=True, text=True, check=True, env={"PYTHONPATH": str(site)},
    )  # fmt: skip
    assert done.stdout.strip() == "42"


def test_a_damaged_part_is_refused_and_no_wheel_is_written(tmp_path):
    wheel = _wheel(tmp_path, 300_000)
    parts = wheel_parts.split(wheel, tmp_path / "parts", part_mib=0.2)
    damaged = bytearray(parts[1].read_bytes())
    damaged[-1] ^= 0xFF
    parts[1].write_bytes(bytes(damaged))
    with pytest.raises(SystemExit, match="do not match the wheel's SHA-256"):
        wheel_parts.join(tmp_path / "parts", tmp_path / "store", tmp_path / "joined")
    assert not (tmp_path / "joined").exists()


def test_parts_of_two_builds_of_one_wheel_are_refused(tmp_path):
    old = wheel_parts.split(_wheel(tmp_path, 300_000), tmp_path / "old", part_mib=0.2)
    new = wheel_parts.split(_wheel(tmp_path, 310_000), tmp_path / "new", part_mib=0.2)
    carried = tmp_path / "carried"
    carried.mkdir()
    old[0].rename(carried / old[0].name)
    new[1].rename(carried / new[1].name)
    with pytest.raises(SystemExit, match="name different wheels"):
        wheel_parts.join(carried, tmp_path / "store", tmp_path / "joined")


def test_a_file_that_is_not_a_part_is_named(tmp_path):
    carried = tmp_path / "carried"
    carried.mkdir()
    (carried / "x.whl.part-1-of-1").write_bytes(b"PK\x03\x04 not a part")
    with pytest.raises(SystemExit, match="not a wheel part"):
        wheel_parts.join(carried, tmp_path / "store", tmp_path / "joined")


def test_a_carried_wheels_missing_requirement_stops_the_call_before_any_cell(tmp_path):
    """As fastapi's opentelemetry-api on 2026-11-29 (here a name no environment has)."""
    needs = (
        "packaging>=20",  # the host has it: fine
        "not-carried-anywhere==1.0",  # neither carried nor on the host
        "sphinx; extra == 'docs'",  # an extra: not asked for
        "pywin32; sys_platform == 'win32'",  # another platform's
        "Snake_Case.Dep",  # carried, under another spelling of its name
    )
    wheels = [
        _wheel(tmp_path, 10, "served_pkg", needs),
        _wheel(tmp_path, 10, "snake_case_dep"),
    ]
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
         "--target", str(site), *map(str, wheels)],
        check=True,
    )  # fmt: skip
    assert wheel_requirements.missing(site) == [("served_pkg", "not-carried-anywhere")]
    script = REPO / "benchmarks" / "wheel_requirements.py"
    stopped = subprocess.run(
        [sys.executable, str(script), str(site), "--missing-ok", "pulp"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert stopped.returncode == 2
    assert "served_pkg requires not-carried-anywhere, which neither the carry nor the host has" in (
        stopped.stdout
    )
    allowed = [sys.executable, str(script), str(site), "--missing-ok", "Not_Carried.Anywhere"]
    assert subprocess.run(allowed, capture_output=True).returncode == 0
