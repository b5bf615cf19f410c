"""The conll_ner models in torch, built from configurations with random weights (no download), or
around a pretrained BERT that backend.py loads (``weights: pretrained``).

``bert_tokencls``: transformers' BertForTokenClassification, the whole model fine-tuned.
``bilstm_cnn_bert``: Spark NLP's NerDL architecture: each word's BERT embedding (its first word
piece's last hidden state, from a frozen BERT) joined with a char-CNN feature of its spelling
(25-dim character embeddings, 25 filters of width 3, max over the word), then a BiLSTM of 128 units
per direction and a softmax over the tags, dropout 0.5 (NerDL's defaults). The ``_tiny`` variants
use a 2-layer, 128-hidden BERT for quick runs and tests; the others BERT-base.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

BERT_SIZES = {
    "base": {  # bert-base-cased: 12 layers, 768 hidden, 12 heads
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
    "tiny": {  # as google/bert_uncased_L-2_H-128_A-2
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 512,
    },
}


def bert_config(size: str, vocab_size: int, num_labels: int, max_positions: int = 512):
    """A BertConfig of the named size (random weights are built from it)."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        max_position_embeddings=max_positions,
        num_labels=num_labels,
        **BERT_SIZES[size],
    )


class BertTokenClassifier(nn.Module):
    """BertForTokenClassification returning logits [B, L, labels]."""

    def __init__(self, config, bert: nn.Module | None = None) -> None:
        super().__init__()
        from transformers import BertForTokenClassification

        self.bert = bert if bert is not None else BertForTokenClassification(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).logits


class FrozenBertEmbeddings(nn.Module):
    """Word embeddings from a BERT that is never trained: each word's first piece's last state."""

    def __init__(self, config, bert: nn.Module | None = None) -> None:
        super().__init__()
        from transformers import BertModel

        self.bert = bert if bert is not None else BertModel(config, add_pooling_layer=False)
        self.bert.requires_grad_(False)
        self.bert.eval()

    def train(self, mode: bool = True) -> FrozenBertEmbeddings:
        return super().train(False)  # no dropout: the embeddings are a fixed function

    @torch.no_grad()
    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_start: torch.Tensor
    ) -> torch.Tensor:
        states = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        index = word_start.unsqueeze(-1).expand(-1, -1, states.shape[-1])
        return states.gather(1, index)  # [B, W, H]


class BiLstmCnnTagger(nn.Module):
    """NerDL's tagger over given word embeddings: char-CNN + BiLSTM + softmax."""

    def __init__(
        self,
        embedding_dim: int,
        num_chars: int,
        num_labels: int,
        char_dim: int = 25,
        char_filters: int = 25,
        char_width: int = 3,
        lstm_units: int = 128,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.char_embedding = nn.Embedding(num_chars, char_dim, padding_idx=0)
        self.char_conv = nn.Conv1d(char_dim, char_filters, char_width, padding=char_width // 2)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(
            embedding_dim + char_filters, lstm_units, batch_first=True, bidirectional=True
        )
        self.out = nn.Linear(2 * lstm_units, num_labels)

    def forward(
        self, words: torch.Tensor, chars: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        """Logits [B, W, labels] from embeddings [B, W, H], chars [B, W, C], lengths (host)."""
        b, w, c = chars.shape
        spelled = self.char_embedding(chars.reshape(b * w, c)).transpose(1, 2)
        spelling = self.char_conv(spelled).amax(dim=2).reshape(b, w, -1)
        x = self.dropout(torch.cat([words.to(spelling.dtype), spelling], dim=-1))
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        states, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True, total_length=w)
        return self.out(self.dropout(states))


def build_tagger(config, num_chars: int, num_labels: int) -> BiLstmCnnTagger:
    return BiLstmCnnTagger(config.hidden_size, num_chars, num_labels)
