"""The README's Results block is what scripts/readme_results.py makes from the published tables."""

from __future__ import annotations

import importlib.util
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
    edited.write_text(readme.replace(" | 0.955x |", " | 1.0x |", 1))
    assert edited.read_text() != readme  # the fastText figure the block carries
    spec = importlib.util.spec_from_file_location("readme_cli", REPO / "scripts/readme_results.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--check", "--readme", str(edited)]) == 1


def test_the_block_names_its_sources_and_keeps_benchmarks_apart():
    block, _ = results_block(REPO)
    assert block.startswith(BEGIN) and block.endswith(END)
    assert "`tables/speedup.csv`" in block and "`tables/serving.csv`" in block
    studies, benchmarks = block.split("### Benchmarks (side measurements outside the workflow)")
    assert "benchmarks/" not in studies  # no benchmark figure inside a study's tables
    assert "`python benchmarks/harness_overhead.py" in benchmarks
    assert "nan" not in block.lower().split()
    with pytest.raises(ValueError, match="results:begin"):
        replace_block("# no block here\n", block)
