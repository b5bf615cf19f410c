"""Where a value named `mode` (or `engine`) is told apart by a mode's (engine's) name in
devicebench's source: tests/test_architecture.py keeps it to the registries."""

from __future__ import annotations

import ast
from pathlib import Path

# The registries: where modes, engines and their default are defined and chosen.
REGISTRIES = {"scenarios/__init__.py", "engines/__init__.py", "plan/cellspec.py"}


def mentions(package: Path, word: str, names: set[str]) -> dict[str, int]:
    """file -> comparisons (or calls) that mention `word` and one of `names`: the coarse count
    test_architecture keeps at none for engines beside `dispatch` (it counts
    `.get("engine", "inprocess")` defaults too)."""
    found: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        relative = str(path.relative_to(package))
        if relative in REGISTRIES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare | ast.Call):
                continue
            strings = {
                n.value
                for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
            if word in ast.unparse(node) and strings & names:
                found[relative] = found.get(relative, 0) + 1
    return found


def _is_word(name: str, word: str) -> bool:
    """`mode`, `spec_modes`, `MODE`: a name whose `_`-separated parts hold `word` (or its
    plural), not one that merely contains it (`model`)."""
    return bool({word, f"{word}s"} & set(name.lower().split("_")))


def _reads(node: ast.AST, word: str) -> bool:
    """Whether an expression reads a value named `word`: `mode`, `cell.mode`, `spec.modes`,
    `settings["mode"]`, `settings.get("mode")`, `str(settings["mode"])`, `cell_mode(x)`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and _is_word(inner.id, word):
            return True
        if isinstance(inner, ast.Attribute) and _is_word(inner.attr, word):
            return True
        key = None
        if isinstance(inner, ast.Subscript):
            key = inner.slice
        elif isinstance(inner, ast.Call) and ast.unparse(inner.func).endswith(".get"):
            key = inner.args[0] if inner.args else None
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            if _is_word(key.value, word):
                return True
    return False


def _literal(node: ast.AST, names: set[str]) -> bool:
    """A literal naming one of `names`: "train", or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in names
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_literal(element, names) for element in node.elts)
    return False


def _keyed(node: ast.AST, names: set[str]) -> bool:
    """A dict literal with one of `names` as a key."""
    return isinstance(node, ast.Dict) and any(
        k is not None and _literal(k, names) for k in node.keys
    )


def _found_at(node: ast.AST, word: str, names: set[str]) -> bool:
    """Whether `node` itself tells a value named `word` apart by one of `names` (dispatches)."""
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        return any(
            (_reads(left, word) and _literal(right, names))
            or (_reads(right, word) and _literal(left, names))
            for left, right in zip(operands, operands[1:], strict=False)
        )
    if isinstance(node, ast.Match) and _reads(node.subject, word):
        cases = [
            n.value
            for c in node.cases
            for n in ast.walk(c.pattern)
            if isinstance(n, ast.MatchValue)
        ]
        return any(_literal(value, names) for value in cases)
    if isinstance(node, ast.Subscript):  # {"train": ...}[mode]
        return _keyed(node.value, names) and _reads(node.slice, word)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method, owner, args = node.func.attr, node.func.value, node.args
        if method in ("startswith", "endswith"):  # mode.startswith("train")
            return _reads(owner, word) and any(_literal(a, names) for a in args)
        if method == "get":  # {"train": ...}.get(mode)
            return _keyed(owner, names) and bool(args) and _reads(args[0], word)
    return False


def dispatches(tree: ast.AST, word: str, names: set[str]) -> list[ast.AST]:
    """The places that tell a value named `word` apart by one of `names`: a comparison or a
    membership test (`mode == "train"`, `mode in ("train", "infer")`, `settings["mode"] !=
    "train"`, `"train" in spec.modes`), a prefix test (`mode.startswith("train")`), a `match`
    over it with such a case, and a dict literal keyed by them looked up with it
    (`{"train": ...}[mode]`, `.get(mode)`). A data split (`data["train"]`), a method
    (`.train(...)`) or a declaration (`TaskSpec(modes=("serve",))`) is no dispatch."""
    return [node for node in ast.walk(tree) if _found_at(node, word, names)]


def dispatch(package: Path, word: str, names: set[str]) -> dict[str, int]:
    """file -> places that tell a value named `word` apart by one of `names` (dispatches)."""
    found: dict[str, int] = {}
    for path in sorted(package.rglob("*.py")):
        relative = str(path.relative_to(package))
        if relative in REGISTRIES:
            continue
        count = len(dispatches(ast.parse(path.read_text()), word, names))
        if count:
            found[relative] = count
    return found
