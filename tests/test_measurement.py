"""Timing summaries and quality metrics (F1 checked against scikit-learn)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from devicebench.measure.metrics import classification_scores
from devicebench.measure.timing import latency_percentiles, summarize
from devicebench.run.threads import thread_environment


def test_summary_median_iqr_cov():
    summary = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert summary["median_s"] == 3.0
    assert summary["iqr_s"] == pytest.approx(2.0)
    assert summary["cov"] == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / 3.0)
    assert summary["noisy"] is True


def test_steady_timings_are_not_noisy():
    summary = summarize([1.00, 1.01, 0.99], noise_cov=0.1)
    assert summary["noisy"] is False
    assert summary["cov"] < 0.02


def test_empty_timings_are_refused():
    with pytest.raises(ValueError):
        summarize([])


def test_latency_percentiles_in_ms():
    latencies = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    p = latency_percentiles(latencies)
    assert p["p50"] == pytest.approx(50.5)
    assert p["p90"] == pytest.approx(90.1)
    assert p["p99"] == pytest.approx(99.01)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_f1_matches_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 10, 500)
    y_pred = np.where(rng.random(500) < 0.6, y_true, rng.integers(0, 10, 500))
    y_pred[y_pred == 3] = 4  # a class never predicted
    scores = classification_scores(y_true, y_pred, 10)
    assert scores["accuracy"] == pytest.approx(accuracy_score(y_true, y_pred))
    assert scores["f1_macro"] == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    assert scores["f1_micro"] == pytest.approx(f1_score(y_true, y_pred, average="micro"))


def test_thread_environment_pins_every_pool():
    env = thread_environment(3)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == env["TF_NUM_INTRAOP_THREADS"] == "3"
    with pytest.raises(ValueError):
        thread_environment(0)
