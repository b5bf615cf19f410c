"""Distributed inference on Apache Spark: the held-out set scored through a DataFrame.

`session` starts Spark (local[N] by default, any master URL from the config), `scoring` is the
iterator-of-batches pandas UDF that holds the model, `batch` and `streaming` time a batch job and
a Structured Streaming query over a folder source, and `cell` runs one infer cell on them.
"""

ENGINES = ("inprocess", "spark", "spark-streaming")


def skip_reason(settings: dict) -> str | None:
    """Why a Spark infer cell cannot run, or None (checked before the cell starts any work)."""
    engine = str(settings.get("engine", "inprocess"))
    if not engine.startswith("spark"):
        return None
    if settings["mode"] != "infer":
        return f"engine {engine} applies to infer cells only"
    if settings["framework"] != "torch" or settings["device"] != "cpu":
        return (
            f"engine {engine} scores torch models on CPU executors; this cell is "
            f"{settings['framework']} on {settings['device']}"
        )
    return None
