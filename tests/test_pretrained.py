"""`weights: pretrained`: a local checkpoint (a save_pretrained folder or a cached hub id) and its
own tokenizer replace the random weights; a missing one is a config error before any cell."""

from __future__ import annotations

import copy
import json
import shlex
import shutil
import subprocess
import sys

import pytest
import torch
from conftest import REPO

from devicebench.config import ConfigError, check_config
from devicebench.data import prepare_dataset
from devicebench.frameworks import pretrained
from devicebench.grid import expand_grid
from devicebench.workloads import cifar10_finetune, text_classify

# A vocabulary unlike the WordPiece trained at data preparation ([CLS] is 2 there, 7 here), so
# the token ids show which tokenizer encoded the reviews.
WORDS = ["the", "a", "film", "movie", "was", "is", "great", "good", "bad", "dull", "and"]
VOCAB = ["[PAD]", "[UNK]", "x", "y", "z", "[SEP]", "[MASK]", "[CLS]", *WORDS]
VOCAB += [c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + [f"##{c}" for c in "abcdefghij"]


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """A 2-layer, 128-hidden BERT with a 3-label head and its tokenizer, saved as a user would."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(11)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=512,
        num_labels=3,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(vocab={t: i for i, t in enumerate(VOCAB)}).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def imdb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("imdb")
    return prepare_dataset("imdb", "synthetic", folder, train_samples=32, test_samples=8, seed=5)


def _config(tiny_config: dict, task: str = "text_classify", **settings) -> dict:
    config = copy.deepcopy(tiny_config)
    config["tasks"] = {task: settings}
    config["devices"] = {"cpu": {"threads": [1]}}
    return config


def _text(tiny_config: dict, source, **more) -> dict:
    settings = {"models": ["bert-tiny"], "batch_sizes": [4], "epochs": 1, "steps_per_epoch": 2}
    settings |= {"seq_lens": [16], "weights": "pretrained", "pretrained": {"bert-tiny": source}}
    settings |= {"precisions": ["fp32"], "engines": ["inprocess"]}  # not the quick config's
    return _config(tiny_config, **(settings | more))


def test_a_text_classify_cell_trains_from_the_saved_folder(
    tiny_config, bert_folder, imdb, tmp_path
):
    """The cell runs as Snakemake runs it: scripts/run_cell.py with the grid's flags."""
    cells = expand_grid(check_config(_text(tiny_config, str(bert_folder))))
    cell = next(c for c in cells if c.values["mode"] == "train")
    assert cell.run_settings()["pretrained"] == str(bert_folder)
    assert "/weights~pretrained/" in cell.cell_id  # an axis: tables tell these cells apart
    out = tmp_path / "cell.json"
    script = [sys.executable, str(REPO / "scripts" / "run_cell.py"), *shlex.split(cell.cli_args())]
    subprocess.run([*script, "--data", str(imdb), "--out", str(out)], check=True, timeout=600)
    record = json.loads(out.read_text())
    assert record["status"] == "ok", record["message"]
    assert record["cell_id"] == cell.cell_id and record["axes"]["weights"] == "pretrained"
    model = record["model"]
    assert model["weights"] == str(bert_folder)
    assert model["weights_folder"] == str(bert_folder.resolve())
    assert "ignore_mismatched_sizes=True" in model["weights_loaded_with"]
    # the checkpoint's 3-label head does not fit the 2 classes: only it is built afresh
    assert model["weights_newly_initialised"] == ["classifier.bias", "classifier.weight"]
    assert model["parameters"] == 4_386_178 - 30522 * 128 + len(VOCAB) * 128  # its own vocab
    assert model["flops_per_sample_train"] > model["flops_per_sample_infer"] > 0


def test_the_backend_holds_the_saved_weights_and_the_checkpoints_tokenizer(bert_folder, imdb):
    settings = {
        "task": "text_classify",
        "model": "bert-tiny",
        "framework": "torch",
        "device": "cpu",
        "precision": "fp32",
        "batch_size": 4,
        "learning_rate": 1e-3,
        "seq_len": 16,
        "data": str(imdb),
        "weights": "pretrained",
        "pretrained": str(bert_folder),
    }
    data = text_classify.load_data(settings)
    ids = data.splits["train"]["input_ids"]
    assert (ids[:, 0] == VOCAB.index("[CLS]")).all() and ids.max() < len(VOCAB)
    random_ids = text_classify.load_data(settings | {"weights": "random"}).splits["train"]
    assert (random_ids["input_ids"][:, 0] == text_classify.SPECIALS.index("[CLS]")).all()

    backend = text_classify.make_backend(text_classify.SPEC, settings, data)
    saved = {k: v for k, v in saved_state_of(bert_folder).items() if "classifier" not in k}
    heads = []
    for seed in (1, 2):
        backend.new_model(seed)
        state = backend.module.model.state_dict()
        for key, tensor in saved.items():
            assert torch.equal(state[key], tensor), key
        assert state["classifier.weight"].shape == (2, 128)
        heads.append(state["classifier.weight"].clone())
    assert not torch.equal(*heads)  # the new head comes from each repetition's seed
    backend.new_model(1)
    assert torch.equal(backend.module.model.classifier.weight, heads[0])  # and only from it
    backend.train_steps(1)
    assert not torch.equal(
        backend.module.model.bert.pooler.dense.weight, saved["bert.pooler.dense.weight"]
    )
    predicted, loss = backend.evaluate()
    assert predicted.shape == (8,) and loss > 0


def saved_state_of(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def test_a_missing_folder_is_a_config_error_naming_the_model(tiny_config, tmp_path):
    missing = tmp_path / "no-such-folder"
    with pytest.raises(ConfigError) as error:
        check_config(_text(tiny_config, str(missing)))
    message = str(error.value)
    assert message.startswith("config key tasks.text_classify.pretrained.bert-tiny:")
    assert "no pretrained weights for bert-tiny" in message and str(missing) in message
    assert "save_pretrained" in message and "hf download" in message


def test_an_uncached_hub_id_is_a_config_error_and_nothing_is_downloaded(
    tiny_config, tmp_path, monkeypatch
):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ConfigError) as error:
        check_config(_text(tiny_config, "devicebench/no-such-bert"))
    message = str(error.value)
    assert "bert-tiny" in message and "`hf download devicebench/no-such-bert`" in message
    assert str(tmp_path / "hub") in message
    assert not (tmp_path / "hub").exists() or not any((tmp_path / "hub").rglob("*.json"))


def test_a_hub_id_in_the_local_cache_is_found_offline(
    tiny_config, bert_folder, tmp_path, monkeypatch
):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    repo = cache / "models--devicebench--tiny-bert"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(bert_folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    cells = expand_grid(check_config(_text(tiny_config, "devicebench/tiny-bert")))
    assert {c.run_settings()["pretrained"] for c in cells} == {"devicebench/tiny-bert"}
    found = pretrained.locate("bert-tiny", "devicebench/tiny-bert", tokenizer=True)
    assert found == (repo / "snapshots" / commit).resolve()


def test_a_folder_without_a_tokenizer_or_config_is_an_error(tiny_config, bert_folder, tmp_path):
    weights_only = tmp_path / "weights-only"
    weights_only.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(bert_folder / name, weights_only / name)
    with pytest.raises(ConfigError, match="bert-tiny: .* has no tokenizer"):
        check_config(_text(tiny_config, str(weights_only)))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match="has no config.json, so it is not a save_pretrained"):
        check_config(_text(tiny_config, str(empty)))


@pytest.mark.parametrize(
    ("task", "settings", "message"),
    [
        ("text_classify", {"weights": "pretrained"}, "no entry for model bert-tiny"),
        ("text_classify", {"pretrained": {"gpt-17": "x"}}, "unknown model 'gpt-17'"),
        ("mnist_mlp", {"weights": "pretrained"}, "task mnist_mlp has no pretrained weights"),
        ("text_classify", {"weights": "seeded"}, "tasks.text_classify.weights"),
    ],
)
def test_bad_weight_settings_fail_at_config_check(tiny_config, task, settings, message):
    models = {"text_classify": ["bert-tiny"]}.get(task)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        check_config(
            _config(tiny_config, task, **({"models": models} if models else {}), **settings)
        )


def test_a_seq_len_beyond_the_checkpoints_positions_fails(tiny_config, bert_folder):
    with pytest.raises(ConfigError, match=r"seq_lens\[0\]: 1024 is above bert-tiny's 512"):
        check_config(_text(tiny_config, str(bert_folder), seq_lens=[1024]))


def test_random_weights_keep_every_cells_settings_and_hash(tiny_config):
    plain = _config(tiny_config, models=["bert-tiny"], seq_lens=[16])
    explicit = _config(tiny_config, models=["bert-tiny"], seq_lens=[16], weights="random")
    first, second = (expand_grid(check_config(c)) for c in (plain, explicit))
    assert [c.config_hash() for c in first] == [c.config_hash() for c in second]
    assert all("weights" not in c.run_settings() for c in first)


def test_run_cell_by_hand_rejects_a_missing_checkpoint_before_running(tmp_path):
    out = tmp_path / "cell.json"
    command = [sys.executable, str(REPO / "scripts" / "run_cell.py"), "task=text_classify"]
    command += ["model=bert-tiny", "weights=pretrained", "--out", str(out)]
    done = subprocess.run(
        [*command, f"pretrained={tmp_path / 'nothing'}"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no pretrained weights for bert-tiny" in done.stderr
    assert not out.exists()


def test_a_cifar10_finetune_backend_loads_a_saved_vit(tiny_config, tmp_path):
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    folder = tmp_path / "tiny-vit"
    torch.manual_seed(5)
    config = ViTConfig(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        patch_size=4,
        image_size=32,
        num_labels=1000,  # an ImageNet head, as the published checkpoints have
    )
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessor(image_mean=[0.5] * 3, image_std=[0.5] * 3).save_pretrained(folder)
    source = {"vit-tiny": str(folder)}
    task = {"models": ["vit-tiny"], "weights": "pretrained", "pretrained": source}
    study = check_config(_config(tiny_config, "cifar10_finetune", **task))
    cell = expand_grid(study)[0]
    settings = cell.run_settings() | {"device": "cpu", "batch_size": 4, "learning_rate": 1e-3}
    with pytest.raises(ConfigError, match=r"pretrained vit-tiny .* takes 32 px images only"):
        check_config(_config(tiny_config, "cifar10_finetune", **task, image_sizes=[64]))

    data = prepare_dataset("cifar10", "synthetic", tmp_path / "c", train_samples=16,
                           test_samples=8, seed=1)  # fmt: skip
    from devicebench.data import load_dataset

    backend = cifar10_finetune.make_backend(cifar10_finetune.SPEC, settings, load_dataset(data))
    backend.new_model(3)
    state, saved = backend.module.model.state_dict(), saved_state_of(folder)
    assert torch.equal(state["vit.embeddings.patch_embeddings.projection.weight"],
                       saved["vit.embeddings.patch_embeddings.projection.weight"])  # fmt: skip
    assert state["classifier.weight"].shape == (10, 128)
    assert backend.model_info["normalization"] == {"mean": [0.5] * 3, "std": [0.5] * 3}
    assert backend.model_info["weights_newly_initialised"] == [
        "classifier.bias",
        "classifier.weight",
    ]
    backend.train_steps(1)
    predicted, _ = backend.evaluate()
    assert predicted.shape == (8,)


@pytest.mark.parametrize("model", ["bert_tokencls_tiny", "bilstm_cnn_bert_tiny"])
def test_conll_ner_models_are_built_around_the_saved_bert(bert_folder, model, tmp_path):
    from devicebench.workloads import conll_ner

    manifest = prepare_dataset("conll2003", "synthetic", tmp_path, train_samples=16,
                               test_samples=8, seed=5)  # fmt: skip
    settings = {"framework": "torch", "device": "cpu", "precision": "fp32", "seed": 3}
    settings |= {"batch_size": 4, "model": model, "data": str(manifest), "learning_rate": 3e-3}
    settings |= {"weights": "pretrained", "pretrained": str(bert_folder)}
    data = conll_ner.load_data(settings)
    assert (data.train.input_ids[:, 0] == VOCAB.index("[CLS]")).all()  # the checkpoint's ids
    assert data.train.input_ids.max() < len(VOCAB)
    backend = conll_ner.make_backend(conll_ner.SPEC, settings, data)
    backend.new_model(1)
    bert = backend.model.bert.bert if model == "bert_tokencls_tiny" else backend.encoder.bert
    saved = saved_state_of(bert_folder)
    for key, tensor in bert.state_dict().items():
        assert torch.equal(tensor, saved[f"bert.{key}"]), key
    fresh = backend.model_info["weights_newly_initialised"]
    assert fresh == (["classifier.bias", "classifier.weight"] if "tokencls" in model else [])
    backend.train_steps(1)
    predicted, loss = backend.evaluate()
    assert predicted.shape[0] == 8 and loss > 0


def test_conll_ner_rejects_a_checkpoint_that_is_not_a_bert(tiny_config, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "roberta"}')
    (tmp_path / "vocab.json").write_text("{}")
    task = {"models": ["bert_tokencls_tiny"], "weights": "pretrained"}
    task["pretrained"] = {"bert_tokencls_tiny": str(tmp_path)}
    with pytest.raises(ConfigError, match="holds a 'roberta' model; conll_ner's models are built"):
        check_config(_config(tiny_config, "conll_ner", **task))


def _study(tiny_config: dict, source: str) -> dict:
    config = _text(tiny_config, source)
    config["modes"] = ["train"]
    config["datasets"] = {"imdb": {"source": "synthetic", "train_samples": 32, "test_samples": 8}}
    return config


def test_snakemake_stops_before_any_job_when_a_checkpoint_is_missing(tiny_config, tmp_path):
    from workflow import snakemake, write_config

    write_config(tmp_path, _study(tiny_config, str(tmp_path / "missing-bert")))
    done = snakemake(tmp_path, "--cores", "1", "results/tables/cells.csv", check=False)
    assert done.returncode != 0
    assert "tasks.text_classify.pretrained.bert-tiny: no pretrained weights for bert-tiny" in (
        done.stdout + done.stderr
    )
    assert not (tmp_path / "results").exists()  # no data prepared, no cell run


@pytest.mark.workflow
def test_a_pretrained_cell_reaches_the_tables_with_a_weights_column(
    tiny_config, bert_folder, tmp_path
):
    import pandas as pd
    from workflow import snakemake, write_config

    write_config(tmp_path, _study(tiny_config, str(bert_folder)))
    snakemake(tmp_path, "--cores", "2", "results/tables/cells.csv")
    cells = pd.read_csv(tmp_path / "results" / "tables" / "cells.csv")
    assert list(cells.status) == ["ok"] and list(cells.weights) == ["pretrained"]
    assert (cells.flops_per_sample > 0).all()
