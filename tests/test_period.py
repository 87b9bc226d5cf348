"""A period named in the query as a ranking signal (#35 item 6): the period's records rise, none is
dropped, the top k is the same whatever k, and every surface can turn it off."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.embed.base import Vectors
from memvec.index.lexical import BM25Index, QueryScores
from memvec.search.hybrid import Ranked
from memvec.search.period import with_period
from memvec.service.app import create_app
from tests.conftest import run_cli

REFERENCE = datetime(2024, 5, 15, 14, 0, tzinfo=UTC)  # a Wednesday: "two weeks ago" is April 29 - May 5
CREATED = datetime(2024, 1, 1, tzinfo=UTC)


def ranked(records: list[int] | tuple[int, ...]) -> Ranked:
    """A ranking of `records`, best first, each with a raw vector part."""
    scores = np.linspace(1.0, 0.5, len(records), dtype=np.float32)
    return Ranked(np.array(records, dtype=np.int64), scores, vector=(scores / 2).astype(np.float32))


rankings = st.lists(st.integers(1, 40), unique=True, max_size=25)


@given(rankings, rankings, st.integers(1, 30), st.integers(1, 30))
def test_fused_rankings_keep_every_hit_once_in_falling_score_and_any_k_is_a_prefix(
    everything: list[int], in_period: list[int], small: int, large: int
) -> None:
    small, large = sorted((small, large))
    merged = with_period(ranked(everything), ranked(in_period), large, 60)
    ids = merged.ids.tolist()
    assert len(ids) == len(set(ids)) == min(large, len(set(everything) | set(in_period)))
    assert all(a >= b for a, b in itertools.pairwise(merged.score.tolist()))
    assert with_period(ranked(everything), ranked(in_period), small, 60).ids.tolist() == ids[:small]
    outside = [r for r in ids if r not in in_period]
    assert outside == [r for r in everything if r in outside]  # the rest keep their order
    parts = merged.method_scores()
    assert all((part.period is not None) == (r in in_period) for part, r in zip(parts, ids, strict=True))
    # each row keeps its own parts: the fused score it had (no ranker here) and its raw vector score
    own = {
        r: (s, s / 2)
        for rank in (in_period, everything)
        for r, s in zip(rank, ranked(rank).score.tolist(), strict=True)
    }
    assert all((part.fused, part.vector) == own[r] for part, r in zip(parts, ids, strict=True))


def reference_with_period(everything: Ranked, in_period: Ranked, k: int, rrf_k: int) -> tuple[list[int], list[float]]:
    """The merge written out record by record: the ids and scores with_period must give."""
    place = {int(r): n for n, r in enumerate(everything.ids)}
    inside = {int(r): n for n, r in enumerate(in_period.ids)}

    def fused(record: int) -> float:
        return sum(1.0 / (rrf_k + ranks[record] + 1) for ranks in (place, inside) if record in ranks)

    records = list(dict.fromkeys([*place, *inside]))
    order = sorted(records, key=lambda r: (-fused(r), place.get(r, len(place)), r))[:k]
    return order, [float(np.float32(fused(r))) for r in order]


def with_nan_ranker(records: list[int], depth: int) -> Ranked:
    """A ranking whose ranker part is NaN past `depth`, as a ranking to be merged leaves it."""
    scores = np.linspace(0.9, 0.1, len(records), dtype=np.float32)
    ranker = np.where(np.arange(len(records)) < depth, scores, np.nan).astype(np.float32)
    return Ranked(np.array(records, dtype=np.int64), scores, ranker=ranker, fused=scores[::-1].copy())


@given(rankings, rankings, st.integers(1, 30), st.integers(0, 25), st.integers(0, 25), st.integers(1, 80))
def test_the_merge_matches_the_record_by_record_definition(
    everything: list[int], in_period: list[int], k: int, depth: int, period_depth: int, rrf_k: int
) -> None:
    first, second = with_nan_ranker(everything, depth), with_nan_ranker(in_period, period_depth)
    merged = with_period(first, second, k, rrf_k)
    ids, scores = reference_with_period(first, second, k, rrf_k)
    assert merged.ids.tolist() == ids and merged.score.tolist() == scores
    parts = {name: [getattr(r, name) for r in (first, second)] for name in ("ranker", "fused")}
    for row, record in enumerate(ids):
        at = [r.ids.tolist().index(record) if record in r.ids.tolist() else None for r in (first, second)]
        rankers = [float(c[i]) for c, i in zip(parts["ranker"], at, strict=True) if c is not None and i is not None]
        fused = [float(c[i]) for c, i in zip(parts["fused"], at, strict=True) if c is not None and i is not None]
        shown = merged.method_scores()[row]
        assert shown.ranker == next((v for v in rankers if not np.isnan(v)), None) and shown.fused == fused[0]


def test_with_no_record_in_the_period_the_ranking_is_unchanged() -> None:
    assert with_period(ranked((5, 3, 9, 1)), ranked(()), 10, 60).ids.tolist() == [5, 3, 9, 1]


def test_a_record_of_the_period_rises_above_its_equals() -> None:
    merged = with_period(ranked((1, 2, 3, 4)), ranked((3, 7)), 10, 60)
    # 7 only the period's ranking found (second there): it ties with 2, second over everything, behind it
    assert merged.ids.tolist() == [3, 1, 2, 7, 4]


def test_a_hit_past_one_rankings_ranker_depth_shows_the_ranker_score_of_the_other() -> None:
    # a ranking to be merged leaves its ranker part NaN past the ranker's depth (rank's score_tail)
    nan = np.float32(np.nan)
    everything = Ranked(np.array([1, 2, 3], dtype=np.int64), np.ones(3, np.float32), ranker=np.array([0.9, 0.8, nan]))
    in_period = Ranked(np.array([3, 4], dtype=np.int64), np.ones(2, np.float32), ranker=np.array([0.7, 0.6]))
    merged = with_period(everything, in_period, 10, 60)
    shown = {int(r): part.ranker for r, part in zip(merged.ids, merged.method_scores(), strict=True)}
    assert shown == {1: pytest.approx(0.9), 2: pytest.approx(0.8), 3: pytest.approx(0.7), 4: pytest.approx(0.6)}


def purchases(memory: Memory) -> None:
    recall = memory.recall("ana")
    for day, text in (
        (2, "I bought a blue bike helmet at the market"),  # two weeks before REFERENCE's week
        (9, "I bought a bike helmet for my nephew"),
        (13, "I bought bike helmet stickers"),
        (20, "I bought a bike helmet, the best bike helmet"),
    ):
        recall.append("user", text, created_at=datetime(2024, 4 if day > 15 else 5, day, 12, tzinfo=UTC))


def test_a_search_lifts_the_period_its_query_names_and_drops_nothing(memory: Memory) -> None:
    purchases(memory)
    recall = memory.recall("ana")
    asked = "which bike helmet did I buy two weeks ago?"
    lifted = recall.search(asked, k=10, reference_time=REFERENCE)
    assert lifted[0].text == "I bought a blue bike helmet at the market"
    assert lifted[0].scores.period is not None and all(h.scores.period is None for h in lifted[1:])
    plain = recall.search(asked, k=10, reference_time=REFERENCE, boost_dates_in_query=False)
    assert plain[0].text != lifted[0].text and {h.id for h in plain} == {h.id for h in lifted}
    assert all(h.scores.period is None for h in plain)
    assert lifted[0].scores.fused == next(h.score for h in plain if h.id == lifted[0].id)  # still readable
    assert [h.id for h in recall.search(asked, k=2, reference_time=REFERENCE)] == [h.id for h in lifted[:2]]
    elsewhere = recall.search(asked, k=10, reference_time=datetime(2020, 1, 1, tzinfo=UTC))
    # a period with no record, or with all of them, changes nothing: not even a score
    assert [(h.id, h.score) for h in elsewhere] == [(h.id, h.score) for h in plain]
    this_year = recall.search("which bike helmet did I buy this year?", k=10, reference_time=REFERENCE)
    unlifted = recall.search(
        "which bike helmet did I buy this year?", k=10, reference_time=REFERENCE, boost_dates_in_query=False
    )
    assert [(h.id, h.score, h.scores.period) for h in this_year] == [(h.id, h.score, None) for h in unlifted]
    may_first, may_fourth = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 4, tzinfo=UTC)
    narrowed = recall.search(asked, reference_time=REFERENCE, start=may_first, end=may_fourth)  # one record, in it
    assert [h.text for h in narrowed] == [lifted[0].text] and narrowed[0].scores.period is None
    since_may = recall.search(asked, k=10, reference_time=REFERENCE, start=may_first)
    assert since_may[0].text == lifted[0].text and since_may[0].scores.period is not None
    assert next(h.id for h in recall.search(asked, k=10, mode="bm25", reference_time=REFERENCE)) == plain[0].id


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.queries: list[str] = []

    def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        return super().embed_query(text)


def test_both_rankings_of_a_period_share_one_query_vector_and_one_bm25_scoring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder, scored = CountingEmbedder(), []
    query_scores = BM25Index.query_scores

    def counted(index: BM25Index, query: str) -> QueryScores:
        scored.append(query)
        return query_scores(index, query)

    monkeypatch.setattr(BM25Index, "query_scores", counted)
    with Memory.open(tmp_path / "home", embedder=embedder, query_cache_size=0) as mem:  # every call a pass
        purchases(mem)
        asked = "which bike helmet did I buy two weeks ago?"
        lifted = mem.recall("ana").search(asked, k=10, reference_time=REFERENCE)
    assert lifted[0].scores.period is not None and embedder.queries == scored == [asked]


def test_over_http_a_search_takes_boost_dates_in_query(memory: Memory) -> None:
    purchases(memory)
    asked = {"query": "which bike helmet did I buy two weeks ago?", "reference_time": REFERENCE.isoformat()}
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        lifted = api.get("/v1/agents/ana/recall-memory/search", params=asked)
        plain = api.get("/v1/agents/ana/recall-memory/search", params={**asked, "boost_dates_in_query": "false"})
    assert lifted.status_code == plain.status_code == 200, lifted.text
    first, other = lifted.json()["results"][0], plain.json()["results"][0]
    assert first["content"] == "I bought a blue bike helmet at the market" != other["content"]
    assert first["scores"]["period"] > 0 and other["scores"]["period"] is None


def test_the_command_line_lifts_the_period_with_the_real_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_cli("agent", "create", "ana", home=home)
    for when, text in (
        ("2024-05-01T10:00:00Z", "We talked about the garden and the new roses."),
        ("2024-05-10T10:00:00Z", "We talked about the garden and planting tomatoes."),
        ("2024-05-14T10:00:00Z", "We talked about the garden fence."),
    ):
        run_cli("add", text, "--agent", "ana", "--tier", "recall", "--role", "user", "--created-at", when, home=home)
    asked = ["search", "what did we say about the garden two weeks ago?", "--agent", "ana", "--tier", "recall"]
    at = ["--reference-time", REFERENCE.isoformat(), "--json"]
    lifted = json.loads(run_cli(*asked, *at, home=home).stdout)
    plain = json.loads(run_cli(*asked, *at, "--no-date-boost", home=home).stdout)
    assert lifted[0]["text"] == "We talked about the garden and the new roses."
    assert lifted[0]["scores"]["period"] > 0 and all(h["scores"]["period"] is None for h in plain)
    assert {h["id"] for h in lifted} == {h["id"] for h in plain}
