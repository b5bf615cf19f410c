"""Agreement of a reduced format with fp32, as MLPerf asks of a quantized model.

The reference is the same model, with the same weights, scored by torch in fp32 eagerly on the
same held-out samples; a cell in bf16 or int8 (or on another engine) agrees when its top-1
predictions match on at least 99 % of them, and is flagged ``quality_below_reference`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from devicebench.engines.base import EngineView

REQUIRED = 0.99


def top1(logits: np.ndarray, binary: bool) -> np.ndarray:
    """Predicted classes of a batch of logits (binary: one logit per sample, > 0)."""
    logits = np.asarray(logits, dtype=np.float32)
    if binary:
        return (logits.reshape(len(logits), -1)[:, 0] > 0).astype(np.int64)
    return logits.argmax(axis=-1)


def reference_predictions(view: EngineView, batch_size: int) -> tuple[np.ndarray, float]:
    """torch fp32 eager predictions of the test split and their mean loss."""
    import torch

    labels = view.labels
    total, predictions = 0.0, []
    view.model.eval()
    with torch.inference_mode():
        for start in range(0, len(labels), batch_size):
            inputs = view.inputs("test", start, start + batch_size)
            logits = view.model(*inputs.values()).float()
            total += float(batch_loss(logits, labels[start : start + batch_size], view.binary))
            predictions.append(top1(logits.cpu().numpy(), view.binary))
    return np.concatenate(predictions), total / len(labels)


def batch_loss(logits: Any, labels: Any, binary: bool) -> Any:
    """Summed loss of one batch (BCE with logits for binary tasks, cross entropy else)."""
    import torch
    import torch.nn.functional as F

    logits = torch.as_tensor(logits).float()
    labels = torch.as_tensor(labels, device=logits.device)
    if binary:
        return F.binary_cross_entropy_with_logits(
            logits.reshape(len(labels)), labels.float(), reduction="sum"
        )
    return F.cross_entropy(logits, labels.long(), reduction="sum")


def agreement(predicted: np.ndarray, reference: np.ndarray) -> float:
    """Share of samples whose top-1 prediction equals the reference's."""
    predicted, reference = np.asarray(predicted).ravel(), np.asarray(reference).ravel()
    if predicted.shape != reference.shape:
        raise ValueError(f"predictions {predicted.shape} vs reference {reference.shape}")
    return float((predicted == reference).mean())


def verdict(
    share: float, reference_accuracy: float | None, reference: np.ndarray | None = None
) -> dict:
    """The quality section's words on agreement: both figures and the flag.

    A reference that predicts one class for every sample (a barely trained model) is agreed
    with by any format that does the same: the note says the figure tells nothing then.
    """
    words = {
        "agreement_fp32": share,
        "agreement_required": REQUIRED,
        "reference": "torch fp32 eager, same weights and held-out samples",
        "reference_accuracy": reference_accuracy,
        "quality_below_reference": bool(share < REQUIRED),
    }
    if reference is not None and len(reference) and np.unique(reference).size == 1:
        words["agreement_note"] = (
            f"the fp32 reference predicts class {np.asarray(reference).ravel()[0]} for all "
            f"{len(reference)} held-out samples: agreement says nothing about the format's "
            "fidelity"
        )
    return words
