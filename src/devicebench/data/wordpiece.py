"""A BERT-style WordPiece tokenizer built from a data set's own words, for random-weight models.

Models built with random weights have no tokenizer of their own; one made from the training text,
at data-preparation time, gives them word pieces with the statistics of the data. The vocabulary
is counted here, deterministically: the special tokens, every character of the training words
(word-initial and ``##`` continuation), then the most frequent whole words (ties alphabetical) up
to BERT's 30,522 entries. `tokenizers`' own WordPiece trainer is not used because it is not
deterministic: it breaks ties between equally frequent merges in hash order, so two runs on the
same words give different vocabularies. Tokenising is `tokenizers`' WordPiece model (greedy
longest match, as BERT): frequent words stay whole, rare ones split into pieces.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BERT_VOCAB = 30_522  # bert-base-cased's vocabulary size: the one built here never exceeds it


def build_vocabulary(texts: Iterable[Iterable[str]], vocab_size: int = BERT_VOCAB) -> list[str]:
    """Special tokens, characters, then whole words by frequency (ties alphabetical)."""
    counts = Counter(word for words in texts for word in words)
    chars = sorted({char for word in counts for char in word})
    vocab = [*SPECIAL_TOKENS, *chars, *(f"##{char}" for char in chars)]
    if len(vocab) > vocab_size:
        raise ValueError(f"the data has {len(chars)} characters: more than vocab_size allows")
    known = set(vocab)
    words = sorted((w for w in counts if w not in known), key=lambda w: (-counts[w], w))
    return vocab + words[: vocab_size - len(vocab)]


def train_wordpiece(texts: Iterable[Iterable[str]], vocab_size: int = BERT_VOCAB):
    """A cased WordPiece tokenizer (BERT pre-tokenizer, ``[CLS] … [SEP]``) for `texts`' words."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {token: i for i, token in enumerate(build_vocabulary(texts, vocab_size))}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tokenizer


def save(tokenizer, path: str | Path) -> Path:
    """Write the tokenizer's JSON (sorted keys, so equal tokenizers give equal bytes)."""
    path = Path(path)
    path.write_text(json.dumps(json.loads(tokenizer.to_str()), sort_keys=True) + "\n")
    return path


def load(path: str | Path):
    """A tokenizer saved by `save`."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))
