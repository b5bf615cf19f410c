#!/usr/bin/env python3
"""Group devicebench's flat top level by job (plan/, run/, measure/) and rewrite references.

    python scripts/move_modules.py --move              # git mv the modules, then rewrite
    python scripts/move_modules.py --rewrite [PATH...] # rewrite references only (another branch)

The rewrite maps `devicebench.<old>` to `devicebench.<new>` wherever a module path is named
(imports, `python -m`, mock targets, importlib strings), splits `from devicebench import a, b`
by package, and rewrites `devicebench/<old>.py` paths. It is idempotent.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "devicebench"
MOVES: dict[str, str] = {
    "config": "plan.config",
    "config_files": "plan.config_files",
    "grid": "plan.grid",
    "blocks": "plan.blocks",
    "block_status": "plan.block_status",
    "converge": "plan.converge",
    "cell": "run.runner",
    "worker": "run.worker",
    "limits": "run.limits",
    "processes": "run.processes",
    "threads": "run.threads",
    "output_space": "run.output_space",
    "energy": "measure.energy",
    "sampler": "measure.sampler",
    "timing": "measure.timing",
    "peaks": "measure.peaks",
    "profiling": "measure.profiling",
    "environment": "measure.environment",
    "machine": "measure.machine",
    "devices": "measure.devices",
    "flops": "measure.flops",
    "flop_formulas": "measure.flop_formulas",
    "precision_math": "measure.precision",
    "marks": "measure.marks",
    "metrics": "measure.metrics",
    "config_bounds": "plan.config_bounds",
    "data_check": "plan.data_check",
    "packing": "plan.packing",
    "gpu_compile": "plan.gpu_compile",
    "kills": "run.kills",
    "bench_lock": "run.bench_lock",
    "kept": "run.kept",
    "copies_runner": "run.copies_runner",
}
NEW_PACKAGES = {
    "measure": '"""Measuring a cell: clocks and summaries, energy, utilization, peaks, FLOPs, '
    'precision\nswitches, the environment and the stages of its fixed cost."""\n',
}
SUFFIXES = {".py", ".smk", ".sh", ".toml", ".yaml", ".cfg", ".ini"}
_DOTTED = re.compile(
    r"\bdevicebench\.(" + "|".join(sorted(MOVES, key=len, reverse=True)) + r")\b(?!\.py)"
)
_PATH = re.compile(r"\bdevicebench/(" + "|".join(sorted(MOVES, key=len, reverse=True)) + r")\.py\b")
_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from devicebench import (?P<names>[^()\n#]+?)(?P<tail>[ \t]*#.*)?$",
    re.M,
)


def _split_from(match: re.Match) -> str:
    """`from devicebench import a, b` with a moved: one line per package."""
    indent, tail = match["indent"], match["tail"] or ""
    groups: dict[str, list[str]] = {}
    for item in (n.strip() for n in match["names"].split(",")):
        name, _, alias = item.partition(" as ")
        new = MOVES.get(name.strip())
        if new is None:
            groups.setdefault("devicebench", []).append(item)
            continue
        package, _, module = new.rpartition(".")
        bound = alias.strip() or name.strip()
        entry = module if bound == module else f"{module} as {bound}"
        groups.setdefault(f"devicebench.{package}", []).append(entry)
    if list(groups) == ["devicebench"]:
        return match[0]
    lines = [f"{indent}from {pkg} import {', '.join(names)}" for pkg, names in groups.items()]
    lines[0] += tail
    return "\n".join(lines)


def rewrite(text: str) -> str:
    text = _FROM.sub(_split_from, text)
    text = _DOTTED.sub(lambda m: f"devicebench.{MOVES[m[1]]}", text)
    return _PATH.sub(lambda m: "devicebench/" + MOVES[m[1]].replace(".", "/") + ".py", text)


def files(roots: list[Path]) -> list[Path]:
    found = []
    for root in roots:
        paths = [root] if root.is_file() else root.rglob("*")
        for path in paths:
            if any(part in {".git", ".snakemake", "results", ".venv"} for part in path.parts):
                continue
            if path.is_file() and (path.suffix in SUFFIXES or path.name == "Snakefile"):
                found.append(path)
    return found


def move() -> None:
    for package, doc in NEW_PACKAGES.items():
        init = PACKAGE / package / "__init__.py"
        if not init.exists():
            init.parent.mkdir(exist_ok=True)
            init.write_text(doc)
            subprocess.run(["git", "-C", str(REPO), "add", str(init)], check=True)
    for old, new in MOVES.items():
        source = PACKAGE / f"{old}.py"
        if source.exists():
            target = PACKAGE / (new.replace(".", "/") + ".py")
            subprocess.run(["git", "-C", str(REPO), "mv", str(source), str(target)], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--move", action="store_true", help="git mv the modules first")
    parser.add_argument("--rewrite", nargs="*", type=Path, help="paths to rewrite (default: repo)")
    args = parser.parse_args(argv)
    if args.move:
        move()
    changed = 0
    for path in files(args.rewrite or [REPO]):
        text = path.read_text()
        new = rewrite(text)
        if new != text:
            path.write_text(new)
            changed += 1
    print(f"rewrote {changed} file(s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
