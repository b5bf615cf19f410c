"""SmolLM2's GGUF converted once into transformers' own files: the same weights and tokens as
the GGUF read directly, converted once per GGUF (keyed by its SHA-256), never half-written."""

from __future__ import annotations

import pytest
import torch

from devicebench.workloads import textgen_llm

MODEL = "smollm2-135m"
TEXT = "It is a truth universally acknowledged, that a single man in possession of a good fortune"


def _fresh(monkeypatch, folder) -> None:
    monkeypatch.setenv("DEVICEBENCH_CONVERTED_DIR", str(folder))
    textgen_llm.tokenizer.cache_clear()


@pytest.fixture(autouse=True)
def _forget_the_tokenizer():
    """Later tests load the tokenizer from the shared folder, not this test's tmp_path."""
    yield
    textgen_llm.tokenizer.cache_clear()


def test_the_converted_folder_gives_the_ggufs_logits_and_tokens(monkeypatch, tmp_path):
    from transformers import AutoTokenizer

    _fresh(monkeypatch, tmp_path)
    model = textgen_llm.build_model(MODEL, "cpu", "fp32", seed=0)
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith(f"{MODEL}-") and (folder / "model.safetensors").exists()
    assert not list(tmp_path.glob("*.tmp")), "the work folder was renamed, not left behind"
    direct = textgen_llm._from_gguf(MODEL).eval()
    path = textgen_llm.gguf_path(MODEL)
    ids = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)(TEXT).input_ids
    assert textgen_llm.tokenizer(MODEL)(TEXT).input_ids == ids
    with torch.no_grad():
        ours, theirs = (m(torch.tensor([ids])).logits for m in (model, direct))
    assert torch.equal(ours, theirs)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    # a later cell finds the folder: nothing is converted again
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    _fresh(monkeypatch, tmp_path)
    assert textgen_llm.converted(MODEL) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert textgen_llm.model_config(MODEL).vocab_size == model.config.vocab_size
