"""Distributed inference on Apache Spark: the held-out set scored through a DataFrame.

`session` starts Spark (local[N] by default, any master URL from the config), `scoring` is the
iterator-of-batches pandas UDF that holds the model, `batch` and `streaming` time a batch job and
a Structured Streaming query over a folder source, and `cell` runs one infer cell on them.
"""

ENGINES = ("inprocess", "spark", "spark-streaming")
