"""A real single-node SLURM cluster on this machine, for the cluster tests.

Installs Debian's slurm-wlm and munge when missing, writes /etc/slurm/slurm.conf (where sbatch,
squeue and the srun inside each job find it), starts munged, slurmctld and slurmd in the
foreground as our own child processes, and stops exactly those processes afterwards. There is no
accounting database: the executor plugin is told to poll squeue.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SLURM_CONF = Path("/etc/slurm/slurm.conf")
PACKAGES = ("slurm-wlm", "munge")
NEEDED = ("slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "srun", "munged")


class Unavailable(RuntimeError):
    """This machine cannot run a SLURM cluster; the message says why (tests skip with it)."""


@dataclass
class Cluster:
    """The daemons we started, and the files we wrote, so teardown touches nothing else."""

    state: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    wrote_conf: bool = False
    old_conf: bytes | None = None

    def stop(self) -> None:
        """Stop our daemons by their pids (slurmd first), then put slurm.conf back."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.wrote_conf:
            if self.old_conf is None:
                SLURM_CONF.unlink(missing_ok=True)
            else:
                SLURM_CONF.write_bytes(self.old_conf)


def _missing_tools() -> list[str]:
    extra = ["/usr/sbin", "/usr/local/sbin"]
    path = os.pathsep.join([os.environ.get("PATH", ""), *extra])
    return [tool for tool in NEEDED if shutil.which(tool, path=path) is None]


def install() -> None:
    """apt-get install slurm-wlm and munge when a tool is missing; Unavailable if we cannot."""
    if not _missing_tools():
        return
    if os.geteuid() != 0:
        raise Unavailable("SLURM is not installed and installing it needs root")
    if shutil.which("apt-get") is None:
        raise Unavailable("SLURM is not installed and there is no apt-get to install it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(command)} failed: {done.stderr[-500:]}")
    if _missing_tools():
        raise Unavailable(f"still missing after apt-get: {', '.join(_missing_tools())}")


def slurm_conf(state: Path, node: str, cpus: int, memory_mb: int) -> str:
    """A single-node, cgroup-free, accounting-free configuration."""
    return f"""\
ClusterName=devicebench
SlurmctldHost={node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
SlurmctldPort=46817
SlurmdPort=46818
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/d
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName={node} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
"""


def _sbin(name: str) -> str:
    return shutil.which(name, path=os.pathsep.join(["/usr/sbin", os.environ.get("PATH", "")]))


def _wait(check, timeout: float, what: str, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        dead = [p.args[0] for p in cluster.processes if p.poll() is not None]
        if dead:
            raise Unavailable(f"{', '.join(dead)} exited early; logs in {cluster.state}")
        time.sleep(0.5)
    raise Unavailable(f"timed out waiting for {what}; logs in {cluster.state}")


def node_idle() -> bool:
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() in ("idle", "mixed", "allocated")


def start(state: Path) -> Cluster:
    """Install if needed, configure and start the daemons; the node is idle on return."""
    install()
    if SLURM_CONF.exists() and node_idle():
        raise Unavailable("a SLURM cluster already runs here; not touching it")
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o755)
    for sub in ("ctld", "d", "munge"):
        (state / sub).mkdir(exist_ok=True)
    cluster = Cluster(state=state)
    node = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    memory_mb = int(psutil.virtual_memory().total / 2**20 * 0.9)
    cluster.old_conf = SLURM_CONF.read_bytes() if SLURM_CONF.exists() else None
    SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SLURM_CONF.write_text(slurm_conf(state, node, cpus, memory_mb))
    cluster.wrote_conf = True
    try:
        _start_munge(cluster)
        for daemon in ("slurmctld", "slurmd"):
            log = open(state / f"{daemon}.out", "w")  # noqa: SIM115 - lives as long as the daemon
            cluster.processes.append(
                subprocess.Popen([_sbin(daemon), "-D"], stdout=log, stderr=subprocess.STDOUT)
            )
        _wait(node_idle, 60, "the node to become idle in sinfo", cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_munge(cluster: Cluster) -> None:
    """munged in the foreground, its socket in the state folder that sbatch/srun are told of."""
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        subprocess.run(["mungekey", "--create"], check=True, capture_output=True)
        shutil.chown(key, "munge", "munge")
    socket_path = Path("/run/munge/munge.socket.2")
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.chown(socket_path.parent, "munge", "munge")
    if socket_path.exists() and _munge_works():
        return  # a munged that is not ours already serves this host: use it, leave it alone
    log = open(cluster.state / "munged.out", "w")  # noqa: SIM115 - lives as long as munged
    command = [_sbin("munged"), "--foreground", "--force"]
    user = {"user": "munge", "group": "munge"} if os.geteuid() == 0 else {}
    cluster.processes.append(
        subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **user)
    )
    _wait(_munge_works, 20, "munged", cluster)


def _munge_works() -> bool:
    try:
        munge = subprocess.run(["munge", "-n"], capture_output=True, timeout=5)
        if munge.returncode != 0:
            return False
        unmunge = subprocess.run(["unmunge"], input=munge.stdout, capture_output=True, timeout=5)
        return unmunge.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
