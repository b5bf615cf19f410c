"""conll_ner: every tiny model builds, trains a step and infers on the CPU; data, axes, FLOPs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from devicebench.data import conll, prepare_dataset
from devicebench.workloads import conll_ner
from devicebench.workloads.conll_ner import models as ner_models

BASE = {"framework": "torch", "device": "cpu", "precision": "fp32", "seed": 3, "batch_size": 8}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    out = tmp_path_factory.mktemp("conll")
    return prepare_dataset("conll2003", "synthetic", out, train_samples=48, test_samples=16, seed=5)


def _settings(manifest, model, **axes):
    return BASE | {"model": model, "data": str(manifest), "learning_rate": 0.003} | axes


@pytest.mark.parametrize(
    ("model", "embedding"),
    [
        ("bert_tokencls_tiny", "live"),
        ("bilstm_cnn_bert_tiny", "live"),
        ("bilstm_cnn_bert_tiny", "cached"),
    ],
)
def test_tiny_model_trains_a_step_and_infers(manifest, model, embedding):
    torch.set_num_threads(1)
    settings = _settings(manifest, model, embedding=embedding)
    data = conll_ner.load_data(settings)
    backend = conll_ner.make_backend(conll_ner.SPEC, settings, data)
    backend.new_model(1)
    before = [p.detach().clone() for p in backend.model.parameters()]
    backend.train_steps(1)
    changed = [
        not torch.equal(a, b) for a, b in zip(before, backend.model.parameters(), strict=True)
    ]
    assert any(changed)
    assert backend.parameter_count() == sum(p.numel() for p in backend.model.parameters())
    latencies = backend.infer_batches(2)
    assert len(latencies) == 2 and all(t > 0 for t in latencies)
    predicted, loss = backend.evaluate()
    assert predicted.shape[0] == 16 and np.isfinite(loss)
    quality = conll_ner.quality(data, predicted, loss)
    for key in ("accuracy", "f1_micro", "f1_macro", "precision_micro", "recall_micro"):
        assert 0.0 <= quality[key] <= 1.0, key


def test_cached_embeddings_equal_the_live_ones(manifest):
    live = conll_ner.make_backend(
        conll_ner.SPEC,
        s := _settings(manifest, "bilstm_cnn_bert_tiny"),
        data := conll_ner.load_data(s),
    )
    cached = conll_ner.make_backend(
        conll_ner.SPEC, _settings(manifest, "bilstm_cnn_bert_tiny", embedding="cached"), data
    )
    index = torch.arange(4)
    batch = live._batch(live.train, index, index)
    words = batch["words"]
    torch.testing.assert_close(
        live.encoder(*batch["pieces"]), cached.train.cache[index, :words], rtol=1e-4, atol=1e-5
    )
    assert cached.model_info["embedding_cache_s"] > 0


def test_train_fraction_keeps_a_seeded_subset(manifest):
    half = conll_ner.load_data(_settings(manifest, "bilstm_cnn_bert_tiny", train_fraction=0.5))
    again = conll_ner.load_data(_settings(manifest, "bilstm_cnn_bert_tiny", train_fraction=0.5))
    full = conll_ner.load_data(_settings(manifest, "bilstm_cnn_bert_tiny", train_fraction=1.0))
    assert len(half.train) == 24 and len(full.train) == 48
    assert np.array_equal(half.train.input_ids, again.train.input_ids)
    assert len(half.test) == len(full.test) == 16  # the test set never shrinks


def test_word_pieces_label_the_first_piece_only(manifest):
    data = conll_ner.load_data(_settings(manifest, "bert_tokencls_tiny"))
    arrays = data.train
    labelled = (arrays.token_labels != -100).sum(axis=1)
    assert np.array_equal(labelled, arrays.words)  # one label per word, on its first piece
    rows = np.arange(len(arrays))[:, None]
    at_starts = arrays.token_labels[rows, arrays.word_start]
    scored = np.arange(arrays.word_start.shape[1])[None, :] < arrays.words[:, None]
    assert np.array_equal(at_starts[scored], arrays.word_labels[scored])


def test_full_size_models_have_the_published_parameter_counts():
    config = ner_models.bert_config("base", 30_522, len(conll.LABELS))
    with torch.device("meta"):
        classifier = ner_models.BertTokenClassifier(config)
        encoder = ner_models.FrozenBertEmbeddings(config)
    count = sum(p.numel() for p in classifier.parameters())
    assert 108e6 < count < 111e6  # BERT-base, about 110 M (no pooler here)
    assert sum(p.numel() for p in encoder.parameters()) == count - (768 * 9 + 9)


def test_skip_reasons_name_why():
    keras = conll_ner.skip_reason(
        {"framework": "keras-torch", "model": "bilstm_cnn_bert", "embedding": "live"}
    )
    assert "keras.applications has no BERT architecture" in keras and "keras-hub" in keras
    cached_bert = conll_ner.skip_reason(
        {"framework": "torch", "model": "bert_tokencls", "embedding": "cached"}
    )
    assert "applies to bilstm_cnn_bert only" in cached_bert
    assert conll_ner.skip_reason({"framework": "torch", "model": "bilstm_cnn_bert"}) is None


def test_flops_follow_the_embedding_axis():
    def flops(model, embedding, mode):
        return conll_ner.flops_per_sample({"model": model, "embedding": embedding}, mode)

    live = flops("bilstm_cnn_bert_tiny", "live", "train")
    cached = flops("bilstm_cnn_bert_tiny", "cached", "train")
    bert_train = flops("bert_tokencls_tiny", "live", "train")
    bert_infer = flops("bert_tokencls_tiny", "live", "infer")
    assert bert_train == pytest.approx(3 * bert_infer, rel=0.05)  # backward = 2 x forward
    # A live step adds the frozen BERT's forward (no backward): BertForTokenClassification's
    # forward less its classifier (768 -> 9 per piece, 24 pieces; tiny: 128 -> 9).
    head = 2 * 128 * 9 * conll_ner.FLOP_PIECES
    assert live - cached == pytest.approx(bert_infer - head, rel=1e-6)


def test_a_malformed_file_stops_preparation_naming_file_and_line(tmp_path):
    source = tmp_path / "conll"
    source.mkdir()
    good = "-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n"
    for name in ("eng.train", "eng.testb"):
        (source / name).write_text(good)
    (source / "eng.testa").write_text(good + "\nGerman JJ\n")
    with pytest.raises(conll.ConllFormatError, match=r"eng\.testa, line 6: expected 4"):
        prepare_dataset("conll2003", "path", tmp_path / "out", path=source)


def test_the_study_plans_both_models_at_the_originals_settings():
    from conftest import REPO

    from devicebench.plan.config import load_config
    from devicebench.plan.grid import expand_grid

    cells = [
        c.run_settings()
        for c in expand_grid(load_config(REPO / "config" / "study.yaml"))
        if c.values["task"] == "conll_ner" and c.values["framework"] == "torch"
    ]
    planned = {(c["model"], c["embedding"]) for c in cells}
    assert planned == {("bilstm_cnn_bert", "live"), ("bilstm_cnn_bert", "cached"),
                       ("bert_tokencls", "live")}  # fmt: skip
    assert {c["batch_size"] for c in cells} == {32, 64, 256, 512, 1024, 2048}
    assert {c["train_fraction"] for c in cells} == {0.1, 0.5, 1.0}
    assert {c["epochs"] for c in cells} == {10} and {c["learning_rate"] for c in cells} == {0.003}
    assert {c["device"] for c in cells} == {"cpu", "cuda"}
    # every planned cell has at least one full batch of training sentences
    assert all(c["train_fraction"] * 14_041 >= c["batch_size"] for c in cells)
