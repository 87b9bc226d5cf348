from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from memvec.search.fuse import convex, min_max, ranks, rrf

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
