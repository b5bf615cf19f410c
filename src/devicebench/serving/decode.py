"""What one request may cost the server before the model sees it, bounded before the costly work.

- An image's pixel count is read from its header (Pillow's open reads only the header) and
  checked against a limit before any pixel is decoded: a 643-byte JPEG whose header claims
  11000x11000 took a server from 0.44 to 1.39 GB resident before this check. JPEGs then decode
  with Pillow's draft mode, which lets libjpeg scale by 1/2, 1/4 or 1/8 while decoding, never
  below the model's input size (an image at or under that size decodes exactly as before).
  Pillow's own decompression-bomb error is an over-limit image too: 413, never a 500.
- A JPEG may have at most jpeg_cost.MAX_SCANS scans (counted from its markers, before decoding)
  and decodes within jpeg_cost.DECODE_BUDGET_S: a progressive JPEG repeating one cheap scan
  thousands of times took 17.5 s to decode inside the pixel limit (413 either way).
- A review's text is cut to `TEXT_CHARS_PER_TOKEN` x seq_len characters before tokenizing: the
  tokenizer cuts to seq_len tokens anyway, and tokenizing a whole 960 KB body took 4.6 s.
"""

from __future__ import annotations

import numpy as np

from devicebench.serving.jpeg_cost import (
    DECODE_BUDGET_S,
    MAX_SCANS,
    READ_BLOCK,
    Deadline,
    OverBudget,
    count_scans,
)
from devicebench.serving.scorer import BadRequest

# 16 megapixels: 4,000 x 4,000, above any camera image the study sends (its JPEGs are 224 px
# or less) and a decoded RGB image of 48 MB at most.
DEFAULT_MAX_PIXELS = 16_000_000
# Every WordPiece token but [UNK] covers at least one character, so seq_len tokens come from
# at most seq_len non-space characters; 8x leaves room for white space and long words.
TEXT_CHARS_PER_TOKEN = 8


class BadImage(BadRequest):
    """A body that is not a decodable JPEG image (400)."""


class OverLimit(BadRequest):
    """A body within the byte limit that would cost more than the server allows (413)."""

    status = 413


def decode_jpeg(
    body: bytes,
    size: int,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_scans: int = MAX_SCANS,
    budget_s: float = DECODE_BUDGET_S,
) -> np.ndarray:
    """Decode one JPEG and resize it to `size` x `size` as a service would (Pillow): H x W x 3
    uint8. Raises OverLimit when its header claims more than `max_pixels`, it has more than
    `max_scans` scans or decoding takes over `budget_s`; BadImage when it is not a decodable
    JPEG."""
    from PIL import Image, UnidentifiedImageError

    if (scans := count_scans(body, max_scans)) > max_scans:
        raise OverLimit(f"the JPEG has more than {max_scans} scans (found {scans} so far)")
    try:
        with Image.open(Deadline(body, budget_s)) as image:
            if image.format != "JPEG":
                raise BadImage(f"the body is a {image.format} image, not JPEG")
            width, height = image.size
            if width * height > max_pixels:
                raise OverLimit(
                    f"the image is {width}x{height} = {width * height:,} pixels, over the "
                    f"server's limit of {max_pixels:,} (--max-pixels)"
                )
            image.draft("RGB", (size, size))  # libjpeg scales while decoding, never below size
            image.decodermaxblock = READ_BLOCK  # the budget is checked between reads
            image.load()  # a truncated JPEG fails here
            rgb = image.convert("RGB").resize((size, size), Image.BILINEAR)
    except OverBudget as error:
        raise OverLimit(f"the JPEG is too costly to decode: {error}") from None
    except Image.DecompressionBombError as error:
        raise OverLimit(f"the image is a decompression bomb: {error}") from None
    except UnidentifiedImageError as error:
        raise BadImage("the body is not an image Pillow can identify") from error
    except (OSError, SyntaxError) as error:
        raise BadImage(f"the JPEG cannot be decoded: {error}") from error
    return np.asarray(rgb, dtype=np.uint8)


def text_chars(seq_len: int) -> int:
    """The most characters of a review the tokenizer is given for `seq_len` tokens."""
    return TEXT_CHARS_PER_TOKEN * seq_len


def cut_text(text: str, seq_len: int) -> str:
    """`text` cut to what `seq_len` tokens can come from (text_chars), before tokenizing."""
    return text[: text_chars(seq_len)]
