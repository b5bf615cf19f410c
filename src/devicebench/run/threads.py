"""Thread counts applied for real: environment variables that native libraries read at import.

OpenMP, MKL and TensorFlow read these once, when first loaded, so the cell runner sets them in the
environment of a fresh worker process, before any framework is imported there.
"""

from __future__ import annotations

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
)


def thread_environment(threads: int) -> dict[str, str]:
    """Variables that pin every native thread pool to `threads` (TF inter-op pool to 1)."""
    if threads < 1:
        raise ValueError(f"thread count must be at least 1, got {threads}")
    env = {name: str(threads) for name in THREAD_VARIABLES}
    env["TF_NUM_INTEROP_THREADS"] = "1"
    return env


def apply_tensorflow_threads(threads: int) -> dict[str, int]:
    """Set TensorFlow's intra-op pool (inter-op to 1) before any op; return what TF reports."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return {
        "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
    }


def apply_torch_threads(threads: int) -> int:
    """Set torch's intra-op pool and return what torch reports back."""
    import torch

    torch.set_num_threads(threads)
    return torch.get_num_threads()


def apply_framework_threads(framework: str, threads: int) -> dict[str, int]:
    """The cell framework's thread settings, applied before it runs any op; what it reports."""
    if framework == "keras-tensorflow":
        return apply_tensorflow_threads(threads)
    return {"torch_num_threads": apply_torch_threads(threads)}
