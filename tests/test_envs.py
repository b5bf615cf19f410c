"""Pinned environments: every env file pins exact versions that agree with pyproject's pins,
and every rule names the env of its stack, so `snakemake --sdm conda` runs each in its stack."""

from __future__ import annotations

import re
import tomllib

import pytest
import yaml
from conftest import REPO

ENV_FILES = sorted((REPO / "envs").glob("*.yaml"))
REQUIRED_ENVS = ("torch", "report")


def _name(name: str) -> str:
    """Package names as registries compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject_pins() -> dict[str, str]:
    """Exact pins of pyproject's dependencies and optional dependencies."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    pins = {}
    for spec in specs:
        own = re.fullmatch(r"([A-Za-z0-9_.\-]+)\[([^\]]*)\]", spec.strip())
        if own and _name(own[1]) == _name(project["name"]):  # an extra naming another extra
            assert own[2] in project["optional-dependencies"], f"{spec!r}: no such extra"
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;,]+)", spec.strip())
        assert match, f"pyproject dependency {spec!r} is not an exact pin"
        pins[_name(match[1])] = match[2]
    return pins


def env_pins(path) -> tuple[dict[str, str], list[str]]:
    """(package -> version, unpinned entries) of one conda env file, conda and pip parts."""
    env = yaml.safe_load(path.read_text())
    pins, unpinned = {}, []
    for entry in env.get("dependencies", []):
        if isinstance(entry, dict):
            for spec in entry.get("pip", []):
                match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([\w.+!-]+)", spec)
                if match:
                    pins[_name(match[1])] = match[2]
                else:
                    unpinned.append(f"pip: {spec}")
            continue
        match = re.fullmatch(r"(?:[\w-]+::)?([A-Za-z0-9_.\-]+)==?([\w.+!-]+)(?:=[\w.]+)?", entry)
        if match and "*" not in entry:
            pins[_name(match[1])] = match[2]
        else:
            unpinned.append(entry)
    return pins, unpinned


def test_every_stack_has_an_env():
    names = {path.stem for path in ENV_FILES}
    assert set(REQUIRED_ENVS) <= names, names


@pytest.mark.parametrize("path", ENV_FILES, ids=[p.name for p in ENV_FILES])
def test_env_is_fully_pinned_and_agrees_with_pyproject(path):
    env = yaml.safe_load(path.read_text())
    assert "conda-forge" in env.get("channels", []), "envs come from conda-forge"
    pins, unpinned = env_pins(path)
    assert not unpinned, f"{path.name}: unpinned {unpinned}"
    assert "python" in pins, f"{path.name}: no python pin"
    project = pyproject_pins()
    disagree = {
        name: (version, project[name])
        for name, version in pins.items()
        if name in project and project[name] != version
    }
    assert not disagree, f"{path.name} vs pyproject (env, pyproject): {disagree}"


def test_env_python_satisfies_requires_python():
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    from packaging.specifiers import SpecifierSet

    for path in ENV_FILES:
        python = env_pins(path)[0]["python"]
        assert python in SpecifierSet(requires), f"{path.name}: python {python} vs {requires}"


def test_every_rule_names_an_existing_env():
    for smk in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]:
        blocks = re.split(r"^(?=rule \w+:)", smk.read_text(), flags=re.M)[1:]
        for block in blocks:
            rule = re.match(r"rule (\w+):", block)[1]
            if rule == "all":
                continue
            env = re.search(r"^\s+conda:\s*\n\s+(\S+)", block, flags=re.M)
            assert env, f"rule {rule} in {smk.name} names no conda env"
            if env[1].startswith('"'):  # a path (a function choosing per framework is fine too)
                path = (smk.parent / env[1].strip('"')).resolve()
                assert path.is_file(), f"rule {rule}: {path} missing"
