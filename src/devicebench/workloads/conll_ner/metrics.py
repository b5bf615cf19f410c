"""Entity-level NER scores with seqeval: exact span match, micro and macro over entity types.

seqeval's default mode reads spans as the CoNLL evaluation script (conlleval) does, so IOB1 (the
original CoNLL-2003 files) and IOB2 tags score alike. A predicted entity counts only when its
type and both its boundaries equal a true entity's. Token accuracy counts every token, O too.
"""

from __future__ import annotations

from collections.abc import Sequence

from seqeval.metrics import accuracy_score, classification_report


def entity_scores(
    true_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]
) -> dict[str, float]:
    """Precision, recall and F1 (micro and macro over types), per-type F1, token accuracy."""
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(predicted_tags)} predicted")
    for i, (t, p) in enumerate(zip(true_tags, predicted_tags, strict=True)):
        if len(t) != len(p):
            raise ValueError(f"sentence {i}: {len(t)} true tags but {len(p)} predicted")
    true, pred = [list(s) for s in true_tags], [list(s) for s in predicted_tags]
    report = classification_report(true, pred, output_dict=True, zero_division=0)
    scores = {
        "accuracy": float(accuracy_score(true, pred)),
        "precision_micro": float(report["micro avg"]["precision"]),
        "recall_micro": float(report["micro avg"]["recall"]),
        "f1_micro": float(report["micro avg"]["f1-score"]),
        "precision_macro": float(report["macro avg"]["precision"]),
        "recall_macro": float(report["macro avg"]["recall"]),
        "f1_macro": float(report["macro avg"]["f1-score"]),
    }
    for kind, row in report.items():
        if "avg" not in kind:
            scores[f"f1_{kind}"] = float(row["f1-score"])
    return scores
