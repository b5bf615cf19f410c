"""Helpers that run the real Snakemake workflow on a config in a scratch folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def snakemake_command(workdir: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run snakemake on `workdir` (see `snakemake`)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / "config.yaml"),
        *args,
    ]
    return command, env


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run snakemake on the repository's Snakefile in `workdir` with workdir/config.yaml."""
    command, env = snakemake_command(workdir, *args)
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def write_config(workdir: Path, config: dict) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def planned_jobs(workdir: Path) -> dict[str, int]:
    """The jobs a dry run plans, by rule ({} when there is nothing to do)."""
    done = snakemake(workdir, "--dry-run", "--cores", "1")
    out = done.stdout + done.stderr
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.MULTILINE))
    counts.pop("total", None)
    return {rule: int(n) for rule, n in counts.items()}


def planned_cells(workdir: Path) -> set[str]:
    """The records (paths under results/cells) whose cell jobs a dry run plans."""
    out = snakemake(workdir, "--dry-run", "--cores", "1").stdout
    return set(re.findall(r"^rule cell:\n\s+input: .*\n\s+output: (\S+)$", out, flags=re.M))
