"""FAISS index against brute force: Flat must equal it, HNSW must reach recall >= 0.95."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec.embed.base import l2_normalize
from memvec.index.vector import VectorIndex


def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    return l2_normalize(np.random.default_rng(seed).standard_normal((n, dim)))


def brute_force(data: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = data @ query
    return ids[np.argsort(-scores, kind="stable")[:k]]


KINDS = ["flat", "hnsw", "flat-fp16", "hnsw-fp16", "flat-sq8", "hnsw-sq8"]


def test_flat_equals_brute_force() -> None:
    data, queries = unit_vectors(3000, 48, 1), unit_vectors(50, 48, 2)
    ids = np.arange(100, 3100, dtype=np.int64)
    index = VectorIndex(48, kind="flat")
    index.add(ids, data)
    for query in queries:
        found, scores = index.search(query, 10)
        np.testing.assert_array_equal(found, brute_force(data, ids, query, 10))
        np.testing.assert_allclose(scores, np.sort(data @ query)[::-1][:10], rtol=1e-5)


def hnsw_recall(index: VectorIndex, data: np.ndarray, ids: np.ndarray, queries: np.ndarray, k: int) -> float:
    hits = 0
    for query in queries:
        found, _ = index.search(query, k)
        hits += len(set(found.tolist()) & set(brute_force(data, ids, query, k).tolist()))
    return hits / (k * len(queries))


@pytest.mark.slow
def test_hnsw_recall_against_brute_force_is_at_least_095() -> None:
    data, queries = unit_vectors(20000, 64, 3), unit_vectors(200, 64, 4)
    ids = np.arange(1, 20001, dtype=np.int64)
    index = VectorIndex(64, kind="hnsw")
    index.add(ids, data)
    assert hnsw_recall(index, data, ids, queries, 10) >= 0.95


@pytest.mark.parametrize(
    ("kind", "floor", "bytes_saved"),
    [("flat-fp16", 0.99, 2), ("hnsw-fp16", 0.95, 2), ("flat-sq8", 0.95, 3), ("hnsw-sq8", 0.95, 3)],
)
@pytest.mark.slow
def test_compact_recall_against_exact_float32(kind: str, floor: float, bytes_saved: int) -> None:
    """Half (fp16) or a quarter (sq8) of the memory per vector, and the top 10 still agrees with
    exact float32 search."""
    data, queries = unit_vectors(20000, 64, 3), unit_vectors(200, 64, 4)
    ids = np.arange(1, 20001, dtype=np.int64)
    index = VectorIndex(64, kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    assert hnsw_recall(index, data, ids, queries, 10) >= floor
    exact = VectorIndex(64, kind="flat" if kind.startswith("flat") else "hnsw")
    exact.add(ids, data)
    saved = len(faiss_bytes(exact)) - len(faiss_bytes(index))
    assert saved >= 0.99 * len(ids) * 64 * bytes_saved  # of the 4 bytes per dimension (the HNSW graph stays)


@pytest.mark.parametrize("kind", ["flat-sq8", "hnsw-sq8"])
@pytest.mark.slow
def test_sq8_learns_usable_bounds_from_a_single_first_vector(kind: str) -> None:
    """A tier that starts with one record: its bounds must not clip the vectors that follow."""
    data, queries = unit_vectors(5000, 64, 9), unit_vectors(100, 64, 10)
    ids = np.arange(1, 5001, dtype=np.int64)
    index = VectorIndex(64, kind=kind)  # type: ignore[arg-type]
    index.add(ids[:1], data[:1])
    index.add(ids[1:], data[1:])
    assert hnsw_recall(index, data, ids, queries, 10) >= 0.95
    np.testing.assert_allclose(index.vectors_for(ids[-5:]), data[-5:], atol=index.tolerance)


def faiss_bytes(index: VectorIndex) -> bytes:
    from memvec.index.vector import faiss

    return bytes(faiss.serialize_index(index._index))


@pytest.mark.parametrize("kind", KINDS)
def test_remove_without_rebuild(kind: str) -> None:
    data = unit_vectors(500, 16, 5)
    ids = np.arange(1, 501, dtype=np.int64)
    index = VectorIndex(16, kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    index.remove(ids[:100])
    assert len(index) == 400
    np.testing.assert_array_equal(index.ids(), ids[100:])
    for query in data[:100]:  # each removed vector would have been its own best match
        found, _ = index.search(query, 5)
        assert not set(found.tolist()) & set(ids[:100].tolist())
    assert not index.vectors_for(ids[:1]).any()


@pytest.mark.parametrize("kind", KINDS)
def test_filtered_search_is_exact_over_the_allowed_ids(kind: str) -> None:
    data, query = unit_vectors(2000, 32, 6), unit_vectors(1, 32, 7)[0]
    ids = np.arange(1, 2001, dtype=np.int64)
    index = VectorIndex(32, kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    allowed = ids[::97]
    found, _ = index.search(query, 5, allowed=allowed)
    mask = np.isin(ids, allowed)
    np.testing.assert_array_equal(found, brute_force(data[mask], ids[mask], query, 5))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("share", [1, 2, 50])
def test_filtered_search_scores_every_allowed_stored_vector_and_skips_the_rest(kind: str, share: int) -> None:
    """Over the stored (for compact kinds, decoded) vectors: removed ids and ids never added are not
    found even when allowed, and no allowed vector is missed whatever share of the tier is allowed."""
    data, query = unit_vectors(1500, 32, 16), unit_vectors(1, 32, 17)[0]
    ids = np.arange(1, 1501, dtype=np.int64) * 2
    index = VectorIndex(32, kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    index.remove(ids[:40])
    allowed = np.r_[ids[::share], [3, 5, 100_001]]  # odd ids were never added
    found, scores = index.search(query, 50, allowed=allowed)
    alive = ids[40:][np.isin(ids[40:], allowed)]
    stored = index.vectors_for(alive) @ query
    expected = alive[np.lexsort((alive, -stored))][:50]
    assert found.tolist() == expected.tolist()
    np.testing.assert_allclose(scores, np.sort(stored)[::-1][:50], atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_save_load_round_trip(tmp_path: Path, kind: str) -> None:
    data = unit_vectors(300, 24, 8)
    ids = np.arange(10, 310, dtype=np.int64)
    index = VectorIndex(24, kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    index.remove(ids[:3])
    index.save(tmp_path / "v.npz")
    loaded = VectorIndex.load(tmp_path / "v.npz")
    assert (loaded.kind, loaded.dim, len(loaded)) == (kind, 24, 297)
    np.testing.assert_array_equal(loaded.search(data[50], 7)[0], index.search(data[50], 7)[0])
    np.testing.assert_allclose(loaded.vectors_for(ids[3:6]), data[3:6], atol=index.tolerance)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 20), seed=st.integers(0, 10_000))
def test_property_flat_top_k_matches_brute_force(n: int, k: int, seed: int) -> None:
    data, query = unit_vectors(n, 8, seed), unit_vectors(1, 8, seed + 1)[0]
    ids = np.arange(n, dtype=np.int64) * 3 + 1
    index = VectorIndex(8)
    index.add(ids, data)
    found, scores = index.search(query, k)
    expected = np.sort(data @ query)[::-1][:k]
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)
    assert len(found) == min(n, k)
