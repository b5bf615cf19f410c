"""A JPEG's scans are counted from its markers, and its decoding stops at a budget."""

from __future__ import annotations

import io

import pytest
from hostile_jpeg import progressive, scan_bomb

from devicebench.serving.decode import OverLimit, decode_jpeg
from devicebench.serving.jpeg_cost import count_scans


def baseline(size: int = 64, comment: bytes = b"") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (10, 200, 30)).save(buffer, "JPEG")
    data = buffer.getvalue()
    if comment:  # a COM segment right after SOI, holding whatever bytes it likes
        data = data[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + data[2:]
    return data


def test_scans_are_counted_as_a_decoder_finds_them():
    assert count_scans(baseline()) == 1
    assert count_scans(progressive(64)) == 10
    assert count_scans(baseline(comment=b"\xff\xda\x00\x02" * 50)) == 1  # markers in a comment
    assert count_scans(scan_bomb(200, 64), stop=1000) == 210
    assert count_scans(scan_bomb(200, 64)) == 65  # stops once past the limit


def test_a_repeated_scan_is_refused_before_decoding():
    with pytest.raises(OverLimit, match="more than 64 scans"):
        decode_jpeg(scan_bomb(30_000), 224)


def test_a_costly_decode_stops_at_its_budget():
    """With the scan limit out of the way, the budget stops the decoder between reads."""
    with pytest.raises(OverLimit, match="too costly to decode: decoding took more than its 0.2"):
        decode_jpeg(scan_bomb(2_000), 224, max_scans=10**6, budget_s=0.2)


def test_ordinary_jpegs_still_decode():
    assert decode_jpeg(progressive(4000), 224).shape == (224, 224, 3)
    assert decode_jpeg(baseline(comment=b"\xff\xda" * 10), 32).shape == (32, 32, 3)
