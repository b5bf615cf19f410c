"""Quality metrics from predictions: accuracy and macro/micro F1 from one confusion matrix."""

from __future__ import annotations

import numpy as np


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    """Counts of (true, predicted) pairs."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"labels {y_true.shape} and predictions {y_pred.shape} differ in shape")
    flat = y_true * num_classes + y_pred
    return np.bincount(flat, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


def classification_scores(
    y_true: np.ndarray, y_pred: np.ndarray, num_classes: int
) -> dict[str, float]:
    """Accuracy, macro F1 (mean over classes present in truth or prediction) and micro F1."""
    matrix = confusion_matrix(y_true, y_pred, num_classes)
    total = matrix.sum()
    true_pos = np.diag(matrix).astype(float)
    predicted = matrix.sum(axis=0).astype(float)
    actual = matrix.sum(axis=1).astype(float)
    present = (predicted + actual) > 0
    denom = predicted + actual
    f1 = np.divide(2 * true_pos, denom, out=np.zeros_like(true_pos), where=denom > 0)
    accuracy = float(true_pos.sum() / total) if total else float("nan")
    micro_p = true_pos.sum() / predicted.sum() if predicted.sum() else 0.0
    micro_r = true_pos.sum() / actual.sum() if actual.sum() else 0.0
    micro = 2 * micro_p * micro_r / (micro_p + micro_r) if micro_p + micro_r else 0.0
    return {
        "accuracy": accuracy,
        "f1_macro": float(f1[present].mean()) if present.any() else float("nan"),
        "f1_micro": float(micro),
    }
