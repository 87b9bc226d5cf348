"""The headroom analysis: bounds on hand-made scores, and end to end through a real memory home."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from benchmarks.datasets import Doc, Query, Task
from benchmarks.harness import MeasuredEmbedder
from benchmarks.headroom import (
    Scored,
    convex,
    first_hit,
    oracle_rank,
    ranked_by,
    score_task,
    summarize,
    with_sessions,
)
from memvec.embed import Embedder


def scored(
    vector: list[float],
    bm25: list[float],
    evidence: set[str],
    sessions: list[str] | None = None,
    keys: list[str] | None = None,
) -> Scored:
    keys = keys or [f"D1:{i}" for i in range(len(vector))]
    return Scored(
        keys=keys,
        sessions=np.array(sessions or ["1"] * len(keys)),
        vector=np.array(vector),
        bm25=np.array(bm25),
        evidence=evidence,
        default_tops={k: keys[:k] for k in (10, 20, 50)},
    )


def test_first_hit_counts_distinct_keys() -> None:
    keys = ["D1:1", "D1:1", "D1:1", "D1:2"]
    assert first_hit(keys, np.arange(4), {"D1:2"}) == 1
    assert first_hit(keys, np.arange(4), {"D9:9"}) is None


def test_oracle_finds_a_weight_that_default_fusion_misses() -> None:
    # vector says row 0, BM25 says row 1 strongly; the evidence (row 2) is second on the vector side only
    q = scored(vector=[0.9, 0.1, 0.8, 0.0], bm25=[0.0, 9.0, 0.0, 8.0], evidence={"D1:2"})
    assert first_hit(q.keys, ranked_by(convex(q, 0.5)), q.evidence) == 2
    assert oracle_rank(q) == 1  # weight 1.0: pure vector


def test_session_score_lifts_a_record_of_the_matching_session() -> None:
    q = scored(vector=[0.5, 0.5, 0.9, 0.1], bm25=[1.0, 1.0, 0.0, 0.0], evidence={"D1:0"}, sessions=["a", "b", "a", "b"])
    fused = convex(with_sessions(q), 0.5)
    assert fused[0] > fused[1]  # equal own scores; session "a" scores higher


def test_summary_bounds_are_ordered_on_a_real_memory_home(minilm: Embedder) -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    docs = [
        Doc("D1:1", "Caroline went to an LGBTQ support group.", "1", when, "Caroline"),
        Doc("D1:2", "Melanie painted a sunrise over the lake.", "1", when, "Melanie"),
        Doc("D2:1", "Melanie ran a charity race for mental health.", "2", when, "Melanie"),
    ]
    queries = [
        Query("q1", "What did Melanie paint?", {"D1:2"}),
        Query("q2", "Who went to a support group?", {"D1:1"}),
        Query("q3", "What did Caroline adopt?", {"D9:9"}),
    ]
    result = summarize(score_task(Task("t", "archival", docs, queries), MeasuredEmbedder(minilm)))
    assert result["ceiling"] == 2 / 3
    assert result["default R@10"] == result["default R@50"] == result["oracle weight R@10"] == 2 / 3
    assert result["misses"]["rank > 50"] == 0
