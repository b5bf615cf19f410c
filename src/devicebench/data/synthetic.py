"""A deterministic, learnable stand-in for MNIST, for machines that cannot download it.

The study measures speed, so synthetic data only has to have MNIST's shapes and dtypes and be
learnable enough that accuracy tables still mean something (a model that learns nothing is a
bug). Each class is a smooth random "glyph" (low-frequency pattern under a centred envelope,
dark background like MNIST); each sample is its glyph, shifted by up to three pixels, with random
contrast, a smooth per-sample distortion shared by no class, and pixel noise. Shifts and
distortions keep a linear model well short of 100 %, while an MLP learns it within an epoch.

Train and test draw from independent child seeds, so the test set for a given seed does not
change when the number of training samples does.
"""

from __future__ import annotations

import numpy as np

SIDE = 28
NUM_CLASSES = 10
MAX_SHIFT = 3
_COARSE = 7  # control points per axis of the smooth patterns
_CHUNK = 8192  # samples generated per block, to bound memory for large sets

# Difficulty knobs, tuned so that logistic regression trained on 2,000 samples scores about
# 80-88 % on the test split (about 87 % on 20,000), and a 784-512-512-10 MLP about 92 % after
# one epoch of 60,000: learnable, not trivial (tests/test_data.py checks the first).
CONTRAST = (0.55, 1.15)
DISTORTION = 0.42  # std of the per-sample smooth pattern, relative to a glyph's peak
PIXEL_NOISE = 0.2  # std of white noise, relative to a glyph's peak
INK_THRESHOLD = 0.0  # a glyph is its smooth field above this many standard deviations
ENVELOPE_WIDTH = 3.5  # the envelope's std is side / this


def _upsample(coarse: np.ndarray, side: int) -> np.ndarray:
    """Bilinear upsampling of (..., c, c) control points to (..., side, side).

    Written with elementwise operations only (no BLAS), whose IEEE results do not depend on the
    machine's BLAS or thread count: the same seed must give the same bytes everywhere.
    """
    n_in = coarse.shape[-1]
    pos = np.linspace(0.0, n_in - 1.0, side)
    lo = np.clip(np.floor(pos).astype(np.intp), 0, n_in - 2)
    frac = pos - lo
    rows = coarse[..., lo, :] * (1.0 - frac)[:, None] + coarse[..., lo + 1, :] * frac[:, None]
    return rows[..., lo] * (1.0 - frac) + rows[..., lo + 1] * frac


def _smooth(rng: np.random.Generator, count: int, side: int) -> np.ndarray:
    """``count`` smooth random fields of ``side``×``side``, zero mean, unit std each."""
    fields = _upsample(rng.standard_normal((count, _COARSE, _COARSE)), side)
    fields -= fields.mean(axis=(1, 2), keepdims=True)
    fields /= fields.std(axis=(1, 2), keepdims=True) + 1e-12
    return fields


def _envelope(side: int) -> np.ndarray:
    """Centred Gaussian window: glyphs fade to black at the border, as MNIST digits do."""
    r = np.arange(side) - (side - 1) / 2.0
    g = np.exp(-(r**2) / (2 * (side / ENVELOPE_WIDTH) ** 2))
    return np.outer(g, g)


def prototypes(seed: int) -> np.ndarray:
    """The class glyphs for ``seed``: float array (classes, 28+2s, 28+2s) in [0, 1], padded."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0])
    side = SIDE + 2 * MAX_SHIFT
    glyphs = np.maximum(_smooth(rng, NUM_CLASSES, side) - INK_THRESHOLD, 0.0) * _envelope(side)
    glyphs /= glyphs.max(axis=(1, 2), keepdims=True) + 1e-12
    return glyphs


def _samples(rng: np.random.Generator, glyphs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    n = len(labels)
    dy, dx = rng.integers(0, 2 * MAX_SHIFT + 1, size=(2, n))
    rows = dy[:, None] + np.arange(SIDE)[None, :]
    cols = dx[:, None] + np.arange(SIDE)[None, :]
    img = glyphs[labels[:, None, None], rows[:, :, None], cols[:, None, :]]
    img *= rng.uniform(*CONTRAST, size=(n, 1, 1))
    img += DISTORTION * _smooth(rng, n, SIDE) * _envelope(SIDE)
    img += PIXEL_NOISE * rng.standard_normal((n, SIDE, SIDE))
    return np.clip(np.rint(img * 255.0), 0, 255).astype(np.uint8)


def make_split(seed: int, n: int, split: str) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images (uint8, n×28×28) and balanced labels (uint8) for ``split`` train/test."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    if n < 0:
        raise ValueError(f"number of samples must be >= 0, not {n}")
    child = np.random.SeedSequence(seed).spawn(3)[1 if split == "train" else 2]
    rng = np.random.default_rng(child)
    glyphs = prototypes(seed)
    labels = rng.permutation(np.arange(n) % NUM_CLASSES).astype(np.uint8)
    images = np.empty((n, SIDE, SIDE), dtype=np.uint8)
    for start in range(0, n, _CHUNK):
        block = labels[start : start + _CHUNK].astype(np.intp)
        images[start : start + _CHUNK] = _samples(rng, glyphs, block)
    return images, labels
