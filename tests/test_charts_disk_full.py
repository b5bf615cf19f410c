"""Charts that cannot be written (a full disk, a file-size limit) fail in one line naming the
file and the reason, never with a traceback or silently."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

from test_aggregate import make_record

REPO = Path(__file__).resolve().parents[1]


def _small_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write over the limit fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_charts_that_cannot_be_written_say_which_and_why(tmp_path):
    root = tmp_path / "cells"
    make_record(root, median_s=2.0)
    make_record(root, device="cuda", threads=None, median_s=0.5)
    tables = tmp_path / "tables"
    aggregate = [sys.executable, str(REPO / "scripts" / "aggregate.py"), "--tables", str(tables)]
    subprocess.run([*aggregate, "--records", str(root)], check=True, capture_output=True)
    out = tmp_path / "charts"
    command = [sys.executable, str(REPO / "scripts" / "charts.py"), "--tables", str(tables)]
    done = subprocess.run(
        [*command, "--out", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=_small_files,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.startswith("error: cannot write charts (") and "File too large" in line, line
    assert str(out) in line
    assert "Traceback" not in done.stderr
