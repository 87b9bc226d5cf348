"""Score fusion for hybrid search. Both functions score the same candidate list (the union of
the vector and BM25 candidates), so a document found by only one method is still scored by both.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Scores = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]


def min_max(scores: Scores) -> Scores:
    """Scale to [0, 1]. A constant list carries no ranking information: it maps to all ones when
    the value is positive (a lone relevant candidate is the best one), else to all zeros."""
    scores = np.asarray(scores, dtype=np.float32)
    if len(scores) == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high - low <= 1e-12:
        return np.full_like(scores, 1.0 if high > 0 else 0.0)
    return (scores - low) / (high - low)


def convex(vector: Scores, bm25: Scores, vector_weight: float) -> Scores:
    """w * minmax(vector) + (1 - w) * minmax(bm25)."""
    return vector_weight * min_max(vector) + (1.0 - vector_weight) * min_max(bm25)


def ranks(scores: Scores) -> npt.NDArray[np.int64]:
    """1-based competition rank of each score (best = 1; equal scores share the better rank)."""
    negated = -np.asarray(scores, dtype=np.float64)
    return np.searchsorted(np.sort(negated), negated, side="left").astype(np.int64) + 1


def rrf(
    vector: Scores, bm25: Scores, k: int = 60, *, in_vector: Mask | None = None, in_bm25: Mask | None = None
) -> Scores:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over both methods (Cormack et al. 2009). A
    candidate outside a method's own list (`in_vector` / `in_bm25`, default: all in) gets nothing
    from that method, and the ranks are counted among that list's members only: a union member that
    BM25 did not find must not share a rank with the ones it found."""
    return (_reciprocal_ranks(vector, in_vector, k) + _reciprocal_ranks(bm25, in_bm25, k)).astype(np.float32)


def mean_ranks(scores: Scores) -> npt.NDArray[np.float64]:
    """1-based rank of each score, tied scores sharing the mean of the ranks they span: a block of
    equal scores (say, records that match no query word at all) carries no order, so none of them
    takes the best rank of the block."""
    negated = -np.asarray(scores, dtype=np.float64)
    ordered = np.sort(negated)
    first = np.searchsorted(ordered, negated, side="left")
    last = np.searchsorted(ordered, negated, side="right")
    result: npt.NDArray[np.float64] = (first + last + 1) / 2.0
    return result


def _reciprocal_ranks(scores: Scores, members: Mask | None, k: int) -> npt.NDArray[np.float64]:
    out = np.zeros(len(scores), dtype=np.float64)
    inside = np.ones(len(scores), dtype=bool) if members is None else np.asarray(members, dtype=bool)
    out[inside] = 1.0 / (k + mean_ranks(np.asarray(scores)[inside]))
    return out
