"""A query's top hits are the same whatever k it asks: each method brings a fixed pool of candidates
(SearchSettings.candidate_pool) for any k up to it, and the learned ranker re-orders the same best
fused candidates whatever k is. Before, the pool grew with k and fusion scales scores over the pool,
so asking for 100 hits changed the order of the first 10."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec import Memory, SearchRequest, Tier
from memvec.embed import Embedder, HashingEmbedder
from memvec.search.hybrid import EVERYTHING, rank

SUBJECTS = [
    "the boat",
    "my sister",
    "the garden",
    "our budget",
    "the new job",
    "a marathon",
    "the vet",
    "grandma's recipe",
    "the roof",
    "a trip to Lisbon",
    "the piano",
    "tax forms",
]
VERBS = [
    "talked about",
    "worried about",
    "finally fixed",
    "planned",
    "laughed at",
    "paid for",
    "forgot",
    "painted",
    "booked",
    "cancelled",
]
PERIODS_END = datetime(2024, 5, 15, 14, tzinfo=UTC)
WHEN = ["yesterday", "last week", "in May", "on Sunday", "two months ago", "this morning"]
QUERIES = [
    "what did we plan for the trip to Lisbon",
    "who paid for the roof",
    "when was the vet booked",
    "marathon training last week",
    "grandma's recipe",
    "piano lessons on Sunday",
    "who cancelled the piano lessons yesterday",
]


def turns(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(role, session, text): enough records that a pool grown with k would hold more than a fixed one."""
    rng = random.Random(seed)
    return [
        (
            rng.choice(["user", "assistant"]),
            f"s{i // 12}",
            f"{rng.choice(SUBJECTS).capitalize()}: we {rng.choice(VERBS)} {rng.choice(SUBJECTS)} {rng.choice(WHEN)}.",
        )
        for i in range(n)
    ]


def fill(mem: Memory, n: int, seed: int) -> None:
    """Turns over the 60 days before PERIODS_END, so that the periods the queries name hold some."""
    for turn, (role, session, text) in enumerate(turns(n, seed), start=1):
        said = PERIODS_END - timedelta(days=60) * (1 - turn / n)
        mem.recall("a").append(role, text, session_id=session, turn_id=turn, created_at=said)


def top_ids(mem: Memory, query: str, k: int, **options: object) -> list[int]:
    request = SearchRequest.model_validate({"agent": "a", "tier": "recall", "query": query, "k": k, **options})
    return [hit.id for hit in mem.search(request)]


@pytest.fixture(scope="module")
def six_hundred(tmp_path_factory: pytest.TempPathFactory, minilm_int8: Embedder) -> Iterator[Memory]:
    """600 turns with the real model, filled once for every search mode (only read)."""
    with Memory.open(tmp_path_factory.mktemp("home"), embedder=minilm_int8) as mem:
        fill(mem, 600, seed=3)
        yield mem


SEARCHES: list[dict[str, Any]] = [
    {},
    {"rerank": False},
    {"fusion": "rrf"},
    {"mode": "bm25"},
    {"mode": "vector"},
    {"spread_sessions": True},
    {"rerank": False, "spread_sessions": True},
    {"reference_time": PERIODS_END},  # "last week", "yesterday": that period's turns are lifted
]


@pytest.mark.parametrize(
    "options", SEARCHES, ids=["default", "fusion", "rrf", "bm25", "vector", "spread", "fusion-spread", "period"]
)
def test_the_top_ten_is_the_same_at_k_10_and_k_100_with_the_real_model(
    six_hundred: Memory, options: dict[str, Any]
) -> None:
    for query in QUERIES:
        ten, hundred = top_ids(six_hundred, query, 10, **options), top_ids(six_hundred, query, 100, **options)
        assert len(hundred) == 100 and ten == hundred[:10], query


def test_the_ranker_orders_its_depth_and_scores_never_rise(real_memory: Memory) -> None:
    fill(real_memory, 300, seed=5)
    for query in QUERIES:
        hits = real_memory.recall("a").search(query, k=100)
        assert all(h.scores.ranker is not None for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        # past the ranker's depth the hits keep fusion's order
        fused = [h.scores.fused or 0.0 for h in hits[50:]]
        assert all(h.scores.fused is not None for h in hits[50:])
        assert fused == sorted(fused, reverse=True)


def test_a_ranking_to_be_merged_keeps_its_order_and_leaves_the_hits_past_the_ranker_unscored(
    real_memory: Memory,
) -> None:
    fill(real_memory, 300, seed=5)
    engine = real_memory._engine
    index, ranker = engine.tier_index("a", Tier.RECALL), engine.ranker
    assert ranker is not None
    for query in QUERIES:
        request = SearchRequest(agent="a", tier=Tier.RECALL, query=query, k=100)
        vector = index.embedder.embed_query(query)
        scored, merged = (
            rank(index, request, engine.search_settings, EVERYTHING, vector, ranker, score_tail=tail)
            for tail in (True, False)
        )
        assert scored.ranker is not None and merged.ranker is not None
        assert merged.ids.tolist() == scored.ids.tolist() and len(merged.ids) == 100
        assert merged.ranker[: ranker.depth].tolist() == scored.ranker[: ranker.depth].tolist()
        assert np.isnan(merged.ranker[ranker.depth :]).all() and not np.isnan(scored.ranker).any()


def test_the_ranker_spreads_sessions_over_the_first_hits_when_asked(real_memory: Memory) -> None:
    fill(real_memory, 300, seed=5)
    changed = 0
    for query in QUERIES:
        plain = real_memory.recall("a").search(query, k=10)
        spread = real_memory.recall("a").search(query, k=10, spread_sessions=True)
        assert all(h.scores.ranker is not None for h in spread)
        sessions = [[h.citation.session_id for h in hits[:5]] for hits in (plain, spread)]
        assert len(set(sessions[1])) >= len(set(sessions[0])), query
        changed += sessions[0] != sessions[1]
    assert changed


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(120, 400),
    k=st.sampled_from([1, 5, 20, 60]),
    query=st.sampled_from(QUERIES),
)
@pytest.mark.slow
def test_any_k_up_to_the_pool_gives_a_prefix_of_the_largest(
    tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, k: int, query: str
) -> None:
    with Memory.open(tmp_path_factory.mktemp("home"), embedder=HashingEmbedder(64)) as mem:
        fill(mem, n, seed)
        for options in SEARCHES[1:]:
            assert top_ids(mem, query, k, **options) == top_ids(mem, query, 100, **options)[:k]
