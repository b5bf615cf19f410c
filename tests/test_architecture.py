"""The layout ARCHITECTURE.md asks for, kept: no import cycle, one module per workload, scenario
and engine behind its registry (found on disk), a light registry, no task name outside
workloads/, no mode or engine string dispatch outside the registries, servers, Spark sessions and
ranks started only by the launchers, no file over 400 lines."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from dispatch_finder import dispatch, dispatches, mentions

from devicebench.workloads import NAMES, get
from devicebench.workloads.base import Workload

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "devicebench"
FRAMEWORKS = ("torch", "tensorflow", "keras", "transformers")


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    """The devicebench modules an import statement depends on (a submodule where it names one)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: None if is_package else -1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        subs = [f"{base}.{alias.name}" for alias in node.names]
        names = [name for name in subs if name in modules]
        if len(names) < len(subs):
            names.append(base)
    found = set()
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """devicebench's imports, those inside functions included, `if TYPE_CHECKING:` excluded."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        skipped = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        graph[module] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
                graph[module] |= _targets(node, module, path.name == "__init__.py", modules)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert "devicebench.workloads.base" in graph  # the walk found the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_name_has_its_workload(name):
    workload = get(name)
    assert isinstance(workload, Workload)
    assert workload is importlib.import_module(f"devicebench.workloads.{name}").WORKLOAD
    assert workload.spec.name == name


def _loaded_after(code: str) -> list[str]:
    """The frameworks a fresh interpreter has imported after running `code`."""
    report = f"print(json.dumps(sorted(set({FRAMEWORKS!r}) & set(sys.modules))))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_registry_imports_no_framework():
    code = "from devicebench.workloads import specs, get, NAMES\nspecs()\n[get(n) for n in NAMES]"
    assert _loaded_after(code) == []


def test_planning_the_grid_imports_no_framework():
    code = (
        "import yaml\n"
        "from devicebench.plan.config import check_config\n"
        "from devicebench.plan.grid import expand_grid\n"
        "study = yaml.safe_load(open('config/study.yaml'))\n"
        "default = yaml.safe_load(open('config/config.yaml'))\n"
        "from devicebench.plan.config import combine_configs\n"
        "cells = expand_grid(check_config(combine_configs(default, [study], "
        "{'check_devices': False})))\n"
        "assert len(cells) > 1000"
    )
    assert _loaded_after(code) == []


def test_no_task_name_outside_workloads():
    """Framework loops, serving, aggregates and the runner find a task through the registry."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if "workloads" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in NAMES:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_no_source_file_is_over_400_lines():
    long = {
        str(p.relative_to(REPO)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}


def test_no_package_name_is_shadowed_by_its_submodule():
    """Importing `pkg.x` sets `pkg.x` to the module: a function `x` in pkg/__init__.py would be
    replaced by it (cifar10_finetune's keras_port() was, once its Keras port was imported)."""
    shadowed = []
    for init in PACKAGE.rglob("__init__.py"):
        children = {p.stem for p in init.parent.glob("*.py")} | {
            p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()
        }
        for node in ast.parse(init.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in children:
                shadowed.append(f"{init.relative_to(REPO)}: {node.name}")
            if isinstance(node, ast.Assign):
                names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                shadowed += [f"{init.relative_to(REPO)}: {n}" for n in names & children]
    assert shadowed == []


# No mode or engine is told apart by its name outside the registries (dispatch_finder.dispatch,
# precise: comparisons, membership, prefix tests, match cases and name-keyed dicts; and, for
# engines, the coarse dispatch_finder.mentions too, which also counts `.get("engine", <name>)`
# defaults): the planner, the launchers and the runner ask what a mode's scenarios say they
# measure (scenarios.modes), and the serving and Spark code what the engine registry says of an
# engine (engines.is_in_process, engines.streams, IN_PROCESS as the default and the record's
# yardstick key).


def test_no_mode_is_told_apart_by_name_outside_the_registries():
    from devicebench import scenarios

    modes = {scenarios.get(name).MODE for name in scenarios.names()}
    assert {"train", "infer", "converge", "serve"} <= modes
    assert dispatch(PACKAGE, "mode", modes) == {}


def test_no_engine_is_told_apart_by_name_outside_the_registries():
    from devicebench import engines

    names = set(engines.axis_values()) | {"spark"}  # "spark": a prefix test
    assert {"inprocess", "onnxruntime", "openvino", "spark-streaming"} <= names
    assert dispatch(PACKAGE, "engine", names) == {}
    assert mentions(PACKAGE, "engine", names) == {}


def test_inprocess_is_named_only_where_the_engine_registry_defines_it():
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value == "inprocess":
                relative = str(path.relative_to(PACKAGE))
                found[relative] = found.get(relative, 0) + 1
    assert found.pop("engines/__init__.py") == 1  # IN_PROCESS, the one definition
    assert found == {}


# What starts the processes a cell runs in: called only by the launchers (run/launchers), so
# that a worker, a server or a Spark session is chosen in one place (launchers.for_cell).
STARTERS = {"ServerProcess", "RayServeProcess", "start_session", "torchrun_command"}


def test_servers_spark_sessions_and_ranks_are_started_only_by_the_launchers():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[:2] == ("run", "launchers"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func).rpartition(".")[2]
                if name in STARTERS:
                    found.append(f"{relative}:{node.lineno}: {name}")
    assert found == []


PLANTED_DISPATCHES = """
if settings['mode'] == 'serve':
    pass
ok = mode in ('train', 'infer')
ok = values["mode"] != "train"
ok = "train" not in spec.modes
ok = str(settings.get("mode")) == "infer"
ok = "converge" == cell.mode
match settings["mode"]:
    case "train":
        pass
run = {"train": 1, "infer": 2}[mode]
ok = settings["mode"].startswith("infer")
run = {"train": 1}.get(mode, 0)
"""
NOT_DISPATCHES = """
split = data["train"]
flag = self.train
inputs = view.inputs("train", batch)
trained.train(flag)
ok = self.model == "infer"
spec = TaskSpec(models=("a",), modes=("serve",))
ok = mode in scenarios.modes(trains=True)
ok = engine == "train"
"""


def test_the_dispatch_finder_finds_a_dispatch(tmp_path):
    package = tmp_path / "devicebench"
    package.mkdir()
    (package / "x.py").write_text(PLANTED_DISPATCHES)
    (package / "y.py").write_text(NOT_DISPATCHES)
    modes = {"train", "infer", "serve", "converge"}
    assert dispatch(package, "mode", modes) == {"x.py": 10}
    lines = [n.lineno for n in dispatches(ast.parse(PLANTED_DISPATCHES), "mode", modes)]
    assert sorted(lines) == [2, 4, 5, 6, 7, 8, 9, 12, 13, 14]


PLANTED_ENGINE_DISPATCHES = """
if settings["engine"] == "inprocess":
    pass
ok = engine != "openvino"
ok = cell.engine in ("spark", "spark-streaming")
ok = str(options.get("engine")) == "onnxruntime"
ok = engine.startswith("spark")
run = {"spark": 1, "spark-streaming": 2}[engine]
run = {"openvino": 1}.get(self.engine, 0)
"""
NOT_ENGINE_DISPATCHES = """
ok = is_in_process(engine)
ok = engine == IN_PROCESS
ok = engines.streams(settings["engine"])
label = WORDS["openvino"]
ok = model == "openvino"
OPTIONS = {"openvino": "devicebench.engines.openvino_engine"}
"""


def test_the_dispatch_finder_finds_an_engine_dispatch(tmp_path):
    package = tmp_path / "devicebench"
    package.mkdir()
    (package / "x.py").write_text(PLANTED_ENGINE_DISPATCHES)
    (package / "y.py").write_text(NOT_ENGINE_DISPATCHES)
    names = {"inprocess", "onnxruntime", "openvino", "spark", "spark-streaming"}
    assert dispatch(package, "engine", names) == {"x.py": 7}
    assert mentions(package, "engine", names) == {"x.py": 6}  # coarse: misses {...}[engine]


def test_every_scenario_engine_and_workload_on_disk_is_found_by_its_registry():
    from devicebench import engines, scenarios
    from devicebench.engines import generative
    from devicebench.scenarios.base import Scenario

    def modules(folder: Path) -> set[str]:
        return {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}

    on_disk = modules(PACKAGE / "scenarios") - {"base"}
    assert set(scenarios.names()) == on_disk
    assert all(isinstance(scenarios.get(n), Scenario) for n in on_disk)
    engine_files = {n.removesuffix("_engine") for n in modules(PACKAGE / "engines")}
    engine_files -= modules(PACKAGE / "engines")  # the `<name>_engine` modules only
    assert set(engines.MODULES) == engine_files and {"torch", "openvino"} <= engine_files
    assert all(engines.get(name).name == name for name in engine_files)
    assert set(generative.names()) == modules(PACKAGE / "engines" / "generative") - {"base"}
    folder = PACKAGE / "workloads"
    sources = [*folder.glob("*.py"), *folder.glob("*/__init__.py")]
    defined = {
        p.parent.name if p.name == "__init__.py" else p.stem
        for p in sources
        if "\nWORKLOAD = " in p.read_text()
    }
    assert set(NAMES) == defined and len(NAMES) >= 11
