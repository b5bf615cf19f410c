"""The cell-vs-bare check (benchmarks/cell_vs_bare.py) for real on a tiny BERT, and the ONNX export
that gives every constant its own initializer (what ONNX Runtime's static int8 needs)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))


def test_cell_and_bare_score_the_same_export_and_both_are_timed(tmp_path, capsys):
    import cell_vs_bare

    out = tmp_path / "out.json"
    argv = ["--smoke", "--threads", "1", "--engines", "onnxruntime,openvino", "--min-s", "0"]
    assert cell_vs_bare.main([*argv, "--reps", "1", "--json", str(out)]) == 0
    rows = {(r["engine"], r["format"], r["hint"]): r for r in json.loads(out.read_text())["rows"]}
    assert ("onnxruntime", "int8", None) in rows and ("openvino", "int8", "THROUGHPUT") in rows
    for row in rows.values():
        assert row["status"] == "ok", row
        cell, bare = row["cell"], row["bare"]
        assert cell["samples_per_s"] > 0 and bare["samples_per_s"] > 0
        assert row["ratio"] == pytest.approx(cell["samples_per_s"] / bare["samples_per_s"])
        assert cell["agreement_fp32"] is not None
        if row["engine"] == "onnxruntime":  # the same file: the same trained weights
            assert cell["info"]["onnx"] == bare["info"]["onnx"]
            assert bare["info"]["export"] == "cached"
        else:
            assert bare["info"]["export"] == "cached (this process)"
            assert cell["info"]["requests_in_flight"] == bare["info"]["requests_in_flight"]
        assert cell["info"]["format_ran"] == bare["info"]["format_ran"]
    printed = capsys.readouterr().out
    assert "| bert-tiny | openvino | int8 | THROUGHPUT (4) |" in printed


class TwoBlocks(torch.nn.Module):
    """Two convolutions with BatchNorm at its initial statistics: equal (zero) folded biases."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.Conv2d(4, 4, 3, bias=False)
        self.bn_a, self.bn_b = torch.nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn_a(self.a(x)))
        return torch.relu(self.bn_b(self.b(x))).mean(dim=(2, 3))


def test_an_untrained_models_equal_biases_are_initializers_and_quantize(tmp_path, monkeypatch):
    import onnx

    from devicebench.engines.base import LoadOptions
    from devicebench.engines.export import export_onnx
    from devicebench.engines.onnxruntime_engine import quantize

    monkeypatch.setenv("DEVICEBENCH_ENGINE_CACHE", str(tmp_path))
    example = {"x": np.random.default_rng(0).standard_normal((2, 3, 8, 8), dtype=np.float32)}
    path, info = export_onnx(TwoBlocks().eval(), example)
    assert info["shared_constants_unshared"] >= 1
    graph = onnx.load(str(path)).graph
    initializers = {i.name for i in graph.initializer}
    convs = [node for node in graph.node if node.op_type == "Conv"]
    assert len(convs) == 2 and all(node.input[2] in initializers for node in convs)
    options = LoadOptions(precision="int8", calibration=[example], convolutional=True)
    quantized, _ = quantize(path, options)
    graph = onnx.load(str(quantized)).graph
    int32 = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.INT32}
    biases = [n for n in graph.node if n.op_type == "DequantizeLinear" and n.input[0] in int32]
    assert len(biases) == 2  # both biases quantized (int32), as a trained model's are


def test_the_h100_hosts_record_prints_as_the_table_in_results(capsys):
    """The table in benchmarks/RESULTS.md is the committed record's, printed by code."""
    import cell_vs_bare

    record = REPO / "benchmarks" / "results" / "cell_vs_bare_h100host.json"
    assert cell_vs_bare.main(["--table-from", str(record)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed.count("\n| resnet-50 |") == 7 and printed.count("\n| bert-base |") == 9
    assert printed in (REPO / "benchmarks" / "RESULTS.md").read_text()
