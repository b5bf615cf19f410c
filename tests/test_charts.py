"""Every chart names every axis that differs: no two marks stand for the same encoded values.

The check reads each chart's Vega-Lite spec (data and encodings) from the Altair object: point,
bar and error-bar marks must differ in some encoded field; a line must join the rows of one cell
only (every axis but its x constant) and never visit an x twice (a zig-zag of two cells).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_aggregate import make_record

from devicebench.aggregate.analysis import load_prices
from devicebench.aggregate.serving import serving_table
from devicebench.aggregate.writeup_charts import CHART_NAMES, all_charts

sys.path.insert(0, str(REPO / "scripts"))
import aggregate as aggregate_script  # noqa: E402
import charts as charts_script  # noqa: E402

AXIS_FIELDS = {"task", "model", "framework", "device_label", "precision", "batch_size", "mode"}
POSITION = {"x", "y", "x2", "y2"}
DIMENSIONS = {"batch_size", "t", "cell", "op"}  # positional fields that identify, not measure


def _add(path: Path, **sections) -> None:
    record = json.loads(path.read_text())
    record.update(sections)
    path.write_text(json.dumps(record))


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("records")
    paths = []
    grid = itertools.product(
        ["torch", "keras-torch"], [("cpu", 2), ("cuda", None)], [32, 128], ["train", "infer"]
    )
    for index, (framework, (device, threads), batch, mode) in enumerate(grid):
        path = make_record(
            root,
            framework=framework,
            device=device,
            threads=threads,
            batch_size=batch,
            mode=mode,
            median_s=0.5 + index / 10,
        )
        _add(
            path,
            utilization={"t": [0.0, 0.1, 0.2], "cpu_percent_mean": [50.0, 60.0, 55.0],
                         "gpu_util": [80.0, 90.0, 85.0] if device == "cuda" else None},
        )  # fmt: skip
        if batch == 32 and mode == "train":
            ops = [{"op": f"aten::op{i}", "calls": 3, "self_cpu_ms": 4.0 - i,
                    "self_cpu_pct": 40.0 - i, "self_device_ms": 2.0 - i / 2,
                    "self_device_pct": 20.0 - i} for i in range(3)]  # fmt: skip
            key = "top_self_device" if device == "cuda" else "top_self_cpu"
            _add(path, profile={"top_self_cpu": ops, key: ops})
        paths.append(path)
    for kernel in ("cudnn", "generic"):  # an extra axis that varies
        for device, threads in (("cpu", 2), ("cuda", None)):
            paths.append(
                make_record(
                    root, task="imdb_bilstm", device=device, threads=threads, lstm_kernel=kernel
                )
            )
    paths.append(make_record(root, task="imdb_bilstm", device="cuda", threads=None,
                             batch_size=512, lstm_kernel="cudnn", status="skipped"))  # fmt: skip
    out = tmp_path_factory.mktemp("tables")
    aggregate_script.aggregate(paths, out, "cpu")
    serve_root, serve_paths = tmp_path_factory.mktemp("serve"), []  # charts of their own
    for clients, device, threads in itertools.product((20, 50), ("cpu", "cuda"), (2,)):
        path = make_record(serve_root, task="serve_image", device=device, mode="serve",
                           threads=threads if device == "cpu" else None, clients=clients,
                           server="uvicorn")  # fmt: skip
        rate = clients * (3.0 if device == "cuda" else 1.0)
        latency = {"p50": 10.0 + clients, "p90": 20.0 + clients, "p99": 30.0 + clients,
                   "max": 40.0 + clients}  # fmt: skip
        pool = {"requests": 100, "requests_per_s": rate, "images_per_s": rate, "errors": 0,
                "error_rate": 0.0, "latency_ms": latency, "stability_cov": 0.1}  # fmt: skip
        _add(path, serving={"pool": pool, "batch_sizes": {"1": 4, "4": 2}, "loadgen": {}})
        serve_paths.append(path)
    tables = charts_script.load_tables(charts_script.parse_args(["--tables", str(out)]))
    tables["serving"] = serving_table(serve_paths, load_prices(REPO / "config" / "prices.yaml"))
    return tables


def _marks(spec: dict, data: list | None = None, inherited: tuple = ()):
    """(mark type, encoding, rows) of every single-view spec, with facet fields inherited."""
    data = (spec.get("data") or {}).get("values", data)
    facet = spec.get("facet") or {}
    if "field" in facet:
        facet = {"facet": facet}
    inherited += tuple(f["field"] for f in facet.values() if isinstance(f, dict) and "field" in f)
    for child in spec.get("layer", []):
        yield from _marks(child, data, inherited)
    if "spec" in spec:
        yield from _marks(spec["spec"], data, inherited)
    if "mark" in spec:
        mark = spec["mark"]
        yield (
            (mark["type"] if isinstance(mark, dict) else mark),
            spec.get("encoding", {}),
            (
                data or [],
                inherited,
                spec.get("transform", []),
            ),
        )


def _identity(encoding: dict, facets: tuple) -> tuple[list[str], str | None]:
    """The fields a mark is told apart by, and the field of its x position."""
    fields, x = list(facets), None
    for channel, specs in encoding.items():
        if channel == "tooltip":
            continue
        for spec in specs if isinstance(specs, list) else [specs]:  # detail may list fields
            if not isinstance(spec, dict) or "field" not in spec:
                continue
            if channel == "x":
                x = spec["field"]
            if (
                channel in POSITION
                and spec["field"] not in DIMENSIONS
                and spec.get("type") != "nominal"
            ):
                continue  # the measured value: two cells may measure the same
            fields.append(spec["field"])
    return sorted(set(fields)), x


def _check(name: str, chart) -> int:
    checked = 0
    for mark, encoding, (rows, facets, transforms) in _marks(chart.to_dict()):
        if transforms:  # the noisy-cell overlay draws a subset of the same rows
            continue
        fields, x = _identity(encoding, facets)
        axes = sorted(AXIS_FIELDS.intersection(*[set(r) for r in rows]) - {x}) if rows else []
        keys = [tuple(str(r.get(f)) for f in fields) for r in rows]
        if mark == "line":
            lines: dict[tuple, list[dict]] = {}
            for key, row in zip(keys, rows, strict=True):
                lines.setdefault(
                    tuple(k for k, f in zip(key, fields, strict=True) if f != x), []
                ).append(row)
            for line, members in lines.items():
                xs = [str(r.get(x)) for r in members]
                assert len(xs) == len(set(xs)), f"{name}: a line visits an x twice: {line}"
                for axis in axes:
                    values = {str(r.get(axis)) for r in members}
                    assert len(values) == 1, f"{name}: a line joins {axis} {values}"
        elif mark in ("point", "bar", "errorbar", "tick", "circle", "square", "rect"):
            assert len(keys) == len(set(keys)), f"{name}: two {mark} marks share {fields}"
        checked += len(rows)
    return checked


def test_no_two_marks_share_all_encoded_fields(tables):
    charts = all_charts(tables)
    assert set(charts) == set(CHART_NAMES)
    for name, chart in charts.items():
        assert _check(name, chart) > 0, f"{name} drew nothing"


def _only(tables: dict, task: str) -> dict:
    return {k: v[v["task"].eq(task)] if "task" in v else v for k, v in tables.items()}


def test_framework_precision_and_kernel_have_legends(tables):
    """The legend names the axes that vary: framework for MNIST, the LSTM kernel for IMDb."""
    spec = json.dumps(all_charts(_only(tables, "mnist_mlp"))["throughput_vs_batch"].to_dict())
    assert '"title": "framework"' in spec
    spec = json.dumps(all_charts(_only(tables, "imdb_bilstm"))["time_vs_batch"].to_dict())
    assert '"title": "lstm_kernel"' in spec
    spec = json.dumps(all_charts(tables)["speedup_vs_batch"].to_dict(), ensure_ascii=False)
    assert '"title": "framework · lstm_kernel"' in spec


def test_not_ok_cells_are_a_table_not_a_title(tables):
    not_ok = tables["cells"][tables["cells"]["status"].ne("ok")]
    assert len(not_ok) == 1
    spec = all_charts(tables)["throughput_per_cell"].to_dict()
    assert spec["title"]["subtitle"] == ["not drawn: 1 skipped (see the not_ok table)"]


def test_a_merged_series_is_caught(tables):
    """The check fails on the old encoding: colour by device only joins two frameworks' points."""
    import altair as alt

    cells = tables["cells"][tables["cells"]["status"].eq("ok")]
    cells = cells[cells["task"].eq("mnist_mlp") & cells["mode"].eq("train")]
    rows = cells[["device_label", "framework", "batch_size", "samples_per_s"]].to_dict("records")
    bad = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(x="batch_size:Q", y="samples_per_s:Q", color="device_label:N")
    )
    with pytest.raises(AssertionError, match="visits an x twice|joins framework"):
        _check("bad", bad)
