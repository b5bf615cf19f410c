"""A study's blocks: which cells each runs in one call, and which of them have records.

python scripts/blocks.py config/h100.yaml                      # a table of the blocks
python scripts/blocks.py config/h100.yaml --records DIR        # ... with records present
python scripts/blocks.py config/h100.yaml --block NAME[,NAME...] --missing results/cells
    # the record paths of the blocks' cells that have no record under results/cells, one a
    # line (what benchmarks/gpu_host.sh hands snakemake as targets); several small blocks may
    # share a call, each still whole on one machine
python scripts/blocks.py config/h100.yaml --pattern REGEX --missing results/cells
    # the same for the cells whose record path matches REGEX (a few cells again)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.plan.block_status import status_table, with_table  # noqa: E402
from devicebench.plan.blocks import assign_blocks  # noqa: E402
from devicebench.plan.config import ConfigError, check_config, combine_configs  # noqa: E402
from devicebench.plan.config_files import read_yaml  # noqa: E402
from devicebench.plan.confirm import assign_confirms, confirm_groups  # noqa: E402
from devicebench.plan.grid import expand_grid  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[1] / "config" / "config.yaml"


def study_cells(config: Path) -> tuple[dict, list]:
    """A study config's checked settings and cells (over the default config, as the workflow
    reads it)."""
    study = check_config(combine_configs(read_yaml(DEFAULT), [read_yaml(config)]))
    return study, expand_grid(study)


def study_blocks(config: Path) -> dict[str, list]:
    """The blocks of a study config: each block's cells, then its confirm steps (record ids,
    plan.confirm) as strings."""
    study, cells = study_cells(config)
    if not study.get("blocks"):
        raise ConfigError(f"{config} has no `blocks`")
    blocks = assign_blocks(study["blocks"], cells)
    confirms = assign_confirms(study["blocks"], confirm_groups(cells, study["tasks"]).values())
    return {name: [*blocks[name], *(g.group_id for g in confirms[name])] for name in blocks}


def record_id(member) -> str:
    """A block member's record id: a cell's, or a confirm step's (already a string)."""
    return member if isinstance(member, str) else member.cell_id


def selected(config: Path, names: str | None, pattern: str | None) -> list:
    """The members (cells, then confirm steps) of the named blocks (comma-separated), or the
    cells and confirm steps of the whole grid whose record path matches pattern."""
    if pattern is not None:
        wanted = re.compile(pattern)
        cells = study_cells(config)[1]
        members = [*cells, *confirm_groups(cells)]
        return [m for m in members if wanted.search(f"{record_id(m)}.json")]
    blocks, wanted = study_blocks(config), names.split(",")
    unknown = [name for name in wanted if name not in blocks]
    if unknown:
        raise ConfigError(f"no block {unknown[0]!r}; the blocks are {', '.join(blocks)}")
    return [member for name in wanted for member in blocks[name]]


def print_paths(members: list, missing: Path | None) -> None:
    """Record paths of the cells and confirm steps, without those that have a record under
    `missing` (a confirm step after its sweep cells: snakemake runs them first anyway)."""
    for member in members:
        if missing is None or not (missing / f"{record_id(member)}.json").exists():
            print(Path("results/cells") / f"{record_id(member)}.json")


def warn_missing_sweeps(config: Path, members: list, records: Path) -> None:
    """On stderr: a selected confirm step whose sweep records are not under `records`
    (snakemake would run those sweep cells first, which a call has no time for)."""
    study, cells = study_cells(config)
    groups = confirm_groups(cells, study["tasks"])
    for member in members:
        if isinstance(member, str) and member in groups:
            absent = [
                c for c in groups[member].members if not (records / f"{c.cell_id}.json").exists()
            ]
            if absent:
                print(
                    f"[blocks] {member}: {len(absent)} of its {len(groups[member].members)} sweep "
                    f"records are not under {records}; snakemake runs them first (carry them, or "
                    "run the sweep blocks on this machine before)",
                    file=sys.stderr,
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--block", help="blocks' cells (NAME[,NAME...]), one record path a line")
    parser.add_argument("--pattern", help="cells whose record path matches this regular expression")
    parser.add_argument(
        "--missing", type=Path, help="with --block or --pattern: only cells without a record here"
    )
    parser.add_argument("--records", type=Path, help="the state of each block's records here")
    parser.add_argument("--readme", type=Path, help="with --records: write the table into it")
    parser.add_argument("--check", action="store_true", help="with --readme: only compare")
    args = parser.parse_args(argv)
    try:
        if args.block or args.pattern is not None:
            members = selected(args.config, args.block, args.pattern)
            print_paths(members, args.missing)
            if args.missing is not None:
                warn_missing_sweeps(args.config, members, args.missing)
            return 0
        blocks = study_blocks(args.config)
    except ConfigError as error:
        print(f"invalid config: {error}", file=sys.stderr)
        return 2
    except re.error as error:
        print(f"--pattern: not a regular expression: {error}", file=sys.stderr)
        return 2
    if args.records is None:
        print("| block | cells | CPU | GPU | confirm steps |")
        print("|---|---:|---:|---:|---:|")
        for name, members in blocks.items():
            cells = [m for m in members if not isinstance(m, str)]
            cpu = sum(cell.values["device"] == "cpu" for cell in cells)
            steps = len(members) - len(cells)
            print(f"| {name} | {len(cells)} | {cpu} | {len(cells) - cpu} | {steps} |")
        return 0
    table = status_table(blocks, args.records)
    if args.readme is None:
        print(table)
        return 0
    text = args.readme.read_text()
    updated = with_table(text, table)
    if args.check:
        if updated != text:
            print(f"{args.readme}: the blocks table is not what the records say", file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
