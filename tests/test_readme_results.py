"""The README: at most 250 lines, its Quick start as .ci/run reads it, and its answer block what
scripts/readme_results.py makes from the published tables; every link in it and in docs/ leads
somewhere."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from devicebench.report.answer import CLASSES
from devicebench.report.readme import BEGIN, END, replace_block, results_block

REPO = Path(__file__).resolve().parents[1]


# Written by the verdict branch (issue 36); a link to it is allowed before that branch lands.
def _script():
    spec = importlib.util.spec_from_file_location("readme_cli", REPO / "scripts/readme_results.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_readme_block_is_the_generated_one():
    block, _ = results_block(REPO)
    readme = (REPO / "README.md").read_text()
    assert readme == replace_block(readme, block), "run python scripts/readme_results.py"
    assert _script().main(["--check"]) == 0


def test_a_hand_edit_of_the_block_is_caught(tmp_path):
    readme = (REPO / "README.md").read_text()
    edited = tmp_path / "README.md"
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    figure = re.search(r"GPU \d[\d.,]*x", block).group(0)  # the block's first range figure
    edited.write_text(readme.replace(block, block.replace(figure, "GPU 1234x", 1)))
    assert edited.read_text() != readme
    assert _script().main(["--check", "--readme", str(edited)]) == 1


def test_the_readme_reads_in_two_screens_to_the_answer():
    readme = (REPO / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= 250
    quick = readme.split("## Quick start", 1)[1]
    fenced = quick.split("```", 2)[1].splitlines()
    assert fenced[0] == "bash" and len(fenced) == 3  # .ci/run reads the block's second line
    assert fenced[2].endswith("python -m pytest")
    answer_at = next(i for i, line in enumerate(lines) if line == "## The answer")
    assert answer_at < 40, "the answer starts on the second screen at the latest"


def test_the_answer_has_a_line_per_class_and_says_what_is_not_measured():
    block, charts = results_block(REPO)
    rows = [r for r in block.splitlines() if r.startswith("| ") and "---" not in r][1:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [c.title for c in CLASSES]
    for row in rows:
        verdict, figure = row.split(" | ")[1:3]
        if verdict.startswith("not measured: "):
            assert figure == "—"  # no figure borrowed for a class that has none
        else:
            assert re.fullmatch(r"(GPU|CPU) .*cheaper", figure)
    assert "synthetic" in block and "**Priced**" in block
    assert not re.search(r"\bnan\b|\de-0\d", block, re.I)
    assert len(charts) == 1 and f"({charts[0][1].relative_to(REPO).as_posix()})" in block


def test_a_class_the_answer_study_did_not_measure_takes_the_study_that_did_naming_it():
    """The H100 study has no LLM or latency-bound serving verdict; the H200 studies do: their
    rows fill the table, each naming its study, with that study's own words and range."""
    from devicebench.aggregate.analysis import load_prices
    from devicebench.report.readme import answer_study, class_answers, measured_elsewhere

    prices = load_prices(REPO / "config" / "prices.yaml")
    chosen = answer_study(REPO).relative_to(REPO)
    unmeasured = {a.title for a in class_answers(REPO, chosen, prices) if not a.measured}
    assert "LLM generation" in unmeasured  # else this test shows nothing
    published = REPO / "results" / "published"
    others = sorted(f.relative_to(REPO) for f in published.iterdir() if f.name != chosen.name)
    found = measured_elsewhere(REPO, others, prices)
    block, _ = results_block(REPO)
    for title in unmeasured & set(found):
        folder, said = found[title]
        row = f"| {title} | [`{folder.name}`]({folder.as_posix()}/README.md): {said.verdict} | "
        assert row + f"{said.range} |" in block
    assert "A verdict that names a study comes from that study" in block


def _links(path: Path) -> list[Path]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        out.append((path.parent / target.split("#")[0]).resolve())
    return out


@pytest.mark.parametrize(
    "page",
    [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))],
    ids=lambda p: p.relative_to(REPO).as_posix(),
)
def test_every_link_leads_somewhere(page):
    broken = [t for t in _links(page) if not t.exists()]
    assert broken == []


def test_every_docs_page_is_in_the_index():
    index = (REPO / "docs" / "index.md").read_text()
    for page in (REPO / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"({page.name})" in index


def test_generation_lines_say_each_devices_batch1_and_cheapest_cell_from_the_table(tmp_path):
    import pandas as pd

    from devicebench.report.readme import generation_lines

    common = dict(model="llama-1b", prompt_len=128, output_len=128, precision="bf16")
    rows = [
        common | dict(criterion="fastest batch-1 decode", device_label="cuda", batch_size=1,
                      generator="torch_static", decode_tokens_per_s=507.7,
                      bandwidth_fraction=0.2967, cost_per_million_tokens_usd=2.988),
        common | dict(criterion="cheapest per million output tokens", device_label="cpu:16t",
                      batch_size=1, generator="torch_eager", decode_tokens_per_s=17.95,
                      bandwidth_fraction=None, cost_per_million_tokens_usd=10.62),
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "generation_best.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "llama-1b, prompt 128 / output 128" in line
    assert "cuda 507.7 tokens/s at batch 1 (torch_static, bf16, 30% of its bandwidth bound" in line
    assert "cheapest: cpu:16t 17.9" in line or "cheapest: cpu:16t 18.0" in line
    assert generation_lines(tmp_path / "none") == []


def test_a_cell_said_before_reads_the_same_cell_and_an_unchecked_int4_says_so(tmp_path):
    import pandas as pd

    from devicebench.report.readme import generation_lines

    common = dict(model="llama-8b", prompt_len=128, output_len=128, batch_size=1,
                  quality="n/a: random weights", bandwidth_fraction=0.6)  # fmt: skip
    keys = ("device_label", "generator", "precision", "decode_tokens_per_s",
            "cost_per_million_tokens_usd", "cell_id")  # fmt: skip
    cpu4, cpu16, gpu = (
        common | dict(zip(keys, values, strict=True))
        for values in (("cpu:16t", "llama_cpp", "int4", 12.2, 18.2, "c4"),
                       ("cpu:16t", "llama_cpp", "bf16", 5.5, 37.5, "c16"),
                       ("cuda", "torch_static", "bf16", 177.3, 8.1, "g"))
    )  # fmt: skip
    rows = [cpu4 | dict(criterion="fastest batch-1 decode"),
            gpu | dict(criterion="fastest batch-1 decode"),
            cpu16 | dict(criterion="fastest batch-1 decode in bf16"),
            gpu | dict(criterion="fastest batch-1 decode in bf16")]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "generation_best.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "(llama_cpp, int4, 60% of its bandwidth bound; $18.2 per million output tokens; " \
           "quality unverified)" in line  # fmt: skip
    assert "batch 1 in bf16: cpu:16t 5.5 tokens/s" in line and "cuda the same cell" in line
    assert line.count("quality unverified") == 1  # bf16 is not an integer weight format


def test_an_engine_whose_quality_cannot_be_scored_says_so_in_the_line(tmp_path):
    """SmolLM2's real weights on OpenVINO GenAI (no logits per position): its row's quality is
    "quality unverified: ...", and the README line says so though its weights are real."""
    import pandas as pd

    from devicebench.report.readme import generation_lines

    common = dict(model="smollm2-135m", prompt_len=128, output_len=128, batch_size=1,
                  bandwidth_fraction=0.1, criterion="fastest batch-1 decode")  # fmt: skip
    rows = [
        common | dict(device_label="cpu:16t", generator="openvino_genai", precision="int4",
                      decode_tokens_per_s=100.3, cost_per_million_tokens_usd=1.92, cell_id="c",
                      quality="quality unverified: the engine gives no logits per position"),
        common | dict(device_label="cuda", generator="torch_static", precision="fp32",
                      decode_tokens_per_s=445.8, cost_per_million_tokens_usd=3.43, cell_id="g",
                      quality="ok"),
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "generation_best.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "(openvino_genai, int4, 10% of its bandwidth bound; $1.92 per million output " \
           "tokens; quality unverified)" in line  # fmt: skip
    assert line.count("quality unverified") == 1  # the GPU's fp32 cell was scored: ok


def test_a_prefill_only_pair_reads_its_first_token_and_prompt_price_never_nan(tmp_path):
    """2048/1 has no decode: the line gives each device's TTFT and price per million prompt
    tokens (said once where the cheapest is the fastest cell), and a goodput search that found
    no rate says so."""
    import pandas as pd

    from devicebench.report.readme import generation_lines

    common = dict(
        model="llama-1b",
        output_len=1,
        precision="bf16",
        batch_size=1,
        generator="torch_eager",
        decode_tokens_per_s=None,
    )
    rows = []
    for device, ttft, prefill, usd in (
        ("cpu:16t", 2.0276, 1011.0, 0.187),
        ("cuda", 0.0148, 138357.0, 0.0100),
    ):
        cell = common | dict(
            prompt_len=2048,
            device_label=device,
            ttft_p50_s=ttft,
            prefill_tokens_per_s=prefill,
            cost_per_million_prompt_tokens_usd=usd,
            cell_id=f"{device}-2048",
        )
        rows += [
            cell | dict(criterion="fastest time to first token"),
            cell | dict(criterion="cheapest per million prompt tokens"),
        ]
    pd.DataFrame(rows).to_csv(tmp_path / "generation_best.csv", index=False)
    served = [
        dict(
            model="llama-1b",
            prompt_len=2048,
            output_len=1,
            device_label=d,
            serving_status=s,
            goodput_qps=None,
        )
        for d, s in (("cpu:16t", "no_rate"), ("cuda", "over_budget"))
    ]
    pd.DataFrame(served).to_csv(tmp_path / "generation.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "first token: cpu:16t TTFT 2,027.6 ms at batch 1 (torch_eager, bf16" in line
    assert "cuda TTFT 14.8 ms" in line and "$0.01 per million prompt tokens" in line
    assert "cheapest prompt: the same cells" in line
    assert "goodput at the token bounds: none (cpu:16t no_rate, cuda over_budget" in line
    assert "nan" not in line


def test_a_goodput_reads_its_rate_even_for_a_cell_said_before_and_the_other_device_its_status(
    tmp_path,
):
    """The GPU's served cell is also its fastest batch-1 cell: its goodput is another figure of
    that cell, so the line gives the rate, not "the same cells"; the CPU's served cell found no
    rate, and the line names its status beside the GPU's goodput (machine 11, 2026-11-29)."""
    import pandas as pd

    from devicebench.report.readme import generation_lines

    common = dict(model="llama-1b", prompt_len=1024, output_len=128, precision="bf16",
                  batch_size=1, bandwidth_fraction=0.5)  # fmt: skip
    gpu = common | dict(device_label="cuda", generator="torch_static", cell_id="g",
                        decode_tokens_per_s=600.0, cost_per_million_tokens_usd=2.54,
                        goodput_qps=28.73, goodput_tokens_per_s=3628.2,
                        goodput_cost_per_million_tokens_usd=0.383)  # fmt: skip
    cpu = common | dict(device_label="cpu:16t", generator="openvino_genai", cell_id="c",
                        decode_tokens_per_s=29.3, cost_per_million_tokens_usd=7.28)  # fmt: skip
    rows = [cpu | dict(criterion="fastest batch-1 decode"),
            gpu | dict(criterion="fastest batch-1 decode"),
            gpu | dict(criterion="highest goodput at the token bounds")]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "generation_best.csv", index=False)
    served = [
        gpu | dict(serving_status="ok"),
        cpu
        | dict(
            serving_status="no_rate",
            goodput_qps=None,
            no_rate_down_to_qps=1.622,
            no_rate_least_cost_per_million_tokens_usd=0.910,
        ),
    ]
    pd.DataFrame(served).to_csv(tmp_path / "generation.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "goodput: cuda 28.7 requests/s at the token bounds (torch_static, 3,628 output " \
           "tokens/s, $0.383 per million output tokens)" in line  # fmt: skip
    assert "goodput: the same cells" not in line
    said = "no goodput: cpu:16t no_rate down to 1.62 requests/s, so cuda at least 2.38x "
    assert said + "cheaper per output token at the bounds (tables/generation.md says" in line
    # without the least cost (an older table), the status alone
    served[1].pop("no_rate_least_cost_per_million_tokens_usd")
    pd.DataFrame(served).to_csv(tmp_path / "generation.csv", index=False)
    (line,) = generation_lines(tmp_path)
    assert "no goodput: cpu:16t no_rate down to 1.62 requests/s (tables/generation.md" in line
    assert "goodput at the token bounds: none" not in line
    # another GPU engine's search failed beside the goodput: each failure names its engine
    served.append(gpu | dict(generator="transformers_cb", cell_id="t", serving_status="no_rate",
                             goodput_qps=None, no_rate_down_to_qps=1.76))  # fmt: skip
    pd.DataFrame(served).to_csv(tmp_path / "generation.csv", index=False)
    (line,) = generation_lines(tmp_path)
    said = "no goodput: cpu:16t openvino_genai no_rate down to 1.62 requests/s, cuda "
    assert said + "transformers_cb no_rate down to 1.76 requests/s (tables/" in line
