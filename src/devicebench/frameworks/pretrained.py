"""Pretrained weights for the transformer workloads (``weights: pretrained``), never downloaded.

A config maps each model of a task to a local copy: a folder written by ``save_pretrained`` or a
Hugging Face hub id already in this host's hub cache. ``locate`` finds it (or says how to get it)
at config check, before any cell runs; ``load_model`` and ``load_tokenizer`` read it in the cell
with the hub offline, so nothing is ever fetched at run time. This module imports only the
standard library at import time: the config check runs where transformers may be absent.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Files that make a folder a tokenizer save (any one of them; tokenizer.json is the fast one).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json")


class MissingWeights(ValueError):
    """A pretrained model named in the config that this host has no local copy of."""


def cell_weights(task_settings: dict[str, Any], model: str) -> tuple[dict, dict]:
    """(extra axes, run settings) a cell of `model` gets: a ``weights`` axis (``pretrained``, so
    tables and cell paths tell these cells apart) and the ``pretrained`` folder or hub id. None
    for random weights, so that configs without pretrained weights keep their cells and hashes."""
    if task_settings.get("weights", "random") != "pretrained":
        return {}, {}
    return {"weights": "pretrained"}, {"pretrained": str(task_settings["pretrained"][model])}


def is_pretrained(settings: dict[str, Any]) -> bool:
    return settings.get("weights", "random") == "pretrained"


def _how_to_get(model: str, source: str) -> str:
    return (
        f"get it with `hf download {source}` (huggingface_hub's CLI) on a host with "
        f"network and name that hub id, or write the model and its tokenizer into a folder with "
        f"save_pretrained(<folder>) and give pretrained: {{{model}: <folder>}}"
    )


def _hub_cache() -> str:
    """Where this host's hub cache is (HF_HUB_CACHE / HF_HOME decide)."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return "huggingface_hub is not installed"
    return str(constants.HF_HUB_CACHE)


def _cached_snapshot(repo_id: str) -> Path | None:
    """The folder of `repo_id`'s snapshot in the local hub cache, or None (never the network)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo_id=repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached, or not a valid repo id: both mean "not here"
        return None


def locate(model: str, source: str, *, tokenizer: bool = False) -> Path:
    """The local folder holding `source` (a save_pretrained folder or a cached hub id).

    Raises MissingWeights naming `model` and how to get it when there is none, when the folder
    holds no config.json, or (``tokenizer``) no tokenizer files.
    """
    folder = Path(source).expanduser()
    if not folder.is_dir():
        snapshot = _cached_snapshot(source)
        if snapshot is None:
            raise MissingWeights(
                f"no pretrained weights for {model}: {source!r} is neither a folder nor a hub id "
                f"in the local Hugging Face cache ({_hub_cache()}); nothing is downloaded at "
                f"run time: {_how_to_get(model, source)}"
            )
        folder = snapshot
    if not (folder / "config.json").is_file():
        raise MissingWeights(
            f"pretrained weights for {model}: {folder} has no config.json, so it is not a "
            f"save_pretrained folder; {_how_to_get(model, source)}"
        )
    if tokenizer and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise MissingWeights(
            f"pretrained weights for {model}: {folder} has no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}); save the model's tokenizer there too with "
            "tokenizer.save_pretrained(<folder>)"
        )
    return folder.resolve()


def model_config(folder: Path) -> dict[str, Any]:
    """The checkpoint's config.json (read without transformers, for checks before any cell)."""
    return json.loads((Path(folder) / "config.json").read_text())


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """The hub offline while a checkpoint loads: a missing file fails instead of downloading."""
    saved = {key: os.environ.get(key) for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    os.environ.update({key: "1" for key in saved})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def load_model(
    auto_class: str, model: str, source: str, num_labels: int, seed: int, **options: Any
):
    """The checkpoint's model with a `num_labels` head, and what the record says about it.

    The task's head rarely matches the checkpoint's (a base model has none, a fine-tuned one
    other labels): it is built fresh from `seed` (``ignore_mismatched_sizes``), everything else
    is the checkpoint's.
    """
    import torch
    import transformers

    folder = locate(model, source)
    torch.manual_seed(seed)
    with offline():
        net, loading = getattr(transformers, auto_class).from_pretrained(
            str(folder),
            num_labels=num_labels,
            ignore_mismatched_sizes=True,
            local_files_only=True,
            output_loading_info=True,
            **options,
        )
    missing = {str(key) for key in loading.get("missing_keys", [])}
    mismatched = {  # (key, checkpoint shape, model shape) entries
        str(item[0] if isinstance(item, tuple | list) else item)
        for item in loading.get("mismatched_keys", [])
    }
    fresh = sorted(missing | mismatched)
    info = {
        "weights": source,
        "weights_folder": str(folder),
        "weights_loaded_with": f"{auto_class}.from_pretrained(num_labels={num_labels}, "
        "ignore_mismatched_sizes=True, local_files_only=True"
        + "".join(f", {key}={value!r}" for key, value in options.items())
        + ")",
        "weights_newly_initialised": fresh,
    }
    return net, info


def load_tokenizer(model: str, source: str):
    """The checkpoint's own tokenizer (AutoTokenizer from the same folder, offline)."""
    from transformers import AutoTokenizer

    folder = locate(model, source, tokenizer=True)
    with offline():
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def load_config(model: str, source: str, num_labels: int):
    """The checkpoint's transformers configuration with a `num_labels` head."""
    import transformers

    with offline():
        return transformers.AutoConfig.from_pretrained(
            str(locate(model, source)), num_labels=num_labels, local_files_only=True
        )
