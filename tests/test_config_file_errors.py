"""A config file that cannot be read stops Snakemake with one paragraph naming the file, its
problem and the command that checks it (rules/config_file.smk, plan/config_files.py), and that
command works as written. A `--configfile` is read by Snakemake's command line before any
workflow code runs: its non-UTF-8 error is Snakemake's own traceback (pinned below, so that the
docs' advice is revisited when Snakemake changes), and the checker names the file."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from workflow import REPO, snakemake_command, write_config

pytestmark = pytest.mark.workflow

BROKEN = {
    "latin1": ("seed: 1\nstudy: caf\u00e9\n".encode("latin-1"), "not UTF-8 text (byte 0xe9"),
    "syntax": (b"seed: 1\ntasks: [mnist_mlp\nstudy: x\n", "YAML syntax error"),
    "folder": (None, "Is a directory"),
}


def snakemake_without_configfile(workdir) -> subprocess.CompletedProcess:
    """A dry run on the repository's Snakefile in `workdir`, reading workdir/config/config.yaml
    as the Snakefile's own configfile (no --configfile)."""
    command, env = snakemake_command(workdir, "--dry-run", "--cores", "1")
    at = command.index("--configfile")
    del command[at : at + 2]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def write_broken(path, data: bytes | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_default_config_stops_the_run_with_one_paragraph(tmp_path, case):
    data, problem = BROKEN[case]
    path = tmp_path / "config" / "config.yaml"
    write_broken(path, data)
    done = snakemake_without_configfile(tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out and "UnicodeDecodeError" not in out, out
    assert f"config file {path}" in out and problem in out, out
    command = f"python -m devicebench.plan.config_files {path}"
    assert f"Check it again with: {command}" in out, out
    checked = subprocess.run(
        [sys.executable, *shlex.split(command)[1:]], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 1 and f"config file {path}" in checked.stderr, checked
    assert problem in checked.stderr and "Traceback" not in checked.stderr, checked


def test_a_non_utf8_configfile_is_snakemakes_traceback_and_the_checker_names_it(tmp_path):
    write_config(tmp_path, {})
    (tmp_path / "config.yaml").write_bytes(BROKEN["latin1"][0])
    command, env = snakemake_command(tmp_path, "--dry-run", "--cores", "1")
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    # Snakemake's CLI loads --configfile (settings/types.py ConfigSettings) before the Snakefile;
    # if this starts failing, Snakemake names the file itself: update docs/config.md.
    assert done.returncode == 1 and "UnicodeDecodeError" in out, out
    assert "config.yaml" not in out.split("UnicodeDecodeError", 1)[1], out
    checked = subprocess.run(
        [sys.executable, "-m", "devicebench.plan.config_files", str(tmp_path / "config.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 1, checked
    assert f"config file {tmp_path / 'config.yaml'}: not UTF-8 text (byte 0xe9" in checked.stderr
