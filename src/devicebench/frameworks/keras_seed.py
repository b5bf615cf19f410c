"""Seeding Keras without importing TensorFlow into a keras-torch process.

`keras.utils.set_random_seed` also calls `tf.random.set_seed` whenever TensorFlow is installed,
which imports TensorFlow (about 4 s on a 2-core VM) into keras-torch cells and servers that never
run a TensorFlow op. On the torch backend this does the rest of what it does, in its order.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np


def set_random_seed(keras: Any, seed: int) -> None:
    """Python, NumPy and the backend seeded, Keras' global seed generator reset, as Keras does."""
    if keras.backend.backend() != "torch":
        keras.utils.set_random_seed(seed)
        return
    try:
        from keras.src.backend.common import global_state
        from keras.src.random import seed_generator
        from keras.src.utils.rng_utils import GLOBAL_RANDOM_SEED
    except ImportError:  # another Keras layout: its own function, TensorFlow and all
        keras.utils.set_random_seed(seed)
        return
    import torch

    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r}")
    global_state.set_global_attribute(GLOBAL_RANDOM_SEED, seed)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
