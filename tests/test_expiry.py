"""Expiry and retention (#23 item 4): a record past its `expires_at`, or older than its tier's
retention, is never returned (search, list, get, export) and is purged from the store and index."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import Memory, NewRecord, NotFoundError, Tier
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from tests.conftest import CLEAN_VERIFY, run_cli

NOW = datetime.now(UTC)


def test_an_expired_record_is_never_returned_and_is_purged(memory: Memory) -> None:
    archival = memory.archival("ana")
    gone = archival.insert("the door code is 1234 until friday", expires_at=NOW - timedelta(seconds=1)).record
    later = archival.insert("the door code is 9876 from monday", expires_at=NOW + timedelta(days=30)).record
    kept = archival.insert("the door is painted blue").record
    assert later.expires_at is not None and kept.expires_at is None
    assert {h.id for h in archival.search("door code", k=10)} == {later.id, kept.id}
    assert {r.id for r in archival.list()} == {later.id, kept.id}
    with pytest.raises(NotFoundError):
        archival.get(gone.id)
    exported = memory.export_agent("ana")
    assert {p.id for p in exported.passages} == {later.id, kept.id}
    assert [p.expires_at for p in exported.passages if p.id == later.id] == [later.expires_at]
    assert gone.id not in memory._store.ids("ana", Tier.ARCHIVAL)  # purged, not only hidden
    assert memory.verify().model_dump() == CLEAN_VERIFY


READS: dict[str, Callable[[Memory], list[str]]] = {
    "search": lambda mem: [h.text for h in mem.archival("ana").search("door code", k=10)],
    "list": lambda mem: [r.text for r in mem.archival("ana").list()],
    "get_many": lambda mem: [r.text for r in mem.archival("ana").get_many(list(range(1, 10)))],
    "count": lambda mem: ["x"] * mem.archival("ana").count(),
    "export": lambda mem: [p.text for p in mem.export_agent("ana").passages],
}


@pytest.mark.parametrize("read", list(READS))
def test_every_read_path_hides_an_expired_record_on_its_own(memory: Memory, read: str) -> None:
    memory.archival("ana").insert("the door code was 1234", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    memory.archival("ana").insert("the door code is 9876")
    assert READS[read](memory) in (["the door code is 9876"], ["x"])


def test_retention_purges_old_recall_messages_only(home: Path) -> None:
    with Memory.open(home, embedder=HashingEmbedder(32), retention_days={"recall": 7}) as mem:
        for age_days, text in ((30, "an old message about tea"), (1, "a new message about tea")):
            mem.insert(
                [
                    NewRecord(
                        agent="ana", tier=Tier.RECALL, text=text, role="user", created_at=NOW - timedelta(days=age_days)
                    )
                ]
            )
        mem.archival("ana").insert("an old passage about tea", created_at=NOW - timedelta(days=30))
        assert [r.text for r in mem.recall("ana").list()] == ["a new message about tea"]
        assert [h.text for h in mem.archival("ana").search("tea")] == ["an old passage about tea"]
        assert mem.recall("ana").count() == 1


def test_a_sweep_purges_what_nobody_read_from_every_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        mem.archival("ana").insert("canary-b2e8 expired", expires_at=datetime.now(UTC) - timedelta(seconds=1))
        mem.archival("ana").insert("stays")
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        assert mem.sweep() == 1 and mem.sweep() == 0
    assert not any(b"canary-b2e8" in p.read_bytes() for p in home.rglob("*") if p.is_file())


@pytest.mark.slow
def test_expiry_over_http_and_on_the_command_line(tmp_path: Path, memory: Memory) -> None:
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        api.post("/v1/agents", json={"name": "ana"})
        posted = api.post(
            "/v1/agents/ana/archival-memory",
            json={
                "passages": [
                    {"text": "expired already", "expires_at": (NOW - timedelta(hours=1)).isoformat()},
                    {"text": "valid for a day", "expires_at": (NOW + timedelta(days=1)).isoformat()},
                ]
            },
        )
        assert posted.status_code == 201 and posted.json()[1]["expires_at"] is not None
        listed = api.get("/v1/agents/ana/archival-memory").json()
        assert [p["text"] for p in listed] == ["valid for a day"]
    home = tmp_path / "cli-home"
    past = (NOW - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    run_cli(
        "--model", "hash:16", "add", "old news", "--agent", "a", "--tier", "archival", "--expires-at", past, home=home
    )
    assert json.loads(run_cli("--model", "hash:16", "sweep", "--json", home=home).stdout) == {"purged": 1}
