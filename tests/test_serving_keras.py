"""The Keras scoring model on the torch backend records no autograd graph while it serves."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import numpy as np
    import torch
    from devicebench.workloads.serve_image import Classifier

    classifier = Classifier("keras-torch", "mobilenetv2", 32, "cpu", "fp32")
    saved = []
    batch = np.random.default_rng(0).integers(0, 256, size=(4, 32, 32, 3), dtype=np.uint8)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(1) or t, lambda t: t):
        classes, scores = classifier.predict(batch)
    print(len(classes), float(scores.min()) > 0, len(saved))
""")


def test_keras_torch_scoring_saves_no_tensors_for_backward():
    """Autograd saves tensors for backward only when it records a graph: under load on the H100
    those graphs filled the GPU (torch.OutOfMemoryError, HTTP 500s) before the fix."""
    env = dict(os.environ, KERAS_BACKEND="torch")
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["4", "True", "0"]
