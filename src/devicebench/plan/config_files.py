"""Reading config files and --config values as a user means them, or saying exactly what is wrong.

- A YAML syntax error names the file, line and column (Snakemake's own loader says only "Config
  file is not valid JSON or YAML").
- A key given twice in one mapping is an error naming both lines (YAML loaders silently keep
  the last value).
- `--config` values inside lists and mappings are typed as YAML types them: Snakemake parses
  `batch_sizes=[32]` with YAML's BaseLoader, which leaves every scalar a string (['32']).

``python -m devicebench.plan.config_files FILE...`` checks files this way and prints what is wrong.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from devicebench.plan.config import ConfigError
from devicebench.plan.config_bounds import ConfigTooLarge, check_size, short


def _loader():
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        """A safe loader that refuses a mapping holding the same key twice (a key that a merge,
        `<<: *anchor`, brings in may be given again: that is what a merge is for)."""

        def construct_mapping(self, node, deep=False):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if isinstance(key, (list, dict, set)):  # `? [a, b]`: YAML allows, Python can't hash
                    raise ConfigError(
                        f"config file {key_node.start_mark.name}, line {line}: a key must be a "
                        f"name or a number, not a {type(key).__name__} ({short(key)})"
                    )
                if key in seen:
                    raise ConfigError(
                        f"config file {key_node.start_mark.name}, line {line}: key {key!r} "
                        f"is given twice in one mapping (first on line {seen[key]})"
                    )
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping a YAML config file holds; ConfigError naming the file and line otherwise."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"config file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path}: not UTF-8 text (byte {error.object[error.start]:#04x} at "
            f"offset {error.start}); save it as UTF-8"
        ) from None
    try:
        loaded = yaml.load(_named(text, path), Loader=_loader())  # noqa: S506 - a SafeLoader
        check_size(loaded, f"config file {path}")
    except ConfigTooLarge as error:
        raise ConfigError(str(error)) from None
    except RecursionError:
        raise ConfigError(f"config file {path}: nested too deeply to be a config") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(filter(None, (error.context, error.problem)))
        raise ConfigError(f"config file {path}{where}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path}: not valid YAML: {error}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path}: expected a mapping at the top level")
    return loaded


def problem_of(path: str | Path) -> str:
    """What is wrong with the config file at `path` and the command that checks it again, in
    one paragraph; "" when it reads as a config."""
    try:
        read_yaml(path)
    except ConfigError as error:
        return f"{error}. Check it again with: python -m devicebench.plan.config_files {path}"
    return ""


def _named(text: str, path: Path):
    """`text` as a stream whose name YAML's marks (and so our messages) carry."""
    import io

    stream = io.StringIO(text)
    stream.name = str(path)
    return stream


def typed_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """--config values with the scalars inside lists and mappings typed as YAML types them
    (`[32]` -> [32], `{"max_failures": 2}` -> {"max_failures": 2}); top-level values are
    Snakemake's already (int, float, bool, else str)."""
    return {key: _typed(value, top=True) for key, value in overrides.items()}


def _typed(value: Any, top: bool = False) -> Any:
    import yaml

    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}  # keys stay strings
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, str) and not top:
        try:
            typed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        return typed if isinstance(typed, (int, float, bool)) or typed is None else value
    return value


def main(argv: list[str] | None = None) -> int:
    """Check each config file named; print what is wrong with each, exit 1 if anything is."""
    failed = 0
    for name in argv if argv is not None else sys.argv[1:]:
        try:
            read_yaml(name)
            print(f"{name}: readable")
        except ConfigError as error:
            print(error, file=sys.stderr)
            failed = 1
        except Exception as error:  # noqa: BLE001 - a checker names the file, never crashes
            print(f"config file {name}: cannot be read: {type(error).__name__}: {error}")
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
