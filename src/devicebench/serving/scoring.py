"""What a scoring server does that depends on its task: the body it takes and the model it runs.

The server (app.py, ray_app.py), its dynamic batching, the clients, LoadGen and the serve cell
are the same for every serve task; a `Scorer` carries what differs:

- serve_image: JPEG bytes (image/jpeg), decoded and resized with Pillow, stacked into one
  uint8 batch, scored by an image classifier (workloads/serve_image.py).
- serve_text: UTF-8 review text (text/plain), tokenized with the text_classify workload's
  WordPiece and cut to the cell's seq_len, the batch padded to its longest sequence, scored by
  a transformers sequence classifier (workloads/serve_text.py).

Each serve workload builds its Scorer (``make_scorer``); this module finds it by task name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devicebench.engines import IN_PROCESS, is_in_process
from devicebench.serving.scorer import BadRequest, Scorer  # noqa: F401 - the server's names


def serve_tasks() -> list[str]:
    """The registry's serve tasks, in its order (the first is the servers' default)."""
    from devicebench.workloads import specs

    return [name for name, spec in specs().items() if spec.kind == "serve"]


def batch_buckets(spec: str, device: str, max_batch: int) -> tuple[int, ...]:
    """The batch sizes a server pads its batches to. `auto`: on a GPU the powers of two below
    `max_batch` and `max_batch` (on the H100 a MobileNetV2 batch of a size not seen before took
    1.5-1.9 s against 5 ms, benchmarks/batch_shapes.py), on a CPU none; `none`: none; or a
    comma-separated list of sizes, `max_batch` added."""
    if spec == "none" or (spec == "auto" and not device.startswith("cuda")):
        return ()
    if spec == "auto":
        sizes = {1 << k for k in range(max_batch.bit_length()) if 1 << k < max_batch}
    else:
        try:
            sizes = {int(size) for size in spec.split(",") if size.strip()}
        except ValueError:
            message = f"batch buckets {spec!r}: give auto, none or sizes like 1,4,16"
            raise ValueError(message) from None
        if any(size < 1 or size > max_batch for size in sizes):
            raise ValueError(f"batch buckets {spec!r}: each size must be 1..{max_batch}")
    return tuple(sorted(sizes | {max_batch}))


def make_scorer(
    task: str,
    framework: str,
    model: str,
    device: str,
    precision: str,
    *,
    max_batch: int,
    image_size: int = 224,
    seq_len: int = 128,
    tokenizer: Path | str | None = None,
    buckets: str = "auto",
    max_pixels: int | None = None,
    engine: str = IN_PROCESS,
) -> Scorer:
    """The scorer of `task`, with its model built (random weights) and placed on `device`,
    padding its batches to `buckets` (see batch_buckets); images over `max_pixels` (None: the
    default of decode.py) are refused."""
    sizes = batch_buckets(buckets, device, max_batch)
    from devicebench.workloads import get, specs

    if framework in ("torch", "keras-torch"):  # the cell's precision as torch math (TF32)
        from devicebench.measure.precision import apply_precision_math

        apply_precision_math(precision)

    if task not in specs() or specs()[task].kind != "serve":
        known = [name for name, spec in specs().items() if spec.kind == "serve"]
        raise ValueError(f"unknown serve task {task!r}; known: {', '.join(known)}")
    scorer = get(task).make_scorer(
        framework,
        model,
        device,
        precision,
        image_size=image_size,
        seq_len=seq_len,
        tokenizer=tokenizer,
        max_pixels=max_pixels,
        **({} if is_in_process(engine) else {"engine": engine}),
    )
    scorer.buckets = sizes
    scorer.info["batch_buckets"] = list(sizes)
    return scorer


def skip_reason(settings: dict[str, Any]) -> str | None:
    """Why this serve cell cannot run here (an architecture a library lacks), or None."""
    from devicebench.workloads import get

    return get(settings["task"]).serve_skip_reason(settings["framework"], settings["model"])
