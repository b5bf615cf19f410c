"""`text_classify`: IMDb sentiment with BERT-family sequence classifiers (transformers, random weights).

The models are built from transformers configurations at their published sizes with random
weights (offline; speed does not depend on the weights). The tokenizer is a WordPiece trained with
`tokenizers` on the dataset's own training text when the data is prepared (deterministic, cached
next to the dataset's manifest under results/data). Each review becomes ``[CLS] tokens [SEP]``
cut to the cell's ``seq_len`` and padded, with an attention mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devicebench.tasks import TaskSpec

# name -> (transformers family, configuration keywords). Published sizes: BERT-base (Devlin et
# al. 2019), RoBERTa-base, DistilBERT-base, TinyBERT General 4L-312D, MiniLM-L12-H384, and the
# 2-layer 128-hidden BERT (google/bert_uncased_L-2_H-128_A-2) for quick runs.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "bert-base": ("bert", {}),
    "roberta-base": ("roberta", {"vocab_size": 50265, "max_position_embeddings": 514}),
    "distilbert-base": ("distilbert", {}),
    "tinybert": (
        "bert",
        {"hidden_size": 312, "num_hidden_layers": 4, "intermediate_size": 1200},
    ),
    "minilm": ("bert", {"hidden_size": 384, "intermediate_size": 1536}),
    "bert-tiny": (
        "bert",
        {
            "hidden_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 512,
        },
    ),
}

SPEC = TaskSpec(
    name="text_classify",
    dataset="imdb",
    models=tuple(MODELS),
    num_classes=2,
    epochs=3,
    batch_sizes=(32,),
    optimizer="adamw",
    learning_rate=2e-5,
    optimizer_options={"weight_decay": 0.01},
    source="BERT-family sequence classification fine-tuning (Devlin et al. 2019 GLUE recipe: "
    "AdamW 2e-5, batch 32, 3 epochs) on IMDb; random weights, WordPiece trained on the data",
    kind="sequence",
    options={"vocab_size": 30522},
    axes={"seq_len": (128, 512), "compile": ("eager", "compiled")},
)
