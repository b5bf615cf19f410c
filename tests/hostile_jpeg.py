"""JPEGs that cost more to decode than their pixel count says, built from real encoder output."""

from __future__ import annotations

import io


def segments(data: bytes) -> list[tuple[int, int, int]]:
    """(marker, start, end) of each segment of a well-formed JPEG; a scan spans its data."""
    pos, out = 2, []
    while pos < len(data):
        marker = data[pos + 1]
        if marker == 0xD9:
            out.append((marker, pos, pos + 2))
            break
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker == 0xDA:
            while data[(end := data.index(b"\xff", end)) + 1] == 0 or 0xD0 <= data[end + 1] <= 0xD7:
                end += 2
        out.append((marker, pos, end))
        pos = end
    return out


def progressive(size: int = 4000) -> bytes:
    """A flat progressive JPEG of size x size (libjpeg's script: 10 scans, ~140 KB at 4000)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (120, 80, 200)).save(
        buffer, "JPEG", progressive=True, quality=90
    )
    return buffer.getvalue()


def scan_bomb(repeats: int, size: int = 4000) -> bytes:
    """A progressive JPEG whose last scan (an AC refinement of ~31 bytes that makes the decoder
    visit every block) is repeated `repeats` times: 30,000 repeats are about 1 MB."""
    data = progressive(size)
    found = segments(data)
    _, start, end = [s for s in found if s[0] == 0xDA][-1]
    eoi = found[-1][1]
    return data[:eoi] + data[start:end] * repeats + data[eoi:]
