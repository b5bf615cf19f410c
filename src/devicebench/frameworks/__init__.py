"""Frameworks that can run a cell; each module here trains and infers one task's model."""

FRAMEWORKS: tuple[str, ...] = ("torch", "keras-tensorflow", "keras-torch")
# Keras 3 picks its backend once, at import, from this variable: the cell runner sets it in the
# worker's environment.
KERAS_BACKENDS: dict[str, str] = {"keras-tensorflow": "tensorflow", "keras-torch": "torch"}
