"""Entity-level NER scores against answers worked out by hand."""

from __future__ import annotations

import pytest

from devicebench.workloads.conll_ner.metrics import entity_scores


def test_known_answer_micro_macro_and_token_accuracy():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O", "B-MISC"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O", "O"]]
    # True entities: PER(s1 0-1), LOC(s1 3), ORG(s2 0), MISC(s2 2) = 4.
    # Predicted: PER(s1 0-1), ORG(s1 3), ORG(s2 0) = 3; matching exactly: PER, ORG(s2) = 2.
    # micro: P = 2/3, R = 2/4, F1 = 2PR/(P+R) = 4/7.
    # per type: PER P=R=F=1; LOC P=0 R=0 F=0; ORG P=1/2 R=1 F=2/3; MISC P=R=F=0.
    # macro: P = 1.5/4, R = 2/4, F1 = (1 + 2/3)/4 = 5/12. Tokens right: 5 of 7.
    scores = entity_scores(true, pred)
    assert scores["precision_micro"] == pytest.approx(2 / 3)
    assert scores["recall_micro"] == pytest.approx(0.5)
    assert scores["f1_micro"] == pytest.approx(4 / 7)
    assert scores["precision_macro"] == pytest.approx(0.375)
    assert scores["recall_macro"] == pytest.approx(0.5)
    assert scores["f1_macro"] == pytest.approx(5 / 12)
    assert scores["f1_ORG"] == pytest.approx(2 / 3)
    assert scores["f1_LOC"] == 0.0
    assert scores["accuracy"] == pytest.approx(5 / 7)


def test_a_partial_span_is_no_match():
    # The predicted PER covers one of the two words: no entity matches, half the tokens do.
    scores = entity_scores([["B-PER", "I-PER"]], [["B-PER", "O"]])
    assert scores["f1_micro"] == 0.0
    assert scores["accuracy"] == pytest.approx(0.5)


def test_iob1_and_iob2_spans_score_alike():
    # IOB1 (original CoNLL-2003 files) starts an entity with I-; it is the same span as IOB2's.
    assert entity_scores([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])["f1_micro"] == 1.0


def test_mismatched_lengths_are_an_error():
    with pytest.raises(ValueError, match="sentence 0: 2 true tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
