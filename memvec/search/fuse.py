"""Score fusion for hybrid search. Both functions score the same candidate list (the union of
the vector and BM25 candidates), so a document found by only one method is still scored by both.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Scores = npt.NDArray[np.float32]


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


def rrf(vector: Scores, bm25: Scores, k: int = 60) -> Scores:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over both methods (Cormack et al. 2009)."""
    fused: Scores = (1.0 / (k + ranks(vector)) + 1.0 / (k + ranks(bm25))).astype(np.float32)
    return fused
