from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from memvec import Memory
from memvec.search.fuse import convex, mean_ranks, min_max, ranks, rrf

finite = st.floats(-10, 10, allow_nan=False, width=32)


@given(arrays(np.float32, st.integers(1, 40), elements=finite))
def test_min_max_is_within_unit_interval_and_keeps_order(scores: np.ndarray) -> None:
    scaled = min_max(scores)
    assert scaled.min() >= 0.0 and scaled.max() <= 1.0 + 1e-6
    order = np.argsort(scores, kind="stable")
    assert np.all(np.diff(scaled[order]) >= -1e-6)


def test_min_max_of_a_constant_list() -> None:
    assert min_max(np.array([2.0, 2.0], dtype=np.float32)).tolist() == [1.0, 1.0]
    assert min_max(np.array([0.0], dtype=np.float32)).tolist() == [0.0]


def test_convex_weights_the_two_sides() -> None:
    vector = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    bm25 = np.array([0.0, 8.0, 4.0], dtype=np.float32)
    assert np.argmax(convex(vector, bm25, 1.0)) == 0
    assert np.argmax(convex(vector, bm25, 0.0)) == 1
    np.testing.assert_allclose(convex(vector, bm25, 0.5), [0.5, 0.5, 0.5])


def test_ranks_are_competition_ranks() -> None:
    assert ranks(np.array([0.1, 0.9, 0.5, 0.9])).tolist() == [4, 1, 3, 1]


def test_rrf_matches_its_definition() -> None:
    vector = np.array([0.9, 0.1, 0.5])
    bm25 = np.array([1.0, 3.0, 2.0])
    expected = [1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62]
    np.testing.assert_allclose(rrf(vector, bm25, 60), expected, rtol=1e-6)


def test_tied_scores_share_the_mean_of_their_ranks() -> None:
    assert mean_ranks(np.array([0.1, 0.9, 0.5, 0.9])).tolist() == [4, 1.5, 3, 1.5]


def test_rrf_gives_nothing_for_a_list_a_candidate_is_not_in() -> None:
    vector = np.array([0.9, 0.8, 0.1], dtype=np.float32)
    bm25 = np.array([0.0, 0.0, 5.0], dtype=np.float32)
    fused = rrf(vector, bm25, 60, in_vector=np.array([True, True, False]), in_bm25=bm25 > 0)
    np.testing.assert_allclose(fused, [1 / 61, 1 / 62, 1 / 61], rtol=1e-6)


@given(arrays(np.float32, st.integers(1, 30), elements=finite), st.data())
def test_rrf_ranks_each_list_among_its_members(scores: np.ndarray, data: st.DataObject) -> None:
    members = data.draw(arrays(np.bool_, len(scores)))
    fused = rrf(scores, np.zeros_like(scores), 60, in_vector=members, in_bm25=np.zeros_like(members))
    assert np.all(fused[~members] == 0)
    inside = scores[members]
    expected = [1 / (60 + 1 + np.sum(inside > s) + (np.sum(inside == s) - 1) / 2) for s in inside]
    np.testing.assert_allclose(fused[members], expected, rtol=1e-6)


def test_rrf_puts_the_only_bm25_match_first(real_memory: Memory) -> None:
    """Parcels whose 7-digit keys look alike to the model (as in the benchmark's key-value task): the
    key decides, and only BM25 reads it. The other parcels share only words that every parcel has,
    so they are not in BM25's list and must not outvote it with their vector ranks."""
    archival = real_memory.archival("kv")
    keys = [4_300_017 + 7_919 * n for n in range(80)]
    for n, key in enumerate(keys):
        archival.insert(f"The locker code for parcel {key} is {1000 + n * 37}.")
    for key in keys[::8]:
        for fusion in ("rrf", "convex"):
            top = archival.search(f"What is the locker code for parcel {key}?", k=10, fusion=fusion)[0]
            assert str(key) in top.text, (fusion, key, top.text)
