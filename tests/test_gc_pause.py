"""The serving processes keep full garbage collections out of measured latencies (gc_pause.py)."""

from __future__ import annotations

import gc

import pytest

from devicebench.serving.gc_pause import count_full_collections, freeze_loaded_heap
from devicebench.serving.stats import ServerStats


@pytest.fixture
def fresh_gc():
    callbacks = list(gc.callbacks)
    yield
    gc.callbacks[:] = callbacks
    gc.unfreeze()


def test_freezing_takes_the_loaded_objects_out_of_a_full_collection(fresh_gc):
    loaded = [{"weight": [i] * 4} for i in range(50_000)]  # long-lived, as a model's objects
    frozen = freeze_loaded_heap()
    assert frozen >= len(loaded) and frozen == gc.get_freeze_count()
    tracked = len(gc.get_objects(generation=2))
    assert tracked < frozen / 10, "the frozen objects are still walked by a full collection"


def test_each_full_collection_and_its_pause_are_counted_in_the_server_stats(fresh_gc):
    stats = ServerStats.in_memory(max_batch=4)
    count_full_collections(stats)
    gc.collect(0)  # a young collection is not counted
    assert "gc_full_collections" not in stats.snapshot()["counts"]
    gc.collect()
    gc.collect()
    counts = stats.snapshot()["counts"]
    assert counts["gc_full_collections"] == 2
    assert counts["gc_full_pause_us"] > 0 and "ok" not in counts


def test_a_count_the_server_does_not_keep_is_refused():
    with pytest.raises(KeyError, match="not a server count: 'gc_pauses'"):
        ServerStats.in_memory(max_batch=4).count("gc_pauses")
