"""`forget` (#23 item 4): the records matching every criterion go from the store and every index,
through the Python API, the CLI and HTTP; what was forgotten is in no file of a SQLite home."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import InvalidInputError, Memory, NewRecord, Tier
from memvec.embed import HashingEmbedder
from memvec.engine.partition_index import PartitionIndex
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.types import AgentSettings
from tests.conftest import CLEAN_VERIFY, run_cli


def fill(mem: Memory) -> dict[str, int]:
    ids = {}
    for n, (tag, session, day) in enumerate(
        [("work", "s1", 1), ("work", "s2", 2), ("home", "s2", 3), ("home", "s3", 4)]
    ):
        record = NewRecord(
            agent="ana",
            tier=Tier.ARCHIVAL,
            text=f"passage {n} about {tag} canary-41c7 day {day}",
            tags=[tag],
            citation={"session_id": session},
            created_at=datetime(2024, 1, day, tzinfo=UTC),
        )
        ids[f"p{n}"] = mem.insert([record])[0].record.id
    ids["m0"] = mem.recall("ana").append("user", "a message about work", session_id="s1").record.id
    mem.archival("bob").insert("bob's work passage", tags=["work"])
    return ids


def remaining(mem: Memory, agent: str = "ana") -> set[int]:
    return {r.id for tier in Tier for r in mem.tier(agent, tier).list(limit=100)}


def test_forget_matches_every_criterion_given_and_leaves_the_rest(memory: Memory) -> None:
    ids = fill(memory)
    with pytest.raises(InvalidInputError, match="needs ids or a filter"):
        memory.forget("ana")
    assert memory.forget("ana", tier=Tier.ARCHIVAL, tags=["work"], session_id="s2") == 1
    assert remaining(memory) == {ids["p0"], ids["p2"], ids["p3"], ids["m0"]}
    assert memory.forget("ana", ids=[ids["p3"], ids["m0"], 999_999], tags=["home"]) == 1  # p3 only: m0 has no tag
    assert memory.forget("ana", start=datetime(2024, 1, 1, tzinfo=UTC), end=datetime(2024, 1, 1, 23, tzinfo=UTC)) == 1
    assert memory.forget("ana", roles=["user"]) == 1
    assert remaining(memory) == {ids["p2"]} and memory.archival("bob").count() == 1
    assert [h.id for h in memory.archival("ana").search("passage work home", k=10)] == [ids["p2"]]
    assert memory.verify().model_dump() == CLEAN_VERIFY


def test_what_was_forgotten_is_in_no_file_of_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        fill(mem)
        assert mem.forget("ana", tier=Tier.ARCHIVAL, tags=["work", "home"]) == 4
    leaked = [path for path in home.rglob("*") if path.is_file() and b"canary-41c7" in path.read_bytes()]
    assert leaked == []


@pytest.mark.slow
def test_forget_over_http_is_scoped_and_validated(memory: Memory) -> None:
    fill(memory)
    keys = KeyRing.parse([("t", "admin-key-0123456789"), ("t", "bob-key-0123456789=bob")])
    with TestClient(create_app(memory, keys)) as api:
        bob = {"Authorization": "Bearer bob-key-0123456789"}
        assert api.post("/v1/agents/ana/forget", json={"tags": ["work"]}, headers=bob).status_code == 404
        refused = api.post("/v1/agents/bob/forget", json={}, headers=bob)
        assert refused.status_code == 400 and "needs ids or a filter" in refused.text
        assert api.post("/v1/agents/bob/forget", json={"tags": ["work"], "colour": 1}, headers=bob).status_code == 422
        done = api.post("/v1/agents/bob/forget", json={"tags": ["work"], "tier": "archival"}, headers=bob)
        assert done.status_code == 200 and done.json() == {"forgotten": 1}
    assert memory.archival("bob").count() == 0 and memory.archival("ana").count() == 4


@pytest.mark.slow
def test_forget_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, model="hash:16") as mem:
        fill(mem)
    out = run_cli("--model", "hash:16", "forget", "--agent", "ana", "--tag", "home", "--json", home=home).stdout
    assert json.loads(out) == {"forgotten": 2}
    nothing = run_cli("--model", "hash:16", "forget", "--agent", "ana", home=home, check=False)
    assert nothing.returncode == 2 and "needs ids or a filter" in nothing.stderr
    assert run_cli("--model", "hash:16", "verify", home=home).returncode == 0


def test_an_insert_whose_record_is_forgotten_before_it_is_read_back_answers_409(tmp_path: Path) -> None:
    """Two servers: one commits an insert, the other forgets it before the first reads it back. The
    first answers from what is committed now (409, the passage is gone), never a 500."""
    home = tmp_path / "home"
    with (
        Memory.open(home, embedder=HashingEmbedder(32)) as mem,
        Memory.open(home, embedder=HashingEmbedder(32)) as other,
    ):
        mem.create_agent(AgentSettings(name="ana"))
        engine = mem._engine
        catch_up = engine.tier_index

        def forget_meanwhile(agent: str, tier: Tier) -> PartitionIndex:
            other.forget("ana", tags=["racing"])
            return catch_up(agent, tier)

        engine.tier_index = forget_meanwhile  # type: ignore[method-assign]
        client = TestClient(create_app(mem), base_url="http://localhost")
        answer = client.post("/v1/agents/ana/archival-memory", json={"text": "gone at once", "tags": ["racing"]})
        engine.tier_index = catch_up  # type: ignore[method-assign]
        assert answer.status_code == 409 and "deleted" in answer.json()["detail"]
        assert mem.archival("ana").list() == []
