"""Frameworks that can run a cell; each module here trains and infers one task's model."""

FRAMEWORKS: tuple[str, ...] = ("torch", "keras-tensorflow", "keras-torch")
# Keras 3 picks its backend once, at import, from this variable: the cell runner sets it in the
# worker's environment.
KERAS_BACKENDS: dict[str, str] = {"keras-tensorflow": "tensorflow", "keras-torch": "torch"}
# precision -> the torch dtype (by name) that autocast runs in; fp32 and tf32 need no autocast.
AUTOCAST: dict[str, str] = {"bf16": "bfloat16", "fp16": "float16"}
# precision -> Keras dtype policy (tf32 is float32 math with TF32 matmuls, set apart by the loop).
KERAS_POLICIES: dict[str, str] = {
    "fp32": "float32",
    "tf32": "float32",
    "bf16": "mixed_bfloat16",
    "fp16": "mixed_float16",
}
