"""Bounded index memory: past `max_loaded_indexes` the least recently used (agent, tier) indexes are
saved and unloaded, and come back (caught up from the store) on next use, answering as before."""

from __future__ import annotations

import contextlib
import logging
import random
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec import Memory, Tier
from memvec.embed import HashingEmbedder
from memvec.index.files import read_manifest
from tests.conftest import CLEAN_VERIFY
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


@pytest.mark.slow
def test_a_small_budget_answers_exactly_like_no_budget(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "free", embedder=HashingEmbedder(32)) as free:
        fill(free, random.Random(7))
        expected = answers(free)
        assert free.index_usage().evictions == 0
    with Memory.open(tmp_path / "tight", embedder=HashingEmbedder(32), max_loaded_indexes=2) as tight:
        fill(tight, random.Random(7))
        assert answers(tight) == expected
        usage = tight.index_usage()
        assert usage.loaded == 2 and usage.budget == 2 and usage.evictions >= len(AGENTS) * 2 - 2
        assert usage.loads == usage.evictions + usage.loaded
        assert tight.stats().indexes == tight.index_usage()


def test_an_evicted_index_is_saved_and_catches_up_on_reload(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with (
        Memory.open(home, embedder=HashingEmbedder(32), max_loaded_indexes=1) as mem,
        Memory.open(home, embedder=HashingEmbedder(32)) as other,
    ):
        mem.archival("a").insert("opens agent a's index (built from the store and saved)")
        first = mem.archival("a").insert("the first agent's note").record.id  # an unsaved change
        assert mem._engine.tier_index("a", Tier.ARCHIVAL).unsaved == 1
        mem.archival("b").insert("pushes agent a out")  # a is evicted: its unsaved change goes to disk
        manifest = read_manifest(home / "index" / "a" / "archival")
        assert manifest.last_change == mem._store.last_change("a", Tier.ARCHIVAL) and manifest.record_count == 2
        later = other.archival("a").insert("written by another process while a was unloaded").record.id
        found = [h.id for h in mem.archival("a").search("note process unloaded", k=5, mode="bm25")]
        assert first in found and later in found
        assert mem.verify().model_dump() == CLEAN_VERIFY


@pytest.mark.slow
def test_serve_keeps_to_its_budget(tmp_path: Path) -> None:
    srv = Server(tmp_path / "home", env={"MEMVEC_MAX_LOADED_INDEXES": "3"}).start()
    try:
        with httpx.Client(base_url=srv.url, timeout=30) as api:
            for agent in AGENTS:
                api.post("/v1/agents", json={"name": agent}).raise_for_status()
                api.post(f"/v1/agents/{agent}/archival-memory", json={"text": f"{agent} likes tea"}).raise_for_status()
            for agent in AGENTS:
                results = api.get(
                    f"/v1/agents/{agent}/archival-memory/search", params={"query": f"{agent} tea", "mode": "bm25"}
                ).json()["results"]
                assert [r["content"] for r in results][:1] == [f"{agent} likes tea"]
            health = api.get("/v1/health").json()
            assert health["indexes_budget"] == 3 and health["indexes_loaded"] == 3
    finally:
        srv.stop()


steps = st.lists(
    st.tuples(st.sampled_from(["insert", "insert", "delete", "search"]), st.integers(0, 3)), min_size=30, max_size=90
)


@settings(max_examples=25, deadline=None)
@given(plan=steps, budget=st.integers(1, 3), save_every=st.sampled_from([1, 4, 2000]))
@pytest.mark.slow
def test_property_eviction_under_concurrent_searches_and_writes(
    tmp_path_factory: pytest.TempPathFactory, plan: list[tuple[str, int]], budget: int, save_every: int
) -> None:
    """Three threads insert, delete and search four agents through a budget of 1-3 indexes: every
    search finds what was acknowledged before it began and nothing deleted before it began, and at
    the end every answer equals that of a fresh open of the same store (indexes built from scratch)."""
    home = tmp_path_factory.mktemp("home")
    agents = [f"agent{i}" for i in range(4)]
    with Memory.open(
        home, embedder=HashingEmbedder(32), max_loaded_indexes=budget, index={"save_every": save_every}
    ) as mem:
        ledger = Ledger(agents)
        threads = [threading.Thread(target=ledger.run, args=(mem, plan[start::3], start)) for start in range(3)]
        with logged_warnings("memvec.index") as warnings:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert ledger.failures == []
        assert warnings == []  # no reload saw a torn save or a concurrent write as damage (and rebuilt)
        assert mem.index_usage().loaded <= budget
        live = final_answers(mem, agents)
        copy = tmp_path_factory.mktemp("copy")
        shutil.copytree(home, copy, ignore=shutil.ignore_patterns("index"), dirs_exist_ok=True)
        assert mem.verify().model_dump() == CLEAN_VERIFY
    with Memory.open(copy, embedder=HashingEmbedder(32)) as fresh:
        assert final_answers(fresh, agents) == live


@contextlib.contextmanager
def logged_warnings(name: str) -> Iterator[list[str]]:
    messages: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger(name).addHandler(handler)
    try:
        yield messages
    finally:
        logging.getLogger(name).removeHandler(handler)


def final_answers(mem: Memory, agents: list[str]) -> list[list[tuple[int, float]]]:
    return [
        [(h.id, round(h.score, 5)) for h in mem.archival(agent).search(query, k=8)]
        for agent in agents
        for query in ("note topic2", "tok1 tok5", "about topic0 and more")
    ]


class Ledger:
    """What each thread was told (acknowledged inserts, deletes), and what searches broke."""

    def __init__(self, agents: list[str]) -> None:
        self.agents = agents
        self.lock = threading.Lock()
        self.live: dict[str, dict[int, str]] = {agent: {} for agent in agents}
        self.deleted: dict[str, dict[int, str]] = {agent: {} for agent in agents}
        self.deleting: set[int] = set()  # a search meanwhile may or may not find these
        self.failures: list[str] = []
        self.counter = 0

    def run(self, mem: Memory, plan: list[tuple[str, int]], thread: int) -> None:
        try:
            for op, which in plan:
                getattr(self, op)(mem, self.agents[which], thread)
        except Exception as exc:  # a thread's error must fail the test, not vanish
            self.failures.append(repr(exc))

    def insert(self, mem: Memory, agent: str, thread: int) -> None:
        with self.lock:
            self.counter += 1
            token = f"tok{self.counter}x{thread}"
        record = mem.archival(agent).insert(f"{token} note about topic{self.counter % 3}").record
        with self.lock:
            self.live[agent][record.id] = token

    def delete(self, mem: Memory, agent: str, thread: int) -> None:
        with self.lock:
            if not self.live[agent]:
                return
            record_id, token = self.live[agent].popitem()
            self.deleting.add(record_id)
        mem.delete_record(agent, record_id)
        with self.lock:
            self.deleted[agent][record_id] = token
            self.deleting.discard(record_id)

    def search(self, mem: Memory, agent: str, thread: int) -> None:
        with self.lock:
            live, deleted = dict(self.live[agent]), dict(self.deleted[agent])
        for record_id, token in list(live.items())[-3:]:
            found = [h.id for h in mem.archival(agent).search(token, k=3, mode="bm25")]
            with self.lock:
                excused = record_id in self.deleting or record_id in self.deleted[agent]
            if record_id not in found and not excused:
                self.failures.append(f"{agent}: acknowledged {record_id} ({token}) not found")
        for record_id, token in list(deleted.items())[-3:]:
            if record_id in [h.id for h in mem.archival(agent).search(token, k=3, mode="bm25")]:
                self.failures.append(f"{agent}: deleted {record_id} ({token}) still found")
