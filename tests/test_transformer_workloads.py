"""The transformer workloads (devicebench.workloads): models at published sizes, tiny variants that
train and infer on the CPU, the tokenizer, bad-input errors and the contract hooks."""

from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest
import torch

from devicebench.frameworks.transformer_backend import TransformerBackend
from devicebench.plan.config import ConfigError, check_config
from devicebench.workloads import cifar10_finetune, get, model_flops, specs, text_classify

MODULES = ("text_classify", "cifar10_finetune", "conll_ner", "serve_text")

# Published parameter counts (millions; ImageNet models with their 1000-class head): BERT-base
# 110, RoBERTa-base 125, DistilBERT 66, TinyBERT-4L-312 14.5, MiniLM-L12-H384 33,
# bert_uncased_L-2_H-128 4.4, ViT-B/16 86, DeiT-T/S/B 5.7/22/86, DeiT-B distilled 87,
# ConvNeXt-T/S 28/50, ConvNeXt V2-N/T 15.6/28.6, ResNet-50 25.6.
PUBLISHED_TEXT = {
    "bert-base": 110,
    "roberta-base": 125,
    "distilbert-base": 66,
    "tinybert": 14.5,
    "minilm": 33,
    "bert-tiny": 4.4,
}
PUBLISHED_IMAGE = {
    "convnext-tiny": 28,
    "convnext-small": 50,
    "convnextv2-nano": 15.6,
    "convnextv2-tiny": 28.6,
    "vit-base-patch16": 86,
    "deit-tiny": 5.7,
    "deit-small": 22,
    "deit-base": 86,
    "deit-base-distilled": 87,
    "resnet-50": 25.6,
}
# Each family shrunk to a few thousand parameters: same classes and code paths, CPU-cheap.
TINY_TEXT = {
    "bert": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
    "roberta": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
    "distilbert": {"dim": 32, "n_layers": 1, "n_heads": 2, "hidden_dim": 64},
}
TINY_IMAGE = {
    "convnext": {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 32, 64]},
    "convnextv2": {"depths": [1, 1, 1, 1], "hidden_sizes": [8, 16, 32, 64]},
    "vit": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
    "deit_distilled": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
    "resnet": {"depths": [1, 1, 1, 1], "hidden_sizes": [16, 32, 64, 128], "embedding_size": 8},
}


def _millions(model: torch.nn.Module) -> float:
    return sum(p.numel() for p in model.parameters()) / 1e6


def test_the_registry_adds_every_workload_to_the_tasks():
    for name in MODULES:
        assert get(name).spec is importlib.import_module(f"devicebench.workloads.{name}").SPEC
    assert {"seq_len", "compile"} <= set(specs()["text_classify"].axes)
    assert set(PUBLISHED_TEXT) == set(text_classify.MODELS)
    assert set(PUBLISHED_IMAGE) | {"vit-tiny"} == set(cifar10_finetune.MODELS)


@pytest.mark.parametrize("name", sorted(PUBLISHED_TEXT))
def test_text_models_have_published_sizes(name):
    with torch.device("meta"):  # shapes only: no memory, no initialisation arithmetic
        model = text_classify.build_model(name, 0)
    assert _millions(model) == pytest.approx(PUBLISHED_TEXT[name], rel=0.03)


@pytest.mark.parametrize("name", sorted(PUBLISHED_IMAGE))
def test_image_models_have_published_sizes(name):
    with torch.device("meta"):
        model = cifar10_finetune.build_model(name, 0, num_labels=1000)
    assert _millions(model) == pytest.approx(PUBLISHED_IMAGE[name], rel=0.03)


def _settings(task: str, model: str, **axes) -> dict:
    return {
        "task": task,
        "model": model,
        "framework": "torch",
        "device": "cpu",
        "precision": "fp32",
        "batch_size": 4,
        "learning_rate": 1e-3,
    } | axes


def _check_backend(backend: TransformerBackend, samples: int) -> None:
    """One training step changes the weights; inference and evaluation give one label each."""
    backend.new_model(3)
    before = [p.detach().clone() for p in backend.module.parameters()]
    backend.train_steps(1)
    after = list(backend.module.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    latencies = backend.infer_batches(2)
    assert len(latencies) == 2 and all(t > 0 for t in latencies)
    predicted, loss = backend.evaluate()
    assert predicted.shape == (samples,) and np.isfinite(loss)
    assert backend.parameter_count() == sum(p.numel() for p in backend.module.parameters())


@pytest.mark.parametrize("name", sorted(text_classify.MODELS))
def test_every_text_model_trains_and_infers_in_its_tiny_variant(name):
    family = text_classify.MODELS[name][0]
    rng = np.random.default_rng(0)
    split = {
        "input_ids": rng.integers(5, 100, size=(8, 16)),
        "attention_mask": np.ones((8, 16), dtype=np.int64),
        "labels": np.arange(8) % 2,
    }
    settings = _settings("text_classify", name, seq_len=16)

    def build(seed):
        return text_classify.build_model(name, seed, vocab_size=100, **TINY_TEXT[family])

    backend = TransformerBackend(
        text_classify.SPEC, settings, {"train": split, "test": split}, build, lambda b: b, ""
    )
    _check_backend(backend, 8)


@pytest.mark.parametrize("name", sorted(cifar10_finetune.MODELS))
def test_every_image_model_trains_and_infers_in_its_tiny_variant(name):
    family = cifar10_finetune.MODELS[name][0]
    rng = np.random.default_rng(0)
    split = {
        "images": rng.integers(0, 256, size=(8, 3, 32, 32), dtype=np.uint8),
        "labels": np.arange(8) % 10,
    }
    settings = _settings("cifar10_finetune", name)
    side = 64  # a resize on the device inside every step, as 32 -> 224 for the real models
    overrides = TINY_IMAGE[family]

    def build(seed):
        return cifar10_finetune.build_model(name, seed, side, **overrides)

    prepare = cifar10_finetune.resize_step(side)
    data = {"train": split, "test": split}
    backend = TransformerBackend(cifar10_finetune.SPEC, settings, data, build, prepare, "")
    _check_backend(backend, 8)


def test_resize_step_scales_normalizes_and_resizes_on_the_device():
    images = torch.full((2, 3, 32, 32), 255, dtype=torch.uint8)
    out = cifar10_finetune.resize_step(224)({"images": images})["pixel_values"]
    assert out.shape == (2, 3, 224, 224) and out.dtype == torch.float32
    expected = (1 - torch.tensor(cifar10_finetune.MEAN)) / torch.tensor(cifar10_finetune.STD)
    assert torch.allclose(out[0, :, 100, 100], expected)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precisions_train_under_autocast(precision):
    settings = _settings("text_classify", "bert-tiny", seq_len=8, precision=precision)
    split = {
        "input_ids": np.full((8, 8), 7),
        "attention_mask": np.ones((8, 8), dtype=np.int64),
        "labels": np.arange(8) % 2,
    }

    def build(seed):
        return text_classify.build_model("bert-tiny", seed, vocab_size=50, **TINY_TEXT["bert"])

    backend = TransformerBackend(
        text_classify.SPEC, settings, {"train": split, "test": split}, build, lambda b: b, ""
    )
    assert backend.scaler.is_enabled() == (precision == "fp16")
    _check_backend(backend, 8)


def test_tokenizer_training_is_deterministic():
    texts = [
        f"review {i} says the film was {'great' if i % 2 else 'dull'} indeed" for i in range(50)
    ]
    first = text_classify.train_tokenizer(texts, 200).to_str()
    second = text_classify.train_tokenizer(list(texts), 200).to_str()
    assert first == second
    tokenizer = text_classify.train_tokenizer(texts, 200)
    encoded = text_classify.encode(tokenizer, ["The film was great", "dull!", "dullest"], 6)
    assert encoded["input_ids"].shape == (3, 6)
    ids = [tokenizer.id_to_token(i) for i in encoded["input_ids"][0]]
    assert ids == ["[CLS]", "the", "film", "was", "great", "[SEP]"]  # lower-cased, whole words
    assert encoded["attention_mask"].tolist()[1] == [1, 1, 1, 1, 0, 0]  # [CLS] dull ! [SEP] pad
    pieces = [tokenizer.id_to_token(i) for i in encoded["input_ids"][2]]
    assert pieces == ["[CLS]", "dull", "##e", "##s", "##t", "[SEP]"]  # unseen word: word pieces


def test_prepared_tokenizer_and_data_are_the_same_on_every_preparation(tmp_path):
    from devicebench.data import prepare_dataset

    paths = []
    for name in ("a", "b"):
        manifest = prepare_dataset("imdb", "synthetic", tmp_path / name, train_samples=40,
                                   test_samples=8, seed=5)  # fmt: skip
        paths.append(text_classify.prepare_data(manifest.parent))
    assert paths[0].read_bytes() == paths[1].read_bytes()
    data = text_classify.load_data(
        {"data": str(tmp_path / "a" / "manifest.json"), "seq_len": 32, "train_samples": 16}
    )
    assert data.splits["train"]["input_ids"].shape == (16, 32)
    assert data.y_test.shape == (8,) and data.synthetic
    assert set(np.unique(data.splits["train"]["labels"])) == {0, 1}


def _config(tiny_config: dict, task: str, **settings) -> dict:
    config = copy.deepcopy(tiny_config)
    config["tasks"] = {task: settings}
    return config


@pytest.mark.parametrize(
    ("task", "settings", "message"),
    [
        ("text_classify", {"models": ["gpt-17"]}, "unknown model 'gpt-17'"),
        ("text_classify", {"seq_lens": [128, 1024]}, "tasks.text_classify.seq_lens[1]: 1024"),
        ("cifar10_finetune", {"models": ["deit-tiny"], "image_sizes": [230]}, "16-pixel patch"),
        ("cifar10_finetune", {"compiles": ["jit"]}, "compiles[0]"),
        ("mnist_mlp", {"seq_lens": [128]}, "has no seq_len axis"),
    ],
)
def test_bad_transformer_settings_fail_at_config_check(tiny_config, task, settings, message):
    with pytest.raises(ConfigError) as error:
        check_config(_config(tiny_config, task, **settings))
    assert message in str(error.value)


def test_keras_cells_without_a_port_are_skipped_with_a_reason():
    # cifar10_finetune's ConvNeXt-T/S and ResNet-50 have Keras ports (tests/test_keras_image.py)
    for name in MODULES:
        model = get(name).spec.models[-1]
        reason = get(name).skip_reason({"framework": "keras-torch", "model": model})
        assert "no Keras port" in reason and "keras-hub" in reason
        assert get(name).skip_reason({"framework": "torch", "model": model}) is None


def test_flops_are_counted_at_the_cells_axes():
    short = model_flops("text_classify", "bert-tiny", {"seq_len": 64})
    long = model_flops("text_classify", "bert-tiny", {"seq_len": "128"})  # --axis gives text
    assert 2 < short["flops_per_sample_train"] / short["flops_per_sample_infer"] < 4
    assert 1.9 < long["flops_per_sample_infer"] / short["flops_per_sample_infer"] < 2.5
    image = model_flops("cifar10_finetune", "vit-tiny", {"image_size": "native"})
    assert image["flops_per_sample_infer"] > 0
