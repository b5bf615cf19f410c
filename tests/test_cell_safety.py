"""The runner's safety parts, each alone: how a signal death is recorded, the host's timed-cell
lock, records kept aside until their successor is written, and data sets checked at planning."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from devicebench.data import prepare_dataset
from devicebench.plan.data_check import (
    InputUnusable,
    check_prepared,
    expected_settings,
    prepare_command,
)
from devicebench.record import new_record, write_atomic
from devicebench.run import kills
from devicebench.run.kept import keep, kept_path

# -- a worker dead by a signal -----------------------------------------------------------------


def test_sigkill_is_oom_only_when_the_kernel_counted_an_oom_kill():
    before = {"/sys/fs/cgroup/memory.events": 3, "/proc/vmstat": 10}
    same = kills.signal_result(signal.SIGKILL, before, dict(before))
    assert same["status"] == "killed" and "SIGKILL" in same["message"]
    rose = kills.signal_result(signal.SIGKILL, before, before | {"/proc/vmstat": 11})
    assert rose["status"] == "oom" and "/proc/vmstat" in rose["message"]
    assert kills.signal_result(signal.SIGTERM, before, before)["status"] == "killed"
    crash = kills.signal_result(signal.SIGSEGV, before, before)
    assert crash == {"status": "error", "message": "worker died by SIGSEGV"}


@pytest.mark.parametrize(
    ("line", "counter"),
    [
        ("0::/user.slice/job-7\n", "user.slice/job-7/memory.events"),  # cgroup v2
        ("4:memory:/process_api/abc\n", "memory/process_api/abc/memory.oom_control"),  # v1
    ],
)
def test_the_oom_kill_counter_is_read_from_the_workers_cgroup(tmp_path, line, counter):
    proc = tmp_path / "cgroup"
    proc.write_text(line)
    file = tmp_path / "root" / counter
    file.parent.mkdir(parents=True)
    file.write_text("oom 2\noom_kill 5\noom_group_kill 0\n")
    files = kills.oom_kill_files(proc, tmp_path / "root")
    assert files[0] == file and files[-1] == Path("/proc/vmstat")
    assert kills.oom_kills(files[:1]) == {str(file): 5}


# -- one timed cell per host ------------------------------------------------------------------

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, b'{"pid": %d, "cell": "first", "since": "now"}' % os.getpid(), 0)
print("held", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
"""
TAKE = """
import sys
from devicebench.run.bench_lock import timed_slot
with timed_slot("second") as slot:
    print("entered", slot["waited_s"] > 0, flush=True)
"""


def test_a_second_timed_cell_waits_for_the_first_and_says_for_whom(tmp_path):
    lock, release = tmp_path / "timed.lock", tmp_path / "release"
    env = dict(os.environ, DEVICEBENCH_LOCK=str(lock), PYTHONPATH=str(REPO / "src"))
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), str(release)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout.readline().strip() == "held"
        second = subprocess.Popen(
            [sys.executable, "-c", TAKE], env=env, stdout=subprocess.PIPE, text=True
        )
        waiting = second.stdout.readline()
        assert f"waiting for {lock}" in waiting and f"pid {first.pid} (cell first" in waiting
        assert second.poll() is None, "the second cell ran while the first held the lock"
        release.touch()
        assert second.stdout.readline().strip() == "entered True"
        assert second.wait(timeout=60) == 0
    finally:
        release.touch()
        first.wait(timeout=60)


def test_the_lock_file_is_not_followed_through_a_link(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep me")
    (tmp_path / "timed.lock").symlink_to(target)
    env = dict(os.environ, DEVICEBENCH_LOCK=str(tmp_path / "timed.lock"))
    env["PYTHONPATH"] = str(REPO / "src")
    done = subprocess.run([sys.executable, "-c", TAKE], env=env, capture_output=True, text=True)
    assert done.returncode != 0 and "Too many levels of symbolic links" in done.stderr
    assert target.read_text() == "keep me"


# -- a record kept aside until its successor is written ----------------------------------------


def _record(path: Path, status: str, created: str) -> dict:
    record = new_record("task~x/mode~train", {"task": "x", "mode": "train"})
    record["status"], record["provenance"] = status, {"created": created}
    write_atomic(path, record)
    return record


def test_a_record_removed_before_its_rerun_is_kept_until_a_successor_exists(tmp_path):
    out = tmp_path / "cells" / "mode~train.json"
    keep(out, _record(out, "ok", "2026-11-01T10:00:00+0000"))
    out.unlink()  # what Snakemake does before it runs the job again
    assert json.loads(kept_path(out).read_text())["provenance"]["created"].startswith("2026-11-01")
    assert keep(out, _record(out, "ok", "2026-11-02T10:00:00+0000")) is None
    assert json.loads(kept_path(out).read_text())["provenance"]["created"].startswith("2026-11-02")
    moved = keep(out, _record(out, "error", "2026-11-03T10:00:00+0000"))
    assert moved == out.with_name("mode~train.json~2026-11-02T10:00:00+0000")
    assert json.loads(moved.read_text())["status"] == "ok"  # the good one, never overwritten
    assert json.loads(kept_path(out).read_text())["status"] == "error"
    assert sorted(p.name for p in out.parent.glob("*.json")) == ["mode~train.json"]


# -- a prepared data set checked at planning ---------------------------------------------------


@pytest.fixture
def prepared(tmp_path):
    """A small synthetic MNIST prepared as the workflow would, and what the config asks."""
    folder = "results/data/mnist/synthetic"
    args = ["--seed", "7", "--train-samples", "256", "--test-samples", "128"]
    manifest = prepare_dataset(
        "mnist", "synthetic", tmp_path / folder, train_samples=256, test_samples=128, seed=7
    )
    config = {"source": "synthetic", "train_samples": 256, "test_samples": 128}
    script = os.path.relpath(REPO / "scripts" / "prepare_data.py", tmp_path)
    command = prepare_command("mnist", "synthetic", folder, args, script)
    return manifest, expected_settings("mnist", config, 7), command


def test_a_whole_data_set_as_configured_passes(prepared):
    manifest, expected, command = prepared
    check_prepared(manifest, expected, command)


def _break_manifest(manifest: Path) -> None:
    manifest.write_bytes(manifest.read_bytes() + b"x")  # one byte appended


def _break_file(manifest: Path) -> None:
    name = json.loads(manifest.read_text())["files"][0]["name"]
    (manifest.parent / name).unlink()


def _flip_a_byte(manifest: Path) -> None:
    path = manifest.parent / json.loads(manifest.read_text())["files"][1]["name"]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # same size, other content
    path.write_bytes(bytes(data))


def _other_sizes(manifest: Path) -> None:
    info = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(info | {"train_samples": 60000, "test_samples": 10000}))


def test_a_workflow_prepared_data_set_of_an_earlier_config_is_left_to_snakemake(prepared):
    """The config's sizes changed: the rule's params did too, so Snakemake prepares it again."""
    manifest, expected, command = prepared
    info = json.loads(manifest.read_text()) | {"prepared_by": "workflow"}
    manifest.write_text(json.dumps(info))
    check_prepared(manifest, expected | {"train_samples": 512}, command)


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (_break_manifest, "cannot be read"),
        (_break_file, "which is missing"),
        (_flip_a_byte, "the file is not that"),
        (_other_sizes, "holds train_samples 60000, the config asks for 256"),
    ],
)
def test_a_broken_or_foreign_data_set_is_refused_with_a_command_that_repairs_it(
    prepared, tmp_path, damage, words
):
    manifest, expected, command = prepared
    check_prepared(manifest, expected, command)  # checksums now remembered (.verified.json)
    time.sleep(0.01)  # a later mtime for the damaged file
    damage(manifest)
    with pytest.raises(InputUnusable) as caught:
        check_prepared(manifest, expected, command)
    message = str(caught.value)
    assert str(manifest) in message and words in message
    assert message.endswith(f"Prepare the data set again with: {command}")
    done = subprocess.run(
        [sys.executable, *shlex.split(command)[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # the command works as written, here
    check_prepared(manifest, expected, command)
