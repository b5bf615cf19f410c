"""serving/decode.py: the pixel limit from the header, draft decoding that changes nothing at or
below the model's size, and serve.max_pixels reaching the server's command line."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hostile_inputs import jpeg_claiming, valid_jpeg

from devicebench.serving.decode import OverLimit, decode_jpeg


def plain_decode(body: bytes, size: int) -> np.ndarray:
    """Decoding without draft mode, as the server did before."""
    from PIL import Image

    with Image.open(io.BytesIO(body)) as image:
        return np.asarray(image.convert("RGB").resize((size, size), Image.BILINEAR))


def test_an_image_over_the_pixel_limit_is_refused_from_its_header():
    with pytest.raises(OverLimit, match="64x64 = 4,096 pixels, over the server's limit of 4,000"):
        decode_jpeg(valid_jpeg(64), 32, max_pixels=4_000)
    with pytest.raises(OverLimit, match="11000x11000"):
        decode_jpeg(jpeg_claiming(11000, 11000), 32)
    assert OverLimit.status == 413


@pytest.mark.parametrize(("side", "size"), [(32, 32), (64, 64), (224, 224), (40, 32)])
def test_draft_decoding_changes_nothing_when_the_image_is_not_twice_the_size(side, size):
    body = valid_jpeg(side)
    assert np.array_equal(decode_jpeg(body, size), plain_decode(body, size))


def test_draft_decoding_of_a_large_image_is_close_to_the_full_decode():
    body = valid_jpeg(1024)
    fast, full = decode_jpeg(body, 64).astype(int), plain_decode(body, 64).astype(int)
    assert fast.shape == full.shape == (64, 64, 3)
    assert np.abs(fast - full).mean() < 40  # random pixels: scaled while decoding, not equal


def test_serve_max_pixels_reaches_the_server_command(tmp_path):
    from devicebench.run import launchers
    from devicebench.run.launchers.base import ScoringServerLauncher
    from devicebench.serving.cell import serve_settings

    settings = {"task": "serve_image", "framework": "torch", "model": "mobilenetv2"}
    settings |= {"device": "cpu", "precision": "fp32", "threads_resolved": 1, "batch_size": 4}
    serve = serve_settings({"serve": {"max_pixels": 1234}})
    server = launchers.for_cell(settings, ScoringServerLauncher).server(settings, serve, tmp_path)
    command = server.command
    assert command[command.index("--max-pixels") + 1] == "1234"
