"""Jane Austen's six novels from Debian's r-cran-janeaustenr, read without R.

The package keeps them as an R lazy-load database (data/Rdata.rdx: a gzip'd RDS index of
offsets; data/Rdata.rdb: each novel a 4-byte length and a zlib'd serialized character vector,
one element per line); `rdata` parses the serialized objects. Only real text: nothing here
downloads or invents it.
"""

from __future__ import annotations

import gzip
import warnings
import zlib
from functools import cache
from pathlib import Path

DEBIAN_DIR = Path("/usr/lib/R/site-library/janeaustenr/data")
NOVELS = (
    "sensesensibility",
    "prideprejudice",
    "mansfieldpark",
    "emma",
    "northangerabbey",
    "persuasion",
)
# The chapter scored for perplexity (the last of Persuasion, her last finished novel) and the
# novel whose chapter openings are the prompts.
HELD_OUT = ("persuasion", -1)
PROMPT_NOVEL = "prideprejudice"


class CorpusMissing(FileNotFoundError):
    """The Austen data files are not where they were looked for."""


def _parse(raw: bytes):
    import rdata

    with warnings.catch_warnings():  # rdata says "Unknown file type: assumed RDS" for these
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(raw))


@cache
def read_novels(folder: str | Path = DEBIAN_DIR) -> dict[str, tuple[str, ...]]:
    """Every novel's lines, by the package's names (emma, persuasion, ...)."""
    folder = Path(folder)
    index_path, db_path = folder / "Rdata.rdx", folder / "Rdata.rdb"
    if not index_path.exists() or not db_path.exists():
        raise CorpusMissing(
            f"Jane Austen's novels not found in {folder} (Rdata.rdx, Rdata.rdb): install Debian's "
            "r-cran-janeaustenr, or extract its .deb and point `corpus_dir` at its data folder"
        )
    index = _parse(gzip.decompress(index_path.read_bytes()))["variables"]
    db = db_path.read_bytes()
    novels = {}
    for name, (offset, length) in index.items():
        blob = db[int(offset) : int(offset) + int(length)]
        novels[str(name)] = tuple(str(line) for line in _parse(zlib.decompress(blob[4:])))
    missing = set(NOVELS) - set(novels)
    if missing:
        raise CorpusMissing(f"{folder}: novels missing from the database: {sorted(missing)}")
    return novels


def chapters(lines: tuple[str, ...]) -> list[str]:
    """A novel's chapters as text (paragraphs joined by newlines), the title pages dropped."""
    found: list[list[str]] = []
    for line in lines:
        if line.strip().upper().startswith("CHAPTER"):
            found.append([])
        elif found:
            found[-1].append(line)
    return ["\n".join(" ".join(chapter).split("  ")).strip() for chapter in found if chapter]


def held_out_text(folder: str | Path = DEBIAN_DIR) -> str:
    novel, index = HELD_OUT
    return chapters(read_novels(folder)[novel])[index]


def prompt_texts(count: int, folder: str | Path = DEBIAN_DIR) -> list[str]:
    """The openings of the first `count` chapters of Pride and Prejudice (cycled if more)."""
    found = chapters(read_novels(folder)[PROMPT_NOVEL])
    return [found[i % len(found)] for i in range(count)]
