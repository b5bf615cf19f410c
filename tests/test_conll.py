"""The CoNLL-2003 reader on files in the real column format, and the synthetic source."""

from __future__ import annotations

import pytest

from devicebench.data import conll, wordpiece

REAL_FORMAT = """-DOCSTART- -X- -X- O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP I-NP I-LOC
1996-08-22 CD I-NP O
"""


def test_reader_parses_documents_sentences_and_tags(tmp_path):
    path = tmp_path / "eng.train"
    path.write_text(REAL_FORMAT)
    sentences = conll.read_conll(path)
    assert [s.words for s in sentences] == [
        ("EU", "rejects", "German", "call", "."),
        ("Peter", "Blackburn"),
        ("BRUSSELS", "1996-08-22"),
    ]
    assert sentences[0].tags == ("I-ORG", "O", "I-MISC", "O", "O")
    assert sentences[2].tags == ("I-LOC", "O")


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "eng.testa"
    lines = REAL_FORMAT.splitlines()
    lines[7] = "Peter NNP I-PER"  # line 8: three columns
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(conll.ConllFormatError, match=r"eng\.testa, line 8: expected 4 .*got 3"):
        conll.read_conll(path)


def test_unknown_tag_names_file_and_line(tmp_path):
    path = tmp_path / "eng.testb"
    path.write_text(REAL_FORMAT.replace("call NN I-NP O", "call NN I-NP B-FOO"))
    with pytest.raises(conll.ConllFormatError, match=r"eng\.testb, line 6: unknown NER tag"):
        conll.read_conll(path)


def test_find_file_accepts_both_namings(tmp_path):
    (tmp_path / "valid.txt").write_text(REAL_FORMAT)
    assert conll.find_file(tmp_path, "testa").name == "valid.txt"
    with pytest.raises(FileNotFoundError, match="eng.train or train.txt"):
        conll.find_file(tmp_path, "train")


def test_synthetic_files_round_trip_and_are_deterministic(tmp_path):
    sizes = {"train": 40, "testa": 10, "testb": 10}
    first = conll.write_synthetic(tmp_path / "a", seed=7, sizes=sizes)
    second = conll.write_synthetic(tmp_path / "b", seed=7, sizes=sizes)
    other = conll.write_synthetic(tmp_path / "c", seed=8, sizes=sizes)
    assert first["train"].read_bytes() == second["train"].read_bytes()
    assert first["train"].read_bytes() != other["train"].read_bytes()
    train = conll.read_conll(first["train"])
    assert len(train) == 40
    tags = {tag for s in train for tag in s.tags}
    assert {"B-PER", "B-LOC", "B-ORG", "B-MISC"} <= tags
    assert first["train"].read_text().startswith("-DOCSTART- -X- -X- O\n\n")


def test_tokenizer_training_is_deterministic(tmp_path):
    sentences = conll.read_conll(
        conll.write_synthetic(tmp_path, 3, {"train": 50, "testa": 1, "testb": 1})["train"]
    )
    words = [s.words for s in sentences]
    a = wordpiece.save(wordpiece.train_wordpiece(words), tmp_path / "a.json")
    b = wordpiece.save(wordpiece.train_wordpiece(words), tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    encoded = wordpiece.load(a).encode(list(words[0]), is_pretokenized=True)
    assert encoded.tokens[0] == "[CLS]" and encoded.tokens[-1] == "[SEP]"
    assert encoded.word_ids[1] == 0
    # a word never seen in training splits into known pieces, all mapped to that word
    # (greedy longest match: the known word first, then one piece per character)
    known = words[0][1]
    unseen = wordpiece.load(a).encode([known + known], is_pretokenized=True)
    assert unseen.tokens[1:-1] == [known, *(f"##{char}" for char in known)]
    assert unseen.word_ids[1:-1] == [0] * (1 + len(known))
