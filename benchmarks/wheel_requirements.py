"""Say which requirements of the wheels a GPU host call carried are missing there, before any cell.

    python3 benchmarks/wheel_requirements.py SITE [--missing-ok NAME ...]

gpu_host.sh installs the carried wheels with `--no-deps` into SITE (/tmp/site): a requirement
left out of the carry is found only when a cell imports it, mid-call. On 2026-11-29 two served
cells lost their goodput search so (fastapi 0.163 imports opentelemetry-api, which the carry
lacked: the server died before its health check). This reads each installed distribution's
requirements (no extras; markers for this Python) and looks each up on the whole path, the host's
own packages included. It exits 2, naming each missing requirement and who needs it, unless all
are in --missing-ok (a requirement the package imports only when asked for, as snakemake's pulp).
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


def missing(site: Path) -> list[tuple[str, str]]:
    """(distribution in `site`, requirement it names that no distribution on the path gives)."""
    carried = list(metadata.distributions(path=[str(site)]))
    have = {canonicalize_name(d.metadata["Name"]) for d in [*metadata.distributions(), *carried]}
    gaps = []
    for dist in carried:
        for line in dist.requires or []:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue  # an extra, or another Python's
            if canonicalize_name(requirement.name) not in have:
                gaps.append((dist.metadata["Name"], requirement.name))
    return sorted(set(gaps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="where the carried wheels were installed")
    parser.add_argument("--missing-ok", nargs="*", default=[], help="requirements allowed absent")
    args = parser.parse_args(argv)
    allowed = {canonicalize_name(name) for name in args.missing_ok}
    gaps = [
        (who, what) for who, what in missing(args.site) if canonicalize_name(what) not in allowed
    ]
    for who, what in gaps:
        print(f"[wheels] {who} requires {what}, which neither the carry nor the host has")
    if gaps:
        print("[wheels] carry those wheels too (docs/gpu-hosts.md); no cell was run", flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
