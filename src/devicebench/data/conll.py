"""CoNLL-2003 NER files: the real column format, read strictly, and a synthetic twin written in it.

The format: one token a line as four space-separated columns (word, POS tag, chunk tag, NER tag),
sentences separated by blank lines, documents started by a ``-DOCSTART- -X- -X- O`` line. The
English files are ``eng.train``, ``eng.testa`` (development, 3,250 sentences: the Spark NLP study
scores on it) and ``eng.testb`` (test); the ``train.txt``/``valid.txt``/``test.txt`` names of
later redistributions are accepted too. NER tags are IOB (IOB1 in the original files, IOB2 in
most copies) over PER, LOC, ORG and MISC; both read the same, and spans are scored by seqeval.

The synthetic source writes the same files, so one reader serves both: sentences from templates
whose context words mark the entity types (``<PER> said on Monday``, ``shares in <ORG> rose``),
entity names drawn from fixed lists, deterministic from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

TYPES = ("PER", "LOC", "ORG", "MISC")
LABELS = ("O", *(f"{p}-{t}" for t in TYPES for p in ("B", "I")))  # the HF conll2003 order
LABEL_IDS = {label: i for i, label in enumerate(LABELS)}
SPLITS = ("train", "testa", "testb")
# First name is what the synthetic source writes; any of them is read.
FILE_NAMES = {
    "train": ("eng.train", "train.txt"),
    "testa": ("eng.testa", "valid.txt"),
    "testb": ("eng.testb", "test.txt"),
}
SIZES = {"train": 14_041, "testa": 3_250, "testb": 3_453}  # sentences in the real files
TEST_SPLIT = "testa"  # the Spark NLP study scores on these 3,250 sentences
DOCSTART = "-DOCSTART-"


class ConllFormatError(ValueError):
    """A line that is not a CoNLL-2003 token line; the message names the file and line."""


@dataclass(frozen=True)
class Sentence:
    """One sentence: its words and their NER tags (IOB strings)."""

    words: tuple[str, ...]
    tags: tuple[str, ...]


def find_file(folder: Path, split: str) -> Path:
    """The split's file in `folder` under any of its usual names."""
    for name in FILE_NAMES[split]:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(
        f"no CoNLL-2003 {split} file in {folder} (looked for {' or '.join(FILE_NAMES[split])})"
    )


def _check_line(path: Path, number: int, line: str) -> tuple[str, str]:
    columns = line.split(" ")
    if len(columns) != 4 or not all(columns):
        raise ConllFormatError(
            f"{path}, line {number}: expected 4 space-separated columns "
            f"(word POS chunk NER), got {len(columns)}: {line!r}"
        )
    word, tag = columns[0], columns[3]
    if tag not in LABEL_IDS:
        raise ConllFormatError(
            f"{path}, line {number}: unknown NER tag {tag!r}; expected one of {', '.join(LABELS)}"
        )
    return word, tag


def read_conll(path: str | Path) -> list[Sentence]:
    """Every sentence of a CoNLL-2003 file, in file order; -DOCSTART- lines are not sentences."""
    path = Path(path)
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []

    def close() -> None:
        if words:
            sentences.append(Sentence(tuple(words), tuple(tags)))
            words.clear()
            tags.clear()

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConllFormatError(f"{path}: not UTF-8 text ({e})") from e
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n ")
        if not line.strip():
            close()
            continue
        if line.startswith(DOCSTART):
            close()
            continue
        word, tag = _check_line(path, number, line)
        words.append(word)
        tags.append(tag)
    close()
    if not sentences:
        raise ConllFormatError(f"{path}: no sentences")
    return sentences


def write_conll(path: str | Path, sentences: list[Sentence], sentences_per_doc: int = 20) -> None:
    """Write sentences in the CoNLL-2003 layout, a -DOCSTART- line every `sentences_per_doc`.

    The POS and chunk columns, which the study does not use, are written as NNP/I-NP for
    entity tokens and NN/O otherwise.
    """
    lines: list[str] = []
    for i, sentence in enumerate(sentences):
        if i % sentences_per_doc == 0:
            lines += [f"{DOCSTART} -X- -X- O", ""]
        for word, tag in zip(sentence.words, sentence.tags, strict=True):
            pos, chunk = ("NN", "O") if tag == "O" else ("NNP", "I-NP")
            lines.append(f"{word} {pos} {chunk} {tag}")
        lines.append("")
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def copy_files(folder: Path, out: Path, sums: dict[str, str]) -> dict[str, Path]:
    """Copy the three files from `folder` (either naming), checked against `sums` where given."""
    from devicebench.data.download import verify_file

    copied = {}
    for split in SPLITS:
        src = find_file(folder, split)
        if sums.get(src.name):
            verify_file(src, sums[src.name])
        copied[split] = out / FILE_NAMES[split][0]
        copied[split].write_bytes(src.read_bytes())
        read_conll(copied[split])  # a malformed line stops preparation, naming file and line
    return copied


def read_splits(paths: dict[str, Path]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(words, tags) object arrays per split: train, and test = testa (the study's test set)."""
    out = {}
    for split, role in (("train", "train"), ("test", TEST_SPLIT)):
        sentences = read_conll(paths[role])
        words = np.empty(len(sentences), dtype=object)
        tags = np.empty(len(sentences), dtype=object)
        words[:], tags[:] = [s.words for s in sentences], [s.tags for s in sentences]
        out[split] = (words, tags)
    return out


# --- the synthetic source ---------------------------------------------------------------------

# fmt: off
_NAMES = {
    "PER": (
        ("John", "Smith"), ("Maria", "Garcia"), ("Hans", "Mueller"), ("Yuki", "Tanaka"),
        ("Ahmed", "Khan"), ("Anna", "Kowalski"), ("Peter", "Jones"), ("Li", "Wei"),
        ("Carlos", "Silva"), ("Emma", "Dubois"), ("Ivan", "Petrov"), ("Sara", "Berg"),
        ("Tom", "Baker"), ("Olga", "Ivanova"), ("Marco", "Rossi"), ("Nina", "Larsen"),
    ),
    "LOC": (
        ("Berlin",), ("Paris",), ("Tokyo",), ("New", "York"), ("Cairo",), ("Lima",),
        ("Sydney",), ("Oslo",), ("Rio", "de", "Janeiro"), ("Madrid",), ("Nairobi",),
        ("South", "Africa"), ("Germany",), ("Brazil",), ("Kenya",), ("Canada",),
    ),
    "ORG": (
        ("Reuters",), ("Siemens",), ("Ajax",), ("Bayern", "Munich"), ("Red", "Cross"),
        ("United", "Nations"), ("Toyota",), ("Barclays", "Bank"), ("General", "Motors"),
        ("Real", "Madrid"), ("Shell",), ("Nokia",), ("World", "Bank"), ("Unilever",),
    ),
    "MISC": (
        ("German",), ("French",), ("Japanese",), ("World", "Cup"), ("Olympic",),
        ("Christian",), ("Euro",), ("Tour", "de", "France"), ("Nobel", "Prize"), ("Dutch",),
    ),
}
# Templates: context words carry the type; {X} is an entity of type X.
_TEMPLATES = (
    "{PER} said on {DAY} that {ORG} would open an office in {LOC} .",
    "{ORG} shares rose {NUM} percent in {LOC} on {DAY} .",
    "{PER} , a {MISC} citizen , was born in {LOC} .",
    "{ORG} beat {ORG} {NUM} - {NUM} in the {MISC} final .",
    "police in {LOC} arrested {PER} on {DAY} .",
    "the {MISC} team left {LOC} for {LOC} .",
    "{PER} told {ORG} that talks in {LOC} had failed .",
    "{ORG} chairman {PER} resigned on {DAY} .",
    "{NUM} people died in floods in {LOC} , officials said .",
    "{PER} won the {MISC} after beating {PER} .",
    "analysts at {ORG} expect growth in {LOC} to slow .",
    "{LOC} and {LOC} signed a trade deal on {DAY} .",
)
# fmt: on
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _entity(rng: np.random.Generator, kind: str) -> list[str]:
    options = _NAMES[kind]
    name = options[int(rng.integers(len(options)))]
    if kind == "PER" and rng.random() < 0.3:
        return [name[1]]  # surname only, as news text often writes
    return list(name)


def make_sentence(rng: np.random.Generator) -> Sentence:
    """One templated sentence with IOB2 tags."""
    template = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))]
    words: list[str] = []
    tags: list[str] = []
    for piece in template.split(" "):
        slot = piece.strip("{}") if piece.startswith("{") else None
        if slot in TYPES:
            entity = _entity(rng, slot)
            words += entity
            tags += [f"B-{slot}"] + [f"I-{slot}"] * (len(entity) - 1)
        elif slot == "DAY":
            words.append(_DAYS[int(rng.integers(len(_DAYS)))])
            tags.append("O")
        elif slot == "NUM":
            words.append(str(int(rng.integers(1, 100))))
            tags.append("O")
        else:
            words.append(piece)
            tags.append("O")
    return Sentence(tuple(words), tuple(tags))


def write_synthetic(folder: str | Path, seed: int, sizes: dict[str, int]) -> dict[str, Path]:
    """Write train/testa/testb files of `sizes[split]` synthetic sentences each (from `seed`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for index, split in enumerate(SPLITS):
        rng = np.random.default_rng([seed, index])
        sentences = [make_sentence(rng) for _ in range(sizes[split])]
        paths[split] = folder / FILE_NAMES[split][0]
        write_conll(paths[split], sentences)
    return paths
