"""The engine through the Python API, with the deterministic hashing embedder."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memvec import (
    AgentExistsError,
    CoreBlock,
    CoreMemoryError,
    InvalidInputError,
    Memory,
    NewRecord,
    NotFoundError,
    Tier,
)
from memvec.embed import HashingEmbedder
from memvec.types import AgentSettings, Hit


def test_insert_search_round_trips_citations(memory: Memory) -> None:
    archival = memory.archival("app")
    result = archival.insert(
        "The Eiffel tower is 330 metres tall",
        tags=["paris", "facts"],
        source_url="https://example.org/eiffel",
        session_id="s1",
        turn_id=4,
    )
    assert result.created
    hit = archival.search("how tall is the eiffel tower", k=1)[0]
    assert hit.id == result.record.id
    assert hit.citation.model_dump() == {
        "session_id": "s1",
        "turn_id": "4",
        "source_url": "https://example.org/eiffel",
        "document": None,
    }
    assert hit.tags == ["paris", "facts"]
    assert hit.scores.vector is not None and hit.scores.bm25 is not None
    assert archival.get(result.record.id).text == result.record.text


def test_exact_duplicates_are_not_stored_twice(memory: Memory) -> None:
    archival = memory.archival("app")
    first = archival.insert("Paris is in France")
    again = archival.insert("  paris IS in   france ")
    assert not again.created and again.record.id == first.record.id
    batch = archival.insert_many(
        [
            NewRecord(agent="app", tier=Tier.ARCHIVAL, text="new fact"),
            NewRecord(agent="app", tier=Tier.ARCHIVAL, text="New fact"),
        ]
    )
    assert [r.created for r in batch] == [True, False]
    assert batch[0].record.id == batch[1].record.id
    assert archival.count() == 2
    # the same words in two recall turns are two messages
    recall = memory.recall("app")
    recall.append("user", "ok", session_id="s", turn_id=1)
    recall.append("user", "ok", session_id="s", turn_id=2)
    assert recall.count() == 2


def test_filters_tags_dates_session_and_role(memory: Memory) -> None:
    archival = memory.archival("app")

    def day(d: int) -> datetime:
        return datetime(2024, 1, d, tzinfo=UTC)

    archival.insert("alpha report on rockets", tags=["space", "draft"], created_at=day(1))
    archival.insert("beta report on rockets", tags=["space"], created_at=day(10))
    archival.insert("gamma report on rockets", tags=["draft"], created_at=day(20))

    def texts(hits: list[Hit]) -> list[str]:
        return sorted(h.text.split()[0] for h in hits)

    for mode in ("hybrid", "vector", "bm25", "token"):
        assert texts(archival.search("rockets report", mode=mode, tags=["space"])) == ["alpha", "beta"]
        both = archival.search("rockets report", mode=mode, tags=["space", "draft"], tag_match="all")
        assert texts(both) == ["alpha"]
        assert texts(archival.search("rockets report", mode=mode, start=day(5), end=day(15))) == ["beta"]
    recall = memory.recall("app")
    recall.append("user", "I like green tea", session_id="s1")
    recall.append("assistant", "green tea noted", session_id="s1")
    recall.append("user", "green tea again", session_id="s2")
    assert {h.role for h in recall.search("green tea", roles=["assistant"])} == {"assistant"}
    assert {h.citation.session_id for h in recall.search("green tea", session_id="s2")} == {"s2"}


def test_agents_are_isolated_in_results_and_scores(memory: Memory) -> None:
    alice, bob = memory.archival("alice"), memory.archival("bob")
    alice.insert("the secret launch code is swordfish")
    bob.insert("bob likes swordfish sushi")
    before = [(h.id, h.score, h.scores) for h in bob.search("swordfish", mode="bm25")]
    for i in range(50):  # many documents in alice would change bob's idf if statistics were shared
        alice.insert(f"swordfish note number {i}")
    after = [(h.id, h.score, h.scores) for h in bob.search("swordfish", mode="bm25")]
    assert before == after
    for mode in ("hybrid", "vector", "bm25", "token"):
        assert all(h.agent == "bob" for h in bob.search("secret launch code", mode=mode))
    with pytest.raises(NotFoundError):
        bob.get(alice.list(limit=1)[0].id)


def test_delete_removes_from_both_indexes(memory: Memory) -> None:
    archival = memory.archival("app")
    keep = archival.insert("keep this memory about volcanoes")
    gone = archival.insert("delete this memory about volcanoes")
    archival.delete(gone.record.id)
    for mode in ("hybrid", "vector", "bm25", "token"):
        assert [h.id for h in archival.search("volcanoes memory", mode=mode)] == [keep.record.id]
    with pytest.raises(NotFoundError):
        archival.delete(gone.record.id)


def test_a_keyword_only_match_can_win_in_hybrid(memory: Memory) -> None:
    archival = memory.archival("app")
    for i in range(40):
        archival.insert(f"meeting notes about the quarterly budget review, item {i}")
    target = archival.insert("XK9-PLUTONIUM")
    hybrid = archival.search("quarterly budget XK9-PLUTONIUM", k=3)
    assert target.record.id in [h.id for h in hybrid]


def test_search_validates_input(memory: Memory) -> None:
    archival = memory.archival("app")
    with pytest.raises(ValueError):
        archival.search("", k=3)
    with pytest.raises(ValueError):
        archival.search("x", k=0)
    with pytest.raises(ValueError):
        archival.search("x", mode="fuzzy")
    with pytest.raises(InvalidInputError):
        memory.archival("bad agent")


def test_another_process_writes_are_seen(home: Path) -> None:
    writer = Memory.open(home, embedder=HashingEmbedder(64))
    reader = Memory.open(home, embedder=HashingEmbedder(64))
    reader.archival("app").search("anything")  # loads the (empty) index
    record = writer.archival("app").insert("written by the other process").record
    assert [h.id for h in reader.archival("app").search("other process")] == [record.id]
    writer.archival("app").delete(record.id)
    assert reader.archival("app").search("other process") == []
    writer.close()
    reader.close()


def test_core_memory_blocks(memory: Memory, home: Path) -> None:
    core = memory.core("app")
    core.ensure_defaults()
    assert [b.label for b in core.blocks()] == ["persona", "human"]
    core.put(CoreBlock(label="human", value="Name: Ana", limit=30))
    core.append("human", "Likes tea")
    core.replace("human", "tea", "coffee")
    assert core.get("human").value == "Name: Ana\nLikes coffee"
    with pytest.raises(CoreMemoryError, match="limit is 30"):
        core.append("human", "x" * 30)
    with pytest.raises(CoreMemoryError, match="does not occur"):
        core.replace("human", "juice", "water")
    core.put(CoreBlock(label="rules", value="be kind", read_only=True))
    with pytest.raises(CoreMemoryError, match="read-only"):
        core.append("rules", "and fast")
    with pytest.raises(NotFoundError, match="no core memory block 'nope'"):
        core.append("nope", "x")
    assert '<human characters="22/30">' in core.render()
    memory.close()
    reopened = Memory.open(home, embedder=HashingEmbedder(64))
    assert reopened.core("app").get("human").value == "Name: Ana\nLikes coffee"
    reopened.close()


def test_recall_lists_in_time_order(memory: Memory) -> None:
    recall = memory.recall("app")
    for i, when in enumerate([3, 1, 2]):
        recall.append("user", f"message {i}", created_at=datetime(2024, 1, when, tzinfo=UTC))
    assert [r.text for r in recall.list()] == ["message 1", "message 2", "message 0"]
    assert [r.text for r in recall.list(newest_first=True, limit=1)] == ["message 0"]


def test_indexes_hold_exactly_the_store(memory: Memory) -> None:
    archival = memory.archival("app")
    ids = [archival.insert(f"fact number {i}").record.id for i in range(30)]
    for record_id in ids[::4]:
        archival.delete(record_id)
    index = memory._engine.tier_index("app", Tier.ARCHIVAL)
    assert index.disagreement() == ""
    np.testing.assert_array_equal(index.vector.ids(), np.sort(memory._store.ids("app", Tier.ARCHIVAL)))


def test_recall_messages_are_indexed_with_the_previous_message_of_their_session(memory: Memory) -> None:
    recall = memory.recall("app")
    recall.append("user", "Where did you go on holiday?", session_id="s1", turn_id=1)
    reply = recall.append("assistant", "Lisbon, with my sister.", session_id="s1", turn_id=2).record
    recall.append("user", "Unrelated message in another session", session_id="s2", turn_id=1)
    # the reply does not say "holiday"; its context (the question) does, at a lower BM25 weight
    hits = recall.search("holiday", mode="bm25")
    assert [h.id for h in hits][:2] == [reply.id - 1, reply.id]
    assert hits[0].score > hits[1].score  # the message itself ranks above the one answering it
    assert "holiday" not in hits[1].text  # context is index-only, never returned
    batch = next(memory._store.embeddings("app", Tier.RECALL))
    assert batch.contexts == [None, "Where did you go on holiday?", None]
    archival = memory.archival("app")
    archival.insert("first passage about boats", session_id="s1")
    archival.insert("second passage about trains", session_id="s1")
    assert next(memory._store.embeddings("app", Tier.ARCHIVAL)).contexts == [None, None]
    assert [h.text for h in archival.search("boats", mode="bm25")] == ["first passage about boats"]


def test_dates_are_searchable_words(memory: Memory) -> None:
    archival = memory.archival("app")
    archival.insert("Signed the lease", created_at=datetime(2023, 5, 8, tzinfo=UTC))
    archival.insert("Painted the kitchen", created_at=datetime(2023, 7, 1, tzinfo=UTC))
    hits = archival.search("what happened in May 2023", mode="bm25")
    assert [h.text for h in hits] == ["Signed the lease", "Painted the kitchen"]  # "2023" matches both
    assert hits[0].score > hits[1].score


def test_an_agent_exists_once_it_has_settings_blocks_or_records(memory: Memory) -> None:
    assert not memory.has_agent("ana")
    with pytest.raises(NotFoundError):
        memory.get_agent("ana")
    memory.archival("ana").insert("a passage written before the agent had settings")
    memory.core("bob").put(CoreBlock(label="notes", value="only a block"))
    assert memory.agents() == ["ana", "bob"] and memory.has_agent("ana") and memory.has_agent("bob")
    settings, state = memory.get_agent("ana")
    assert (settings.name, settings.model, state.turn) == ("ana", None, 0)
    with pytest.raises(AgentExistsError):
        memory.create_agent(AgentSettings(name="ana"))
    with pytest.raises(AgentExistsError):
        memory.import_agent(memory.export_agent("ana"))  # import and create agree on what exists
    memory.create_agent(AgentSettings(name="ana", model="openai/gpt-4o-mini"), exist_ok=True)
    assert memory.get_agent("ana")[0].model == "openai/gpt-4o-mini"
    assert [b.label for b in memory.core("ana").blocks()] == ["persona", "human"]
    assert memory.archival("ana").count() == 1, "exist_ok keeps what the agent had"


def test_a_tier_view_sees_only_its_own_tier(memory: Memory) -> None:
    message = memory.recall("ana").append("user", "a message, not a passage").record
    with pytest.raises(NotFoundError):
        memory.archival("ana").get(message.id)
    with pytest.raises(NotFoundError):
        memory.archival("ana").delete(message.id)
    assert memory.recall("ana").get_many([message.id, 999]) == [message]
    assert memory.archival("ana").get_many([message.id]) == []
    assert memory.delete_record("ana", message.id) == message and memory.recall("ana").count() == 0


def test_settings_resolve_in_one_place_explicit_over_environment(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    from memvec.config import ENVIRONMENT, IndexSettings, MemoryConfig

    for variable, value in (
        ("MEMVEC_SAVE_EVERY", "7"),
        ("MEMVEC_MAX_LOADED_INDEXES", "2"),
        ("MEMVEC_STORE", "postgresql://u@h/db"),
        ("MEMVEC_HOME", str(home)),
    ):
        monkeypatch.setenv(variable, value)
    from_environment = MemoryConfig.resolve()
    assert (from_environment.index.save_every, from_environment.max_loaded_indexes) == (7, 2)
    assert (from_environment.store, from_environment.home) == ("postgresql://u@h/db", home)
    explicit = MemoryConfig.resolve(
        home="elsewhere", index=IndexSettings(save_every=3), max_loaded_indexes=5, store="postgresql://v@h/db"
    )
    assert (explicit.index.save_every, explicit.max_loaded_indexes, explicit.home) == (3, 5, Path("elsewhere"))
    assert explicit.store == "postgresql://v@h/db"
    assert set(ENVIRONMENT.values()) >= {"MEMVEC_HOME", "MEMVEC_MODEL", "MEMVEC_EMBED_BACKEND", "MEMVEC_STORE"}
    monkeypatch.setenv("MEMVEC_NEAR_DUPLICATE_COSINE", "off")
    assert MemoryConfig.resolve().dedup.near_cosine is None
    monkeypatch.setenv("MEMVEC_NEAR_DUPLICATE_COSINE", "0.9")
    assert MemoryConfig.resolve().dedup.near_cosine == 0.9
