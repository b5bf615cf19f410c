#!/usr/bin/env python3
"""Prepare a dataset (synthetic, downloaded or copied from a folder) and pin it by SHA-256.

Examples:

    python scripts/prepare_data.py --dataset mnist --source synthetic \\
        --out results/data/mnist/synthetic --train-samples 6000 --test-samples 1000 --seed 1234
    python scripts/prepare_data.py --dataset mnist --source download --out results/data/mnist/real
    python scripts/prepare_data.py --dataset mnist --source path --path ~/mnist --out DIR
    python scripts/prepare_data.py --check --out results/data/mnist/synthetic

Writes the files and DIR/manifest.json, then loads them back once to prove they parse. Exits 2
when a file fails its checksum (the message says which file and what to do), 1 on other errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
try:
    import devicebench  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "src"))

from devicebench.data import (  # noqa: E402
    DATASETS,
    MANIFEST,
    SOURCES,
    DataIntegrityError,
    DownloadError,
    IdxFormatError,
    load_dataset,
    prepare_dataset,
)


def workload_preparers(dataset: str) -> list:
    """The `prepare_data` of the workloads that read `dataset` (devicebench.workloads)."""
    from devicebench.workloads import get, specs

    return [get(t).prepare_data for t, spec in specs().items() if spec.dataset == dataset]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Sources: synthetic (offline, deterministic from --seed), download (the real "
        "files from their public mirror), path (the real files from a local folder).",
    )
    parser.add_argument("--dataset", default="mnist", choices=sorted(DATASETS))
    parser.add_argument("--source", default="synthetic", choices=SOURCES)
    parser.add_argument("--out", required=True, type=Path, help="folder for files + manifest")
    parser.add_argument("--path", type=Path, help="folder with the original files (--source path)")
    parser.add_argument("--train-samples", type=int, help="training samples (default: all)")
    parser.add_argument("--test-samples", type=int, help="test samples (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic generator")
    parser.add_argument(
        "--sha256",
        action="append",
        default=[],
        metavar="FILE=HEX",
        help="expected SHA-256 of a real file (needed for files with no published checksum)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only verify and load the dataset already in --out"
    )
    parser.add_argument("--by-workflow", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.source == "path" and args.path is None and not args.check:
        parser.error("--source path needs --path FOLDER")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.check:
            manifest = args.out / MANIFEST
        else:
            manifest = prepare_dataset(
                args.dataset,
                args.source,
                args.out,
                train_samples=args.train_samples,
                test_samples=args.test_samples,
                seed=args.seed,
                path=None if args.path is None else str(args.path),
                expected_sha256=dict(item.split("=", 1) for item in args.sha256),
                prepared_by="workflow" if args.by_workflow else "hand",
            )
        data = load_dataset(manifest)
        for prepare in workload_preparers(data.name):  # e.g. a tokenizer trained on its text
            prepare(manifest.parent)
    except DataIntegrityError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (DownloadError, IdxFormatError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    kind = "SYNTHETIC" if data.synthetic else "real"
    print(f"{data.name} ({kind}, source {data.source}): manifest {manifest}")
    print(f"  train {data.x_train.shape} {data.x_train.dtype}, labels {data.y_train.shape}")
    print(f"  test  {data.x_test.shape} {data.x_test.dtype}, labels {data.y_test.shape}")
    for entry in json.loads(manifest.read_text())["files"]:
        print(f"  {entry['name']:<28} {entry['size']:>10} bytes  sha256 {entry['sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
