"""What a JPEG may cost to decode, beyond its pixel count: its scans and its decoding time.

A progressive JPEG is a series of scans, each a pass over every block of the image. A 1 MB file
of 4000x4000 pixels (inside the pixel limit) whose one cheap refinement scan is repeated
thousands of times took 17.5 s to decode, and six of them made a valid request wait 60 s. Real
encoders write 10 scans (libjpeg's progressive script) to about 20 (mozjpeg); `count_scans`
counts them from the markers, before any decoding, and the server refuses more than
`MAX_SCANS`. `Deadline` is the file Pillow reads the JPEG from: past the decoding budget its next
read raises, so the decoder stops between chunks of input instead of running on.
"""

from __future__ import annotations

import io
import time

MAX_SCANS = 64
DECODE_BUDGET_S = 2.0  # a 16-megapixel baseline JPEG decodes (draft mode) in about 0.1 s
READ_BLOCK = 1024  # bytes Pillow hands the decoder at a time: the budget's granularity

SOS, EOI = 0xDA, 0xD9
STANDALONE = {0x01, *range(0xD0, 0xD8)}  # TEM, RST0-7: markers without a length


class OverBudget(Exception):
    """Decoding ran past its budget."""


def count_scans(data: bytes, stop: int = MAX_SCANS) -> int:
    """The number of scans (SOS markers) in a JPEG, counted until past `stop`; markers inside
    other segments (APPn, COM) and inside entropy-coded data are skipped, as a decoder does."""
    scans, pos = 0, 2
    while pos + 4 <= len(data) and scans <= stop:
        if data[pos] != 0xFF:
            return scans  # not where a marker must be: Pillow will refuse the file
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == EOI:
            break
        if marker in STANDALONE:
            pos += 2
            continue
        pos += 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker != SOS:
            continue
        scans += 1
        while True:  # entropy-coded data: up to a marker that is not stuffing or a restart
            pos = data.find(b"\xff", pos)
            if pos < 0 or pos + 1 >= len(data):
                return scans
            following = data[pos + 1]
            if following == 0 or 0xD0 <= following <= 0xD7 or following == 0xFF:
                pos += 2 if following != 0xFF else 1
                continue
            break
    return scans


class Deadline(io.BytesIO):
    """`data` as a file whose reads raise OverBudget once `budget_s` has passed since it was
    made."""

    def __init__(self, data: bytes, budget_s: float):
        super().__init__(data)
        self.budget_s, self.ends = budget_s, time.monotonic() + budget_s

    def read(self, size: int | None = -1) -> bytes:
        if time.monotonic() > self.ends:
            raise OverBudget(f"decoding took more than its {self.budget_s:g} s budget")
        return super().read(size)
