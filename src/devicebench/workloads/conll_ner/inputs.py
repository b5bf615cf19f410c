"""CoNLL sentences as the arrays NER models read: word pieces, word starts, characters, labels.

Done once, before any timing, in NumPy. Word-piece alignment follows BERT's NER recipe: a word's
label sits on its first piece and every other piece is ignored (-100). A sentence longer than
`max_len` pieces is cut; its words that lose their first piece are not scored by the model and
count as predicted ``O`` (so cutting costs recall rather than hiding words from the metric).
Per-sentence lengths stay on the host, so each batch can be trimmed to its longest sentence
without reading anything back from the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from devicebench.data.conll import LABEL_IDS, LABELS, Sentence

IGNORE = -100
PAD_CHAR, UNKNOWN_CHAR = 0, 1


@dataclass
class NerArrays:
    """One split; N sentences, L pieces, W words, C characters per word."""

    input_ids: np.ndarray  # [N, L] int64, [CLS] … [SEP] then [PAD] (id 0)
    attention_mask: np.ndarray  # [N, L] int64
    token_labels: np.ndarray  # [N, L] int64: the label on each word's first piece, else -100
    word_start: np.ndarray  # [N, W] int64: position of each word's first piece (0 if none)
    chars: np.ndarray  # [N, W, C] int64 character ids
    word_labels: np.ndarray  # [N, W] int64: labels of scored words, else -100
    pieces: np.ndarray  # [N] pieces of each sentence, [CLS] and [SEP] included
    words: np.ndarray  # [N] words of each sentence the model scores (first piece kept)

    def __len__(self) -> int:
        return len(self.input_ids)


def char_vocabulary(sentences: list[Sentence]) -> dict[str, int]:
    """Character ids of the training words (sorted); 0 pads and 1 is an unseen character."""
    chars = sorted({c for s in sentences for w in s.words for c in w})
    return {c: i + 2 for i, c in enumerate(chars)}


def encode(
    sentences: list[Sentence],
    tokenizer,
    chars: dict[str, int],
    *,
    max_len: int,
    max_chars: int,
) -> NerArrays:
    """Arrays of `sentences`, padded to their longest sentence (at most `max_len` pieces)."""
    sep = tokenizer.token_to_id("[SEP]")
    encoded = tokenizer.encode_batch([list(s.words) for s in sentences], is_pretokenized=True)
    rows = []
    for sentence, enc in zip(sentences, encoded, strict=True):
        ids, word_ids = list(enc.ids), list(enc.word_ids)
        if len(ids) > max_len:  # cut, keeping the closing [SEP]
            ids, word_ids = ids[: max_len - 1] + [sep], word_ids[: max_len - 1] + [None]
        starts: dict[int, int] = {}
        for position, word in enumerate(word_ids):
            if word is not None and word not in starts:
                starts[word] = position
        rows.append((sentence, ids, starts))
    n = len(rows)
    length = max(len(ids) for _, ids, _ in rows)
    width = max(len(starts) for _, _, starts in rows)
    longest = max(len(w) for s in sentences for w in s.words)
    c = min(max_chars, longest)
    out = NerArrays(
        input_ids=np.zeros((n, length), np.int64),
        attention_mask=np.zeros((n, length), np.int64),
        token_labels=np.full((n, length), IGNORE, np.int64),
        word_start=np.zeros((n, width), np.int64),
        chars=np.zeros((n, width, c), np.int64),
        word_labels=np.full((n, width), IGNORE, np.int64),
        pieces=np.zeros(n, np.int64),
        words=np.zeros(n, np.int64),
    )
    for i, (sentence, ids, starts) in enumerate(rows):
        out.input_ids[i, : len(ids)] = ids
        out.attention_mask[i, : len(ids)] = 1
        out.pieces[i], out.words[i] = len(ids), len(starts)
        for word, position in starts.items():  # words in order; the kept ones come first
            label = LABEL_IDS[sentence.tags[word]]
            out.token_labels[i, position] = label
            out.word_start[i, word] = position
            out.word_labels[i, word] = label
            text = sentence.words[word][:c]
            out.chars[i, word, : len(text)] = [chars.get(ch, UNKNOWN_CHAR) for ch in text]
    return out


def decode(predicted: np.ndarray, arrays: NerArrays, sentences: list[Sentence]) -> list[list[str]]:
    """Tags per word from word-level label ids [N, W]; words the model did not see get ``O``."""
    tags = []
    for i, sentence in enumerate(sentences):
        scored = [LABELS[int(k)] for k in predicted[i, : arrays.words[i]]]
        tags.append(scored + ["O"] * (len(sentence.words) - len(scored)))
    return tags
