"""FLOPs right for every model: train about 3x infer everywhere, depthwise convolution by hand.

Counted on the CPU at a short sequence (16 tokens) and a small image (32 px): the ratio of
training to inference FLOPs does not depend on those sizes, and the full-size models stay quick.
"""

from __future__ import annotations

import pytest
import torch

from devicebench.measure.flop_formulas import VERSION, flop_counter, needs_recount
from devicebench.workloads import model_flops, specs

SMALL = {"seq_len": 16, "image_size": 32, "embedding": "cached"}
TINY = ("mlp", "cnn", "fasttext", "bilstm", "lstm", "bert-tiny", "vit-tiny", "tinybert")
MODELS = [
    pytest.param(
        task,
        model,
        marks=() if model in TINY or model.endswith("_tiny") else pytest.mark.slow,
        id=f"{task}-{model}",
    )
    for task, spec in specs().items()
    if "train" in spec.modes  # served and generating models never train
    for model in spec.models
    if model != "mlp"  # its first layer dominates and has no input gradient: by hand below
]


def ratio(task: str, model: str, settings: dict) -> float:
    counts = model_flops(task, model, settings)
    return counts["flops_per_sample_train"] / counts["flops_per_sample_infer"]


@pytest.mark.parametrize(("task", "model"), MODELS)
def test_training_costs_about_three_forward_passes(task, model):
    assert 2.5 <= ratio(task, model, SMALL) <= 3.5


def test_the_mlp_ratio_by_hand():
    # forward F; backward 2F less the first layer's input gradient (the input needs none)
    forward = 2 * (784 * 512 + 512 * 512 + 512 * 10)
    counts = model_flops("mnist_mlp", "mlp")
    assert counts["flops_per_sample_infer"] == forward
    assert counts["flops_per_sample_train"] == 3 * forward - 2 * 784 * 512


def test_live_bert_features_add_their_forward_to_both_modes():
    # bilstm_cnn_bert trains a tagger over a frozen BERT: live, BERT's forward is in both counts,
    # so train - infer is the tagger's backward alone, as with cached embeddings
    cached = model_flops("conll_ner", "bilstm_cnn_bert_tiny", SMALL)
    live = model_flops("conll_ner", "bilstm_cnn_bert_tiny", SMALL | {"embedding": "live"})
    backward = cached["flops_per_sample_train"] - cached["flops_per_sample_infer"]
    assert live["flops_per_sample_train"] - live["flops_per_sample_infer"] == pytest.approx(
        backward
    )
    assert live["flops_per_sample_infer"] > 2 * cached["flops_per_sample_infer"]


def test_one_depthwise_convolution_by_hand():
    channels, side, kernel, batch = 8, 10, 7, 2
    conv = torch.nn.Conv2d(channels, channels, kernel, padding=3, groups=channels, bias=False)
    x = torch.randn(batch, channels, side, side, requires_grad=True)
    # each output element: one 7x7 window of its own channel, a multiply-add = 2 FLOPs
    forward = 2 * batch * channels * side * side * kernel * kernel
    with flop_counter() as counter:
        conv(x)
    assert counter.get_total_flops() == forward
    with flop_counter() as counter:
        conv(x).sum().backward()
    # input gradient and weight gradient each cost one forward (torch alone counted the weight
    # gradient `channels` times: 8x here, 96x to 768x in ConvNeXt)
    assert counter.get_total_flops() == 3 * forward


def test_records_counted_before_the_fix_are_recounted_when_they_show_its_error():
    old_convnext = {"flops_per_sample_train": 8.7e9, "flops_per_sample_infer": 1e9}
    assert needs_recount(old_convnext)
    assert not needs_recount(old_convnext | {"flop_formulas": VERSION})
    assert not needs_recount({"flops_per_sample_train": 3e9, "flops_per_sample_infer": 1e9})
    assert not needs_recount({"flops_per_sample_train": None})
