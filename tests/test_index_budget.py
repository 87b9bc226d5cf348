"""Bounded index memory: past `max_loaded_indexes` the least recently used (agent, tier) indexes are
saved and unloaded, and come back (caught up from the store) on next use, answering as before."""

from __future__ import annotations

import random
from pathlib import Path

import httpx

from memvec import Memory, Tier
from memvec.embed import HashingEmbedder
from memvec.index.files import read_manifest
from tests.service_helpers import Server

AGENTS = [f"agent{i}" for i in range(6)]


def fill(mem: Memory, rng: random.Random, rounds: int = 120) -> None:
    for i in range(rounds):
        agent = rng.choice(AGENTS)
        mem.archival(agent).insert(f"note {i} about topic{i % 9} for {agent}", tags=[f"t{i % 3}"])
        if i % 7 == 0:
            mem.recall(agent).append("user", f"message {i} mentions topic{i % 9}", session_id=f"s{i % 4}")


def answers(mem: Memory) -> list[list[tuple[int, float]]]:
    out = []
    for agent in AGENTS:
        for query in ("topic3", "note 17", "topic8 for"):
            for tier in (mem.archival(agent), mem.recall(agent)):
                out.append([(h.id, round(h.score, 5)) for h in tier.search(query, k=5)])
    return out


def test_a_small_budget_answers_exactly_like_no_budget(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "free", embedder=HashingEmbedder(32)) as free:
        fill(free, random.Random(7))
        expected = answers(free)
        assert free.engine.index_usage().evictions == 0
    with Memory.open(tmp_path / "tight", embedder=HashingEmbedder(32), max_loaded_indexes=2) as tight:
        fill(tight, random.Random(7))
        assert answers(tight) == expected
        usage = tight.engine.index_usage()
        assert usage.loaded == 2 and usage.budget == 2 and usage.evictions >= len(AGENTS) * 2 - 2
        assert usage.loads == usage.evictions + usage.loaded
        assert tight.stats().indexes == tight.engine.index_usage()


def test_an_evicted_index_is_saved_and_catches_up_on_reload(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32), max_loaded_indexes=1) as mem, \
            Memory.open(home, embedder=HashingEmbedder(32)) as other:
        mem.archival("a").insert("opens agent a's index (built from the store and saved)")
        first = mem.archival("a").insert("the first agent's note").record.id  # an unsaved change
        assert mem.engine.tier_index("a", Tier.ARCHIVAL).unsaved == 1
        mem.archival("b").insert("pushes agent a out")  # a is evicted: its unsaved change goes to disk
        manifest = read_manifest(home / "index" / "a" / "archival")
        assert manifest.last_change == mem.store.last_change("a", Tier.ARCHIVAL) and manifest.record_count == 2
        later = other.archival("a").insert("written by another process while a was unloaded").record.id
        found = [h.id for h in mem.archival("a").search("note process unloaded", k=5, mode="bm25")]
        assert first in found and later in found
        assert mem.verify() == []


def test_serve_keeps_to_its_budget(tmp_path: Path) -> None:
    srv = Server(tmp_path / "home", env={"MEMVEC_MAX_LOADED_INDEXES": "3"}).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as api:
            for agent in AGENTS:
                api.post("/v1/agents", json={"name": agent}).raise_for_status()
                api.post(f"/v1/agents/{agent}/archival-memory", json={"text": f"{agent} likes tea"}).raise_for_status()
            for agent in AGENTS:
                results = api.get(f"/v1/agents/{agent}/archival-memory/search",
                                  params={"query": f"{agent} tea", "mode": "bm25"}).json()["results"]
                assert [r["content"] for r in results][:1] == [f"{agent} likes tea"]
            health = api.get("/v1/health").json()
            assert health["indexes_budget"] == 3 and health["indexes_loaded"] == 3
    finally:
        srv.stop()
