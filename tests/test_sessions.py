"""Session-level scores: the incremental table against a brute-force recomputation, on disk, and
through search (hashing embedder for the mechanics, the real MiniLM for the effect)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec import Memory, NewRecord, SearchRequest
from memvec.embed import Embedder, HashingEmbedder
from memvec.index.sessions import SessionTable
from tests.conftest import CLEAN_VERIFY

DIM = 8
# (op, record id, session): add with a session (None: no session) or remove
Ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 30), st.sampled_from(["s1", "s2", "s3", None])),
    max_size=80,
)


def vector_of(record_id: int) -> np.ndarray:
    return np.random.default_rng(record_id).standard_normal(DIM).astype(np.float32)


def replay(ops: list[tuple[str, int, str | None]]) -> tuple[SessionTable, dict[int, str]]:
    """Apply ops to a table and to a plain dict of live members (the reference)."""
    table, members = SessionTable(DIM), {}
    live: set[int] = set()
    for op, record_id, session in ops:
        ids = np.array([record_id], dtype=np.int64)
        if op == "add" and record_id not in live:
            table.add(ids, [session], vector_of(record_id)[None])
            live.add(record_id)
            if session is not None:
                members[record_id] = session
        elif op == "remove" and record_id in live:
            table.remove(ids, vector_of(record_id)[None])
            live.discard(record_id)
            members.pop(record_id, None)
    return table, members


def expected_means(members: dict[int, str], score: dict[int, float]) -> dict[str, float]:
    by_session: dict[str, list[float]] = {}
    for record_id, session in members.items():
        by_session.setdefault(session, []).append(score.get(record_id, 0.0))
    return {session: float(np.mean(values)) for session, values in by_session.items()}


@settings(max_examples=150, deadline=None)
@given(Ops, st.integers(0, 1000))
def test_session_means_match_brute_force(ops: list[tuple[str, int, str | None]], seed: int) -> None:
    table, members = replay(ops)
    query = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    ids = np.array(sorted(members), dtype=np.int64)
    rows = table.rows_for(ids)
    vector_spread = table.spread(rows, table.vector_means(query, rows), np.zeros(len(ids), np.float32))
    cosines = {i: float(vector_of(i) @ query) for i in members}
    means = expected_means(members, cosines)
    np.testing.assert_allclose(vector_spread, [means[members[i]] for i in ids.tolist()], rtol=1e-4, atol=1e-4)
    matched = ids[::2]  # BM25: only some records score, the rest count as 0
    bm25 = {i: float(i % 7 + 1) for i in matched.tolist()}
    matched_scores = np.array([bm25[i] for i in matched.tolist()], np.float32)
    means_per_record = table.score_means(table.rows_for(matched), matched_scores, rows)
    got = table.spread(rows, means_per_record, np.zeros(len(ids), np.float32))
    means = expected_means(members, bm25)
    np.testing.assert_allclose(got, [means[members[i]] for i in ids.tolist()], rtol=1e-5)
    assert len(table) == len(members)
    np.testing.assert_array_equal(table.rows_for(np.array([999], dtype=np.int64)), [-1])
    lone = np.array([999], dtype=np.int64)  # no session: its own score stands for its session's
    lone_rows = table.rows_for(lone)
    lone_score = table.spread(lone_rows, table.vector_means(query, lone_rows), np.array([0.25], np.float32))
    assert lone_score[0] == np.float32(0.25)


@settings(max_examples=30, deadline=None)
@given(Ops)
def test_session_table_round_trips_through_its_file(tmp_path_factory: object, ops: list[Any]) -> None:
    table, members = replay(ops)
    path = Path(str(tmp_path_factory.mktemp("sessions"))) / "sessions.npz"  # type: ignore[attr-defined]
    table.save(path)
    loaded = SessionTable.load(path)
    query = np.ones(DIM, dtype=np.float32)
    ids = np.array([*sorted(members), 999], dtype=np.int64)
    own = np.arange(len(ids), dtype=np.float32)
    loaded_rows, rows = loaded.rows_for(ids), table.rows_for(ids)
    np.testing.assert_allclose(
        loaded.spread(loaded_rows, loaded.vector_means(query, loaded_rows), own),
        table.spread(rows, table.vector_means(query, rows), own),
        rtol=1e-6,
    )
    loaded.add(np.array([1000], dtype=np.int64), ["s9"], vector_of(1000)[None])  # still growable
    assert len(loaded) == len(members) + 1


def conversation(agent: str) -> list[NewRecord]:
    """Two sessions; the turn that answers says little by itself, the other session's says more."""
    start = datetime(2024, 3, 1, tzinfo=UTC)
    turns = {
        "camping": [
            "We drove to the lake for a camping trip with the tent.",
            "The camping trip had a campfire by the lake every night.",
            "My daughter chose when we would go.",
        ],
        "interview": [
            "I had a job interview at the bank today.",
            "The interview panel asked about spreadsheets.",
            "My manager picked the date for it.",
        ],
    }
    return [
        NewRecord(
            agent=agent,
            tier="recall",
            text=text,
            role="user",
            created_at=start + timedelta(hours=i),
            citation={"session_id": session, "turn_id": str(i)},
        )
        for session, texts in turns.items()
        for i, text in enumerate(texts)
    ]


def rank_of(home: Path, embedder: Embedder, session_weight: float, query: str) -> dict[str, int]:
    with Memory.open(home, embedder=embedder, search={"session_weight": session_weight}) as mem:
        mem.insert(conversation("ana"))
        hits = mem.search(SearchRequest(agent="ana", tier="recall", query=query, k=6))
        return {h.text: rank for rank, h in enumerate(hits)}


def test_session_score_lifts_the_turn_of_the_matching_session(tmp_path: Path, minilm: Embedder) -> None:
    query = "Who decided the date of the camping trip?"
    answer, other = "My daughter chose when we would go.", "My manager picked the date for it."
    plain = rank_of(tmp_path / "plain", minilm, 0.0, query)
    assert plain[answer] > plain[other]  # on its own the other session's turn looks better
    lifted = rank_of(tmp_path / "lifted", minilm, 1.0, query)  # the default
    assert lifted[answer] < lifted[other]


def test_deleting_a_record_updates_its_session_and_survives_reopen(home: Path) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        results = mem.insert(conversation("ana"))
        index = mem._engine.tier_index("ana", results[0].record.tier)
        assert len(index.sessions) == 6
        mem.delete_record("ana", results[0].record.id)
        mem.search(SearchRequest(agent="ana", tier="recall", query="camping"))
        assert len(index.sessions) == 5
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        index = mem._engine.tier_index("ana", results[0].record.tier)
        assert len(index.sessions) == 5
        assert mem.verify().model_dump() == CLEAN_VERIFY


def test_live_session_scores_equal_a_rebuild_after_deletes_compaction_and_adds(home: Path, tmp_path: Path) -> None:
    """The session part of the fused score, kept up incrementally, equals a from-scratch build."""

    def check(mem: Memory) -> None:
        request = SearchRequest(agent="ana", tier="archival", query="note about topic 3", k=20)
        live = [(h.id, round(h.score, 5)) for h in mem.search(request)]
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(home, copy, ignore=shutil.ignore_patterns("index"))
        with Memory.open(copy, embedder=HashingEmbedder(64)) as fresh:
            assert live == [(h.id, round(h.score, 5)) for h in fresh.search(request)]

    records = [
        NewRecord(
            agent="ana",
            tier="archival",
            text=f"note {i} about topic {i % 7}",
            citation={"session_id": f"doc{i % 9}"} if i % 5 else {},
        )
        for i in range(120)
    ]
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        ids = [r.record.id for r in mem.insert(records)]
        check(mem)
        for record_id in ids[:20]:  # dead slots stay until the save compacts them
            mem.delete_record("ana", record_id)
        check(mem)
        mem._engine.tier_index("ana", records[0].tier).save()
        check(mem)
        for record_id in ids[20:70]:  # below 75% live slots: the BM25 index compacts at once
            mem.delete_record("ana", record_id)
        check(mem)
        mem.insert(
            [NewRecord(agent="ana", tier="archival", text="late note about topic 3", citation={"session_id": "doc3"})]
        )
        check(mem)


def test_a_record_without_a_session_is_not_outranked_for_lacking_one(home: Path) -> None:
    records = [
        NewRecord(agent="ana", tier="archival", text="alpha beta"),  # no session
        *(
            NewRecord(agent="ana", tier="archival", text=text, citation={"session_id": "s"})
            for text in ("alpha gamma", "delta epsilon", "zeta eta")
        ),
    ]
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.insert(records)
        hits = mem.search(SearchRequest(agent="ana", tier="archival", query="alpha", vector_weight=0.0))
        assert hits[0].scores.bm25 == hits[1].scores.bm25  # equal on their own
        assert hits[0].text == "alpha beta"  # its session (itself) matches better than "s" does
