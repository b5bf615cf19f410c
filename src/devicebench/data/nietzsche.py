"""The Nietzsche text of the Keras text-generation example, as next-character windows.

As in ``lstm_text_generation.py``: the text is lower-cased, its sorted character set is the
vocabulary, and each sample is a 40-character window (taken every 3 characters) with the
character that follows it as the label. The first 90 % of the windows train, the last 10 % test
(the original example has no test split; a contiguous tail keeps test text unseen).
The synthetic source writes a plain-text file of pseudo-words over a 57-character alphabet (the
size of Nietzsche's lower-cased character set), so one reader serves both sources.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MAXLEN, STEP = 40, 3
TEST_FRACTION = 10  # one window in ten, at the end, is the test split
ALPHABET = "\n !\"'(),-.0123456789:;=?[]_abcdefghijklmnopqrstuvwxyz\u00e4\u00e6\u00e9\u00eb"


class TextFormatError(ValueError):
    """A text file that cannot be decoded or is too short to make windows from."""


def read_windows(
    path: Path, maxlen: int = MAXLEN, step: int = STEP
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str]:
    """Train/test (windows N×maxlen uint8, next char ids) and the character set."""
    try:
        text = Path(path).read_text(encoding="utf-8").lower()
    except UnicodeDecodeError as e:
        raise TextFormatError(f"{path}: not UTF-8 text ({e})") from e
    chars = "".join(sorted(set(text)))
    if len(text) <= maxlen + step * TEST_FRACTION or len(chars) > 255:
        raise TextFormatError(
            f"{path}: {len(text)} characters ({len(chars)} distinct) cannot make "
            f"{maxlen}-character windows with a test split"
        )
    lookup = np.zeros(max(map(ord, chars)) + 1, dtype=np.uint8)
    lookup[[ord(c) for c in chars]] = np.arange(len(chars), dtype=np.uint8)
    codes = lookup[np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)]
    starts = np.arange(0, len(text) - maxlen, step)
    x = codes[starts[:, None] + np.arange(maxlen)[None, :]]
    y = codes[starts + maxlen]
    n_test = len(starts) // TEST_FRACTION
    split = len(starts) - n_test
    return {"train": (x[:split], y[:split]), "test": (x[split:], y[split:])}, chars


def synthetic_text(seed: int, n_train: int, n_test: int) -> str:
    """Text with enough windows for n_train + n_test samples; learnable within words."""
    windows = max(TEST_FRACTION * n_test, -(-n_train * TEST_FRACTION // (TEST_FRACTION - 1))) + 10
    length = windows * STEP + MAXLEN + 1
    rng = np.random.default_rng(np.random.SeedSequence([seed, 30]))
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lexicon = ["".join(rng.choice(letters, size=rng.integers(2, 9))) for _ in range(400)]
    weights = 1.0 / np.arange(1, len(lexicon) + 1)
    weights /= weights.sum()
    out, size = [ALPHABET[1:] + "\n"], len(ALPHABET)  # every character appears at least once
    punct = list(",.;:!?") + ["--", ' "', "'s", " (", ") ", "\n", " 19"]
    while size < length:
        words = rng.choice(lexicon, size=rng.integers(4, 14), p=weights)
        piece = " ".join(words) + punct[rng.integers(len(punct))] + " "
        out.append(piece)
        size += len(piece)
    return "".join(out)[:length]


def write_synthetic(path: Path, seed: int, n_train: int, n_test: int) -> None:
    Path(path).write_text(synthetic_text(seed, n_train, n_test), encoding="utf-8")
