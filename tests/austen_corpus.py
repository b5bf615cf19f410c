"""Jane Austen's novels for the quality tests: Debian's r-cran-janeaustenr data files.

Where the package is installed its data folder is used; otherwise its .deb is fetched with
`apt-get download` (apt's own client; no R needed, since `rdata` reads the files) and unpacked
with `dpkg-deb -x` into a folder of the test session. Unavailable says why when apt cannot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from devicebench.generation.corpus import DEBIAN_DIR

PACKAGE = "r-cran-janeaustenr"


class Unavailable(RuntimeError):
    """No Austen data here and no way to get it (tests skip with the message)."""


def _run(command: list[str], cwd: Path) -> bool:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=600)
    return done.returncode == 0


def austen_data(work: Path) -> Path:
    """The folder holding Rdata.rdb and Rdata.rdx."""
    if (DEBIAN_DIR / "Rdata.rdb").exists():
        return DEBIAN_DIR
    unpacked = work / "deb" / str(DEBIAN_DIR).lstrip("/")
    if (unpacked / "Rdata.rdb").exists():
        return unpacked
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise Unavailable(f"{PACKAGE} is not installed and there is no apt-get/dpkg-deb")
    work.mkdir(parents=True, exist_ok=True)
    if not _run(["apt-get", "download", PACKAGE], work):
        _run(["apt-get", "update", "-qq"], work)  # an empty or old package list
        if not _run(["apt-get", "download", PACKAGE], work):
            raise Unavailable(f"apt-get download {PACKAGE} failed: no package source reachable")
    debs = sorted(work.glob(f"{PACKAGE}_*.deb"))
    if not debs or not _run(["dpkg-deb", "-x", str(debs[-1]), str(work / "deb")], work):
        raise Unavailable(f"{PACKAGE}: the downloaded .deb could not be unpacked")
    return unpacked
