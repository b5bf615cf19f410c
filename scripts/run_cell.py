#!/usr/bin/env python3
"""Run one cell of the grid and write its JSON record.

The cell is a CellSpec (devicebench.plan.cellspec), built by the grid's own function from one of:

    --spec FILE | --spec-json TEXT     a spec as the workflow writes it (Snakemake passes this)
    --cell ID [--configfile FILE ...]  a cell of a config's grid (default: config/config.yaml)
    NAME=VALUE ...                     a cell by hand: axes (task, model, framework, device,
                                       threads, precision, batch_size, mode, a task's own axes,
                                       engine, gpus), run settings (epochs, steps_per_epoch,
                                       repetitions, ...) and engine options (openvino.hint=...)

For example:

    python scripts/run_cell.py task=mnist_mlp threads=2 batch_size=128 mode=train --out cell.json

By hand, what is not given is the task's default (first model, epochs, learning rate, dataset)
or the default config's (repetitions, warm-up, seed, ...). Without --data, synthetic data for
the task's dataset is prepared under results/data first. A spec that cannot run is an error
naming its key, before any work; no record is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
try:
    import devicebench  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "src"))

from devicebench.measure.marks import mark, process_start  # noqa: E402
from devicebench.plan.cellspec import CellSpec, SpecError  # noqa: E402
from devicebench.plan.data_check import InputUnusable  # noqa: E402
from devicebench.run.output_space import OutputUnusable  # noqa: E402
from devicebench.run.runner import Killed, Orphaned, run_cell  # noqa: E402

# The axes the grid adds to a task's own where a config asks (grid._scale_axes, weights).
SCALE_AXES = ("engine", "gpus", "weights")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.epilog = __doc__.split("\n\n", 1)[1]
    parser.add_argument("terms", nargs="*", metavar="NAME=VALUE", help="a cell by hand")
    parser.add_argument("--spec", type=Path, help="a CellSpec JSON file")
    parser.add_argument("--spec-json", help="a CellSpec as JSON text")
    parser.add_argument("--cell", help="a cell id of the grid of --configfile")
    parser.add_argument("--configfile", nargs="+", type=Path, default=[], help="with --cell")
    parser.add_argument("--runner", default="run_cell.py", help=argparse.SUPPRESS)
    parser.add_argument(
        "--log-dir",
        type=Path,
        help="folder for the cell's extra logs (server, LoadGen); default: beside --out",
    )
    parser.add_argument("--data", type=Path, help="dataset manifest.json (default: synthetic)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON record")
    args = parser.parse_intermixed_args(argv)  # terms before and after --out alike
    given = [bool(args.terms), args.spec is not None, args.spec_json is not None, bool(args.cell)]
    if sum(given) != 1:
        parser.error("give one of: NAME=VALUE terms, --spec FILE, --spec-json TEXT, --cell ID")
    return args


def grid_config(files: list[Path]) -> dict[str, Any]:
    """The checked study of `files` over the default config, as the workflow reads it."""
    from devicebench.plan.config import check_config, combine_configs
    from devicebench.plan.config_files import read_yaml

    default = read_yaml(REPO / "config" / "config.yaml")
    return check_config(combine_configs(default, [read_yaml(f) for f in files], {}))


def spec_of_cell(cell_id: str, files: list[Path]) -> CellSpec:
    """The cell `cell_id` of the grid of `files` (SpecError naming it when the grid has none)."""
    from devicebench.plan.grid import expand_grid

    cells = {cell.cell_id: cell for cell in expand_grid(grid_config(files))}
    if cell_id not in cells:
        near = sorted(c for c in cells if c.split("/")[0] == cell_id.split("/")[0])[:3]
        raise SpecError(f"--cell {cell_id}: not a cell of this grid; e.g. {', '.join(near)}")
    return cells[cell_id]


def spec_by_hand(terms: list[str]) -> CellSpec:
    """A spec from NAME=VALUE terms, the task's and the default config's values filling in."""
    from devicebench import scenarios
    from devicebench.plan.cellspec import AXES, RUN_TYPES
    from devicebench.plan.grid import make_cell
    from devicebench.workloads import get

    pairs = [term.split("=", 1) for term in terms]
    if bad := [term for term, pair in zip(terms, pairs, strict=True) if len(pair) != 2]:
        raise SpecError(f"{bad[0]!r}: terms are NAME=VALUE")
    given = {name: _typed(value) for name, value in pairs}
    if "task" not in given:
        raise SpecError("cell spec key task: required (task=NAME)")
    try:
        spec = get(str(given["task"])).spec
    except KeyError as error:
        raise SpecError(f"cell spec key task: {error.args[0]}") from None
    study = grid_config([])
    values = {
        "model": spec.models[0],
        "framework": "torch",
        "device": "cpu",
        "threads": "all",
        "precision": "fp32",
        "batch_size": 128,
        "mode": "train",
    }
    run = {"dataset": spec.dataset, "epochs": spec.epochs, "learning_rate": spec.learning_rate}
    run |= {"steps_per_epoch": None}
    run |= {k: study[k] for k in ("repetitions", "warmup_steps", "seed", "timeout_s")}
    run |= {k: study[k] for k in ("noise_cov", "min_repetition_s")}
    extra = {axis: allowed[0] for axis, allowed in spec.axes.items()}
    owned = {k for n in scenarios.names() for k in scenarios.get(n).SETTINGS}  # the spec checks
    options: dict[str, dict[str, Any]] = {}
    for name, value in given.items():
        if name in AXES:
            values[name] = value
        elif name in RUN_TYPES or name in owned:  # a scenario's own: quality=false (infer)
            run[name] = value
        elif "." in name:  # an engine's option: openvino.hint=THROUGHPUT
            config_key, option = name.split(".", 1)
            options.setdefault(config_key, {})[option] = value
        elif name in spec.axes or name in SCALE_AXES:  # the task's own (lstm_kernel), engine
            extra[name] = value
        else:
            known = ", ".join([*AXES, *spec.axes, *SCALE_AXES, *RUN_TYPES, *sorted(owned)])
            raise SpecError(f"cell spec key {name}: no axis or run setting of a cell; {known}")
    for key in ("serve", "generate"):  # JSON settings, as the grid writes them
        if isinstance(run.get(key), dict | list):
            import json

            run[key] = json.dumps(run[key], sort_keys=True)
    return make_cell(values, extra, run, _engine_options(options, extra.get("engine")))


def _typed(text: str) -> Any:
    """A term's value as YAML reads it (1 -> 1, 0.5 -> 0.5, {a: 1} -> a mapping), else text."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, int | float | dict | list) or value is None:
        return value
    try:  # what YAML leaves as text: nan, inf, 1e3 (SpecError below if not finite)
        return float(text)
    except ValueError:
        return text


def _engine_options(given: dict[str, dict[str, Any]], engine: Any) -> dict[str, Any] | None:
    """The options of `engine` from ``CONFIG_KEY.option=VALUE`` terms, by the engine's own
    names; SpecError naming a config key no engine owns, or one of another engine."""
    from devicebench.engines import IN_PROCESS, OPTIONS, options_class

    keys = sorted({options_class(name).CONFIG_KEY for name in OPTIONS})
    if unknown := sorted(set(given) - set(keys)):
        raise SpecError(f"{unknown[0]}.*: no engine has options under it; known: {', '.join(keys)}")
    owner = options_class(engine)
    if others := sorted(set(given) - {owner and owner.CONFIG_KEY}):
        raise SpecError(f"{others[0]}.*: engine {engine or IN_PROCESS} owns no such options")
    return given.get(owner.CONFIG_KEY) if owner else None


def build_spec(args: argparse.Namespace) -> CellSpec:
    if args.spec is not None:
        return CellSpec.from_json(args.spec.read_text())
    if args.spec_json is not None:
        return CellSpec.from_json(args.spec_json)
    if args.cell:
        return spec_of_cell(args.cell, args.configfile)
    return spec_by_hand(args.terms)


def check_before_work(spec: CellSpec) -> None:
    """What a person at a terminal should hear before any work: missing weights, a task or
    scenario that does not exist, more threads than cores."""
    from devicebench import scenarios
    from devicebench.measure.devices import host_cores
    from devicebench.workloads import get

    values, settings = spec.values, spec.run_settings()
    try:
        get(values["task"])
        scenarios.for_cell(settings)
    except (KeyError, ValueError) as error:
        raise SpecError(str(error).strip("'\"")) from None
    if (values.get("weights") == "pretrained") != bool(settings.get("pretrained")):
        raise SpecError(
            "cell spec key pretrained: weights=pretrained and pretrained=FOLDER go together"
        )
    if settings.get("pretrained"):
        from devicebench.frameworks.pretrained import MissingWeights, locate

        try:
            locate(values["model"], settings["pretrained"])
        except MissingWeights as error:
            raise SpecError(str(error)) from None
    threads = values["threads"]
    if threads != "all" and int(threads) > (cores := host_cores()):
        print(
            f"[devicebench] warning: threads {threads} is more than the {cores} cores "
            "of this host; the cell will oversubscribe its CPU",
            file=sys.stderr,
            flush=True,
        )


def default_data(dataset: str, seed: int) -> Path:
    """Prepare (once) the synthetic data a hand-run cell uses, at the data set's own sizes.

    Its folder is not the workflow's (results/data/): the workflow prepares the config's sizes
    and stops on a manifest of other sizes, so a cell run by hand never blocks the next study."""
    from devicebench.data import prepare_dataset

    manifest = REPO / "results" / "data-by-hand" / dataset / "synthetic" / "manifest.json"
    if not manifest.exists():
        print(f"[devicebench] preparing synthetic {dataset} data in {manifest.parent}", flush=True)
        prepare_dataset(dataset, "synthetic", manifest.parent, seed=seed)
    return manifest


def main(argv: list[str] | None = None) -> int:
    if (started := process_start()) is not None:  # the record's timings.marks (fixed cost)
        mark("process_start", started)
    mark("runner_imported")
    args = parse_args(argv)
    try:
        spec = build_spec(args)
        check_before_work(spec)
    except (SpecError, OSError) as error:
        print(f"[devicebench] error: {error}", file=sys.stderr, flush=True)
        return 2
    settings = spec.run_settings()
    data = args.data or default_data(settings["dataset"], int(settings["seed"]))
    try:
        log_dir = args.log_dir or args.out.parent / f"{args.out.stem}.logs"
        extra = {"log_dir": str(log_dir), "runner": args.runner}
        run_cell(spec, data=data, out=args.out, extra=extra)
    except Orphaned as error:
        print(f"[devicebench] stopped: {error}", file=sys.stderr, flush=True)
        return 3
    except (OutputUnusable, InputUnusable) as error:  # before the cell ran: nothing measured
        print(f"[devicebench] error: {error}", file=sys.stderr, flush=True)
        return 2
    except Killed as error:  # not a result: no record, and the next run measures the cell
        print(f"[devicebench] killed: {error}", file=sys.stderr, flush=True)
        return 4
    return 0  # a failed cell is a result too: its record says so, and the grid goes on


if __name__ == "__main__":
    sys.exit(main())
