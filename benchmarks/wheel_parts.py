"""A wheel larger than one device call's carry (64 MiB) travels in parts over consecutive calls.

    python benchmarks/wheel_parts.py split WHEEL OUTDIR [--part-mib 40]
    python benchmarks/wheel_parts.py join PARTS STORE WHEELS

`split` writes OUTDIR/NAME.part-K-of-N files, each naming the whole wheel's SHA-256 in a first
line of its own, so any one part says what it belongs to. Carry one part per call under
.whl/parts/. On the host `gpu_host.sh` calls `join`: it moves the parts it finds under PARTS into
STORE (in /tmp, which the lease keeps between consecutive calls on one machine), and writes each
wheel whose parts are all there, checked against its SHA-256, into WHEELS, to be installed with the
carried ones. A wheel still missing parts is named with the parts it waits for.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import sys
from pathlib import Path

PART = re.compile(r"^(?P<wheel>.+\.whl)\.part-(?P<k>\d+)-of-(?P<n>\d+)$")


def split(wheel: Path, outdir: Path, part_mib: float) -> list[Path]:
    """The wheel's parts, each at most `part_mib` MiB of the wheel after a header line."""
    if part_mib <= 0:
        raise SystemExit(f"--part-mib must be positive, not {part_mib}")
    data = wheel.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    size = int(part_mib * 2**20)
    chunks = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
    outdir.mkdir(parents=True, exist_ok=True)
    parts = []
    for k, chunk in enumerate(chunks, start=1):
        part = outdir / f"{wheel.name}.part-{k}-of-{len(chunks)}"
        part.write_bytes(f"sha256 {digest}\n".encode() + chunk)
        parts.append(part)
    return parts


def _read(part: Path) -> tuple[str, bytes]:
    header, _, body = part.read_bytes().partition(b"\n")
    words = header.decode(errors="replace").split()
    if len(words) != 2 or words[0] != "sha256" or not re.fullmatch(r"[0-9a-f]{64}", words[1]):
        raise SystemExit(f"{part}: not a wheel part (no 'sha256 <digest>' first line)")
    return words[1], body


def join(parts: Path, store: Path, wheels: Path) -> tuple[list[Path], list[str]]:
    """Move the parts under `parts` into `store`; return the wheels made whole (written under
    `wheels`) and a line per wheel still waiting for parts."""
    store.mkdir(parents=True, exist_ok=True)
    for part in sorted(parts.glob("*.part-*-of-*")) if parts.is_dir() else []:
        shutil.move(str(part), store / part.name)
    groups: dict[str, dict[int, Path]] = {}
    totals: dict[str, int] = {}
    for part in store.iterdir():
        found = PART.match(part.name)
        if not found:
            continue
        name, k, n = found["wheel"], int(found["k"]), int(found["n"])
        if totals.setdefault(name, n) != n:
            raise SystemExit(f"{name}: parts of {totals[name]} and of {n} parts in {store}")
        groups.setdefault(name, {})[k] = part
    made, waiting = [], []
    for name, have in sorted(groups.items()):
        missing = [k for k in range(1, totals[name] + 1) if k not in have]
        if missing:
            waiting.append(f"{name}: has {len(have)} of {totals[name]} parts, waits for {missing}")
            continue
        read = [_read(have[k]) for k in range(1, totals[name] + 1)]
        digests, body = {digest for digest, _ in read}, b"".join(chunk for _, chunk in read)
        if len(digests) != 1:
            raise SystemExit(f"{name}: its parts name different wheels (SHA-256 {sorted(digests)})")
        if hashlib.sha256(body).hexdigest() != digests.pop():
            raise SystemExit(f"{name}: the joined parts do not match the wheel's SHA-256")
        wheels.mkdir(parents=True, exist_ok=True)
        (wheels / name).write_bytes(body)
        made.append(wheels / name)
    return made, waiting


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cut = sub.add_parser("split", help="cut a wheel into parts")
    cut.add_argument("wheel", type=Path)
    cut.add_argument("outdir", type=Path)
    cut.add_argument("--part-mib", type=float, default=40.0)
    glue = sub.add_parser("join", help="gather carried parts and make whole wheels")
    glue.add_argument("parts", type=Path)
    glue.add_argument("store", type=Path)
    glue.add_argument("wheels", type=Path)
    args = parser.parse_args(argv)
    if args.command == "split":
        for part in split(args.wheel, args.outdir, args.part_mib):
            print(f"{part} ({part.stat().st_size / 2**20:.1f} MiB)")
        return 0
    made, waiting = join(args.parts, args.store, args.wheels)
    for wheel in made:
        print(f"[wheel_parts] {wheel.name}: whole ({wheel.stat().st_size / 2**20:.1f} MiB)")
    for line in waiting:
        print(f"[wheel_parts] {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
