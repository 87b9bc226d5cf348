"""Index kind 'auto': flat for small tiers, hnsw-sq8 past a size, flat again below half of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvec import Memory, NewRecord, SearchRequest, Tier
from memvec.embed import HashingEmbedder
from memvec.index.files import read_manifest
from tests.conftest import CLEAN_VERIFY

BIG = 300


def records(start: int, n: int) -> list[NewRecord]:
    return [
        NewRecord(agent="ana", tier="archival", text=f"note {i} about topic {i % 13} and colour {i % 7}")
        for i in range(start, start + n)
    ]


def kind(mem: Memory) -> str:
    return mem._engine.tier_index("ana", Tier.ARCHIVAL).vector.kind


def top(mem: Memory, query: str) -> list[int]:
    return [h.id for h in mem.search(SearchRequest(agent="ana", tier="archival", query=query, k=10, mode="vector"))]


@pytest.mark.slow
def test_auto_switches_at_the_threshold_and_back_below_half(tmp_path: Path) -> None:
    embedder = HashingEmbedder(64)
    with Memory.open(tmp_path, embedder=embedder, index={"auto_hnsw_from": BIG}) as mem:
        assert mem.index_settings.kind == "auto"  # a new home
        ids = [r.record.id for r in mem.insert(records(0, BIG - 1))]
        assert kind(mem) == "flat"
        exact = {q: top(mem, q) for q in ("topic 3 colour 2", "note 17", "colour 5")}
        ids += [r.record.id for r in mem.insert(records(BIG - 1, 1))]
        assert kind(mem) == "hnsw-sq8"
        agree = sum(len(set(top(mem, q)) & set(hits)) for q, hits in exact.items()) / 30
        assert agree >= 0.8  # one more record and quantized vectors: nearly the same top 10
        for record_id in ids[: BIG // 2 - 10]:
            mem.delete_record("ana", record_id)
        top(mem, "note")  # catches up
        assert kind(mem) == "hnsw-sq8"  # above half the threshold: stays
    with Memory.open(tmp_path, embedder=embedder, index={"auto_hnsw_from": BIG}) as mem:
        assert kind(mem) == "hnsw-sq8"
        assert not mem._engine.load_reports[("ana", Tier.ARCHIVAL)].rebuilt  # the saved kind is accepted
        for record_id in ids[BIG // 2 - 10 : BIG // 2 + 1]:
            mem.delete_record("ana", record_id)
        top(mem, "note")
        assert kind(mem) == "flat"
        assert mem.verify().model_dump() == CLEAN_VERIFY
    assert read_manifest(tmp_path / "index" / "ana" / "archival").index_kind == "flat"


def test_a_fixed_kind_is_kept_whatever_the_size(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder=HashingEmbedder(64), index={"kind": "flat-sq8", "auto_hnsw_from": 10}) as mem:
        mem.insert(records(0, 50))
        assert kind(mem) == "flat-sq8"
        assert mem.verify().model_dump() == CLEAN_VERIFY


@pytest.mark.slow
def test_vector_search_on_a_compact_index_ranks_by_the_exact_vectors(tmp_path: Path) -> None:
    """hnsw-sq8 finds candidates; their float32 vectors from the store rank them: the same top 10,
    with the same scores, as exact search (the hashing embedder gives many exact ties)."""
    texts = records(0, 2_000)
    answers = {}
    for kind_name in ("flat", "hnsw-sq8"):
        with Memory.open(tmp_path / kind_name, embedder=HashingEmbedder(64), index={"kind": kind_name}) as mem:
            mem.insert(texts)
            answers[kind_name] = [
                [
                    (h.id, round(h.score, 5))
                    for h in mem.search(SearchRequest(agent="ana", tier="archival", query=q, k=10, mode="vector"))
                ]
                for q in ("topic 3 colour 2", "note 17 about", "colour 5 topic 11", "note 1999")
            ]
    for compact, exact in zip(answers["hnsw-sq8"], answers["flat"], strict=True):
        assert [score for _, score in compact] == [score for _, score in exact]  # exact scores, best first
        above_ties = exact[-1][1]  # ids tied at the 10th score may differ
        assert {i for i, s in compact if s > above_ties} == {i for i, s in exact if s > above_ties}


def test_vector_search_on_a_compact_index_gives_the_same_top_ten_at_k_10_and_k_100(tmp_path: Path) -> None:
    """Its candidates come from a pool of candidate_pool (not k) times the refine factor: a top ten
    read from 40 compressed candidates would miss what the exact vectors of 400 rank first."""
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64), index={"kind": "flat-sq8"}) as mem:
        mem.insert(records(0, 3_000))
        for query in ("topic 3 colour 2", "note 17 about", "colour 5 topic 11", "note 1999", "about topic"):
            asked = {"agent": "ana", "tier": "archival", "query": query, "mode": "vector"}
            ten, hundred = (
                [(h.id, h.score) for h in mem.search(SearchRequest.model_validate({**asked, "k": k}))]
                for k in (10, 100)
            )
            assert ten == hundred[:10], query
