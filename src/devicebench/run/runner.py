"""Run one cell in a fresh worker process and write its record, whatever the outcome.

The runner decides skips (a device this host lacks), sets thread variables before the worker
imports any framework, enforces the cell's time limit by killing the worker, and writes the
record atomically, so a crash of the worker leaves a record saying so and a kill of the runner
leaves none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from devicebench import __version__, scenarios
from devicebench.atomic import atomic_path
from devicebench.frameworks import KERAS_BACKENDS
from devicebench.measure import environment, marks
from devicebench.measure.devices import has_device, resolve_threads
from devicebench.plan.cellspec import CellSpec
from devicebench.plan.data_check import read_manifest
from devicebench.record import new_record, read_record, write_atomic
from devicebench.run import kills, launchers
from devicebench.run.bench_lock import timed_slot
from devicebench.run.copies_runner import copies_of, run_packed
from devicebench.run.kept import keep
from devicebench.run.output_space import check_output
from devicebench.run.processes import REPO, die_with_parent
from devicebench.run.threads import thread_environment
from devicebench.workloads import get


def code_version() -> str:
    """The git commit of the code (with '+dirty' for uncommitted changes), else the version.

    DEVICEBENCH_CODE_VERSION names it on a host that receives a copy of the tree without its
    current git history (benchmarks/gpu_host.sh sets it from the commit the call was made at)."""
    if given := os.environ.get("DEVICEBENCH_CODE_VERSION"):  # a commit, or version+commit
        return given if given.startswith(f"{__version__}+") else f"{__version__}+{given}"
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty=+dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        return f"{__version__}+{commit}"
    except (OSError, subprocess.SubprocessError):
        return __version__


def _data_section(manifest: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The data set as the cell used it: the manifest's counts, or the cell's own cap."""
    info = read_manifest(manifest)  # InputUnusable, naming the file: no traceback, no record
    keys = ("dataset", "source", "synthetic", "train_samples", "test_samples")
    section = {key: info.get(key) for key in keys} | {"manifest": str(manifest)}
    if settings.get("test_samples"):
        section["test_samples"] = min(int(settings["test_samples"]), int(info["test_samples"]))
    return section


def _worker_env(threads: int, device: str, framework: str = "torch") -> dict[str, str]:
    env = dict(os.environ)
    if framework in KERAS_BACKENDS:  # read once, when keras is imported
        env["KERAS_BACKEND"] = KERAS_BACKENDS[framework]
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        if device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""  # keras would take a visible GPU by itself
    env.update(thread_environment(threads))
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    if device == "cuda":
        env.setdefault("CUDA_VISIBLE_DEVICES", "0")
    return env


# The marks scripts/run_cell.py sets in this process before run_cell (devicebench.measure.marks).
RUNNER_MARKS = ("process_start", "runner_imported")


class Orphaned(RuntimeError):
    """The workflow that started this cell is gone (e.g. snakemake killed by SIGKILL)."""


class Killed(RuntimeError):
    """The worker was killed from outside (kills.py): no record, so the next run measures it."""


def _is_snakemake(process: Any) -> bool:
    """`snakemake ...`, `python /path/bin/snakemake ...` or `python -m snakemake ...`."""
    import psutil

    try:
        command = process.cmdline()
    except psutil.Error:
        return False
    return "snakemake" in [Path(arg).name for arg in command[:2]] or command[1:3] == [
        "-m",
        "snakemake",
    ]


def watched_ancestors() -> list[Any]:
    """The processes whose death means nobody waits for this cell any more.

    Under Snakemake: every ancestor up to and including the nearest snakemake process (a
    SIGKILLed snakemake leaves its job's shell running, so the direct parent alone is not
    enough); run by hand: the direct parent. Ancestors above snakemake (a login shell that a
    `nohup snakemake &` outlives) are not watched.
    """
    import psutil  # here: the runner needs it only while it waits

    chain = []
    for process in psutil.Process().parents():
        if process.pid == 1:
            break
        chain.append(process)
        if _is_snakemake(process):
            return chain
    return chain[:1]


def _run_worker(settings: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run the worker; its result document, or a failure of our own making."""
    with tempfile.TemporaryDirectory(prefix="devicebench-cell-") as tmp:
        settings_path, result_path = Path(tmp, "settings.json"), Path(tmp, "result.json")
        settings_path.write_text(json.dumps(settings))
        env = _worker_env(settings["threads_resolved"], settings["device"], settings["framework"])
        launcher = launchers.for_cell(settings)  # torchrun: still one job, `gpus` ranks
        command, env = launcher.command(settings_path, result_path, settings, env)
        spawned, ooms = time.time(), kills.oom_kills()
        process = subprocess.Popen(
            command, env=env, start_new_session=True, preexec_fn=die_with_parent
        )
        try:
            returncode = _wait(process, timeout_s, watched_ancestors())
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return {"status": "timeout", "message": f"killed after the {timeout_s:g} s time limit"}
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            raise
        if result_path.exists():
            return _with_marks(read_record(result_path), spawned)
        if failed_rank := launcher.failed_result(result_path):
            return read_record(failed_rank)
        if returncode < 0:  # oom only on the kernel's evidence (kills.py)
            return kills.signal_result(-returncode, ooms, kills.oom_kills())
        return {"status": "error", "message": f"worker exited {returncode} without a result"}


def _with_marks(result: dict[str, Any], spawned: float) -> dict[str, Any]:
    """The worker's result with the runner's marks joined to its own (timings.marks)."""
    if isinstance(result.get("timings"), dict):
        runner = {k: v for k, v in marks.marks().items() if k in RUNNER_MARKS}
        result["timings"]["marks"] = marks.merged(
            runner,
            {"worker_spawn": spawned},
            result["timings"].get("marks") or {},
            {"worker_exited": time.time()},
        )
    return result


def _wait(process: subprocess.Popen, timeout_s: float, watched: list[Any]) -> int:
    """Wait for the worker; raise Orphaned as soon as a watched ancestor has died."""
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(process.args, timeout_s)
        try:
            return process.wait(timeout=min(0.5, remaining))
        except subprocess.TimeoutExpired:
            pass
        gone = [p for p in watched if not p.is_running()]
        if gone:
            raise Orphaned(
                f"process {gone[0].pid} that started this cell is gone (snakemake killed?); "
                "the cell stops without a record so that it never times itself beside another run"
            )


def _keep_killed_note(record: dict[str, Any], folder: str | Path) -> None:
    """A killed cell's record goes to its log folder as killed.json, not to its record path."""
    note = Path(folder) / "killed.json"
    with atomic_path(note) as tmp:
        tmp.write_text(json.dumps(record, indent=2, default=str) + "\n")
    raise Killed(
        f"{record['message']}; no record written (the note is {note}), so the next run "
        "measures this cell again"
    )


def run_cell(cell: CellSpec, *, data: Path, out: Path, extra: dict[str, Any] | None = None) -> dict:
    """Measure `cell` and write its record to `out`; returns the record. Raises OutputUnusable
    before anything runs when `out`'s folder (or the log folder) cannot take it."""
    check_output(out, *([Path(extra["log_dir"])] if extra and extra.get("log_dir") else []))
    settings = cell.run_settings() | (extra or {})
    scenario = scenarios.for_cell(settings)  # an unknown mode: an error before any work
    threads = resolve_threads(settings["threads"])
    launcher = launchers.for_cell(settings)  # how its worker starts (run/launchers)
    settings |= launcher.settings(settings, threads)  # torchrun: threads shared among ranks
    settings |= {"threads_resolved": settings.get("threads_per_rank", threads), "data": str(data)}
    record = new_record(cell.cell_id, cell.values)
    record["axes"]["threads"] = threads
    record["axes"]["threads_requested"] = settings["threads"]
    record["provenance"] = {
        "seed": settings["seed"],
        "config_hash": cell.config_hash(),
        "code_version": (version := code_version()),
        "code_clean": not version.endswith("+dirty"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "runner": settings.get("runner", "run_cell"),
        "settings": settings,
    }
    record["data"] = _data_section(data, settings)
    device = settings["device"]
    # first: 'asks for 2 GPUs, host has 0' says more than 'no cuda device'
    skip = launcher.skip_reason(settings)
    skip = skip or scenario.skip_reason(settings)  # e.g. an engine or format it cannot run
    if not skip and not has_device(device):
        skip = f"no {device} device on host {os.uname().nodename}"
    if not skip:
        skip = get(settings["task"]).skip_reason(settings)  # e.g. no Keras architecture
    if skip:
        record["status"] = "skipped"
        record["message"] = skip
        record["environment"] = environment.capture(threads)
        print(f"[devicebench] skipped: {record['message']}", flush=True)
    else:
        print(f"[devicebench] cell {cell.cell_id} on {threads} thread(s)", flush=True)
        with timed_slot(cell.cell_id) as slot:  # one timed cell per host (bench_lock.py)
            if copies_of(settings) > 1:  # a packed cell: N copies at once, throughput summed
                result = run_packed(settings, float(settings["timeout_s"]), _run_worker)
            else:
                result = _run_worker(settings, float(settings["timeout_s"]))
        record["provenance"]["deterministic"] = result.pop("deterministic", None)
        record["provenance"]["bench_lock"] = slot
        record.update(result)
        if record["status"] == "killed":
            _keep_killed_note(record, settings.get("log_dir") or out.parent)
        if "environment" not in record:  # a killed or timed-out worker wrote none
            record["environment"] = environment.capture(threads)
        print(f"[devicebench] status {record['status']} {record['message']}".rstrip(), flush=True)
    if isinstance(record.get("timings"), dict) and "marks" in record["timings"]:
        record["timings"]["marks"]["record_written"] = time.time()
    write_atomic(out, record)
    if moved := keep(out, record):
        print(f"[devicebench] the ok record it replaces is kept at {moved}", flush=True)
    return record
