"""The README's Results block is what scripts/readme_results.py makes from the published tables."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from devicebench.report.readme import BEGIN, END, replace_block, results_block

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_block_is_the_generated_one():
    block, _ = results_block(REPO)
    readme = (REPO / "README.md").read_text()
    assert readme == replace_block(readme, block), "run python scripts/readme_results.py"
    spec = importlib.util.spec_from_file_location("readme_cli", REPO / "scripts/readme_results.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--check"]) == 0


def test_a_hand_edit_of_the_block_is_caught(tmp_path):
    readme = (REPO / "README.md").read_text()
    edited = tmp_path / "README.md"
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    figure = re.search(r" \| (\d+\.\d+)x \|", block).group(0)  # the block's first speedup
    edited.write_text(readme.replace(block, block.replace(figure, " | 1234.5x |", 1)))
    assert edited.read_text() != readme
    spec = importlib.util.spec_from_file_location("readme_cli", REPO / "scripts/readme_results.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--check", "--readme", str(edited)]) == 1


def test_the_block_names_its_sources_and_keeps_benchmarks_apart():
    block, _ = results_block(REPO)
    assert block.startswith(BEGIN) and block.endswith(END)
    assert "`tables/speedup.csv`" in block
    serving = [
        table
        for table in (REPO / "results" / "published").glob("*/tables/serving.csv")
        if len(table.read_text().splitlines()) > 1
    ]
    assert ("`tables/serving.csv`" in block) == bool(serving)
    studies, benchmarks = block.split("### Benchmarks (side measurements outside the workflow)")
    assert "benchmarks/" not in studies  # no benchmark figure inside a study's tables
    assert "`python benchmarks/harness_overhead.py" in benchmarks
    assert "nan" not in block.lower().split()
    with pytest.raises(ValueError, match="results:begin"):
        replace_block("# no block here\n", block)
