"""Versioned passages (#23 item 1): an update writes a new version and closes the old one; search
returns current versions, `as_of` what held then, `history` every version; through the Python API
(real model), the CLI, HTTP and the agent/MCP tool."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from memvec import Memory, NotFoundError
from memvec.errors import VersionConflictError
from memvec.mcp_server.server import build_server
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.tools import TOOLS, ToolContext
from memvec.types import NewRecord, Tier
from tests.conftest import CLEAN_VERIFY
from tests.conftest import run_cli as run_memvec
from tests.test_mcp import call, run_client

MODES = ("hybrid", "vector", "bm25", "token")


def day(year: int, month: int = 1, date: int = 1) -> datetime:
    return datetime(year, month, date, tzinfo=UTC)


def moves(mem: Memory) -> list[int]:
    """Ana's city: Lisbon from 2019, Berlin from 2021, Oslo from 2023 (three versions of one passage)."""
    archival = mem.archival("ana")
    first = archival.insert("Ana lives in Lisbon.", tags=["home"], valid_from=day(2019)).record.id
    archival.insert("Ana's favourite food is ramen.", tags=["food"])
    second = archival.update(first, "Ana lives in Berlin.", valid_from=day(2021)).record.id
    third = archival.update(second, "Ana lives in Oslo.", valid_from=day(2023)).record.id
    return [first, second, third]


def city_texts(mem: Memory, mode: str, as_of: datetime | None = None) -> list[str]:
    hits = mem.archival("ana").search("where does Ana live city", k=10, mode=mode, as_of=as_of)
    return [h.text for h in hits if "lives" in h.text]


@pytest.mark.parametrize("mode", MODES)
def test_search_returns_the_current_version_and_as_of_what_held_then(real_memory: Memory, mode: str) -> None:
    moves(real_memory)
    assert city_texts(real_memory, mode) == ["Ana lives in Oslo."]
    assert city_texts(real_memory, mode, as_of=day(2020, 6)) == ["Ana lives in Lisbon."]
    assert city_texts(real_memory, mode, as_of=day(2021)) == ["Ana lives in Berlin."]  # valid_to is exclusive
    assert city_texts(real_memory, mode, as_of=day(2022, 12, 31)) == ["Ana lives in Berlin."]
    assert city_texts(real_memory, mode, as_of=day(2018)) == []  # before the first version held
    assert city_texts(real_memory, mode, as_of=day(2030)) == ["Ana lives in Oslo."]


def test_history_links_and_list(real_memory: Memory) -> None:
    first, second, third = moves(real_memory)
    archival = real_memory.archival("ana")
    for record_id in (first, second, third):
        versions = archival.history(record_id)
        assert [v.id for v in versions] == [first, second, third]
    old, middle, new = archival.history(first)
    assert (old.valid_from, old.valid_to, old.superseded_by) == (day(2019), day(2021), second)
    assert (middle.supersedes, middle.valid_to, middle.superseded_by) == (first, day(2023), third)
    assert (new.supersedes, new.valid_to, new.superseded_by, new.tags) == (second, None, None, ["home"])
    assert [r.text for r in archival.list()] == ["Ana's favourite food is ramen.", "Ana lives in Oslo."]
    assert [r.text for r in archival.list(as_of=day(2020))] == ["Ana lives in Lisbon."]  # ramen: recorded now
    assert archival.count() == 4  # every stored version
    assert real_memory.verify().model_dump() == CLEAN_VERIFY


def test_only_the_current_version_can_be_updated(memory: Memory) -> None:
    first, second, third = moves(memory)
    archival = memory.archival("ana")
    with pytest.raises(VersionConflictError, match=f"superseded by {second}"):
        archival.update(first, "Ana lives in Rome.")
    ramen = archival.search("ramen", k=1)[0].id
    with pytest.raises(VersionConflictError, match="current and has this text"):
        archival.update(third, "Ana's favourite food is ramen.")
    with pytest.raises(NotFoundError):
        archival.update(999_999, "nothing")
    assert [v.id for v in archival.history(third)] == [first, second, third]  # the refusals wrote nothing
    assert archival.count() == 4 and archival.get(ramen).superseded_by is None
    back = archival.update(third, "Ana lives in Lisbon.").record  # an old text may come back as a new version
    assert back.id not in (first, second, third) and [v.text for v in archival.history(back.id)][::3] == [
        "Ana lives in Lisbon.",
        "Ana lives in Lisbon.",
    ]
    assert archival.insert("Ana lives in Lisbon.").created is False  # and is the current copy again


def test_supersedes_on_insert_is_an_update(memory: Memory) -> None:
    archival = memory.archival("ana")
    old = archival.insert("The office is on floor 3.", valid_from=day(2020)).record
    new = memory.insert(
        [
            NewRecord(
                agent="ana",
                tier=Tier.ARCHIVAL,
                text="The office is on floor 5.",
                supersedes=old.id,
                valid_from=day(2024),
            )
        ]
    )[0].record
    assert new.supersedes == old.id and archival.get(old.id).valid_to == day(2024)
    assert [h.text for h in archival.search("office floor")] == ["The office is on floor 5."]
    with pytest.raises(NotFoundError):  # a recall id is not an archival passage
        message = memory.recall("ana").append("user", "hello").record
        archival.insert("x", supersedes=message.id)


def test_record_time_and_event_time_filter_apart(memory: Memory) -> None:
    archival = memory.archival("ana")
    first = archival.insert("Ana works at Acme.", created_at=day(2024, 5), valid_from=day(2015)).record
    archival.update(first.id, "Ana works at Initech.", valid_from=day(2020))
    # learned in 2024 (record time), true 2015-2020 (event time): each filter reads its own time
    assert [h.text for h in archival.search("where Ana works", as_of=day(2016))] == ["Ana works at Acme."]
    assert archival.search("where Ana works", as_of=day(2016), end=day(2024, 1)) == []
    assert [h.text for h in archival.search("where Ana works", as_of=day(2016), start=day(2024, 1))] == [
        "Ana works at Acme."
    ]


def test_delete_and_forget_take_every_version(tmp_path: Path) -> None:
    from memvec.embed import HashingEmbedder

    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        archival = mem.archival("ana")
        first = archival.insert("the locker code is canary-5e0a 1234").record.id
        second = archival.update(first, "the locker code is canary-5e0a 9876").record.id
        third = archival.update(second, "the locker code changed; ask Ana").record.id
        assert mem.forget("ana", ids=[third]) == 3
        kept = archival.insert("keep me").record.id
        other = archival.update(kept, "keep me, version two").record.id
        archival.delete(kept)
        assert archival.count() == 0 and other not in {r.id for r in archival.list()}
    leaked = [p for p in home.rglob("*") if p.is_file() and b"canary-5e0a" in p.read_bytes()]
    assert leaked == []


@pytest.mark.slow
def test_update_and_history_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"

    def run_cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return run_memvec("--model", "hash:64", *args, **kwargs)  # type: ignore[arg-type]

    added = json.loads(
        run_cli(
            "add",
            "Ana lives in Lisbon.",
            "--agent",
            "ana",
            "--tier",
            "archival",
            "--valid-from",
            "2019-01-01",
            "--json",
            home=home,
        ).stdout
    )
    updated = json.loads(
        run_cli(
            "update",
            str(added["id"]),
            "Ana lives in Berlin.",
            "--agent",
            "ana",
            "--valid-from",
            "2021-01-01",
            "--json",
            home=home,
        ).stdout
    )
    assert updated["supersedes"] == added["id"] and updated["valid_from"].startswith("2021-01-01")
    shown = run_cli("history", str(updated["id"]), "--agent", "ana", home=home).stdout
    assert "Lisbon" in shown.splitlines()[0] and ".. 2021-01-01" in shown.splitlines()[0]
    assert "Berlin" in shown.splitlines()[1] and ".. now" in shown.splitlines()[1]

    def search(*extra: str) -> list[str]:
        out = run_cli(
            "search", "where does Ana live", "--agent", "ana", "--tier", "archival", "--json", *extra, home=home
        ).stdout
        return [h["text"] for h in json.loads(out)]

    assert search() == ["Ana lives in Berlin."]
    assert search("--as-of", "2020-01-01") == ["Ana lives in Lisbon."]
    refused = run_cli("update", str(added["id"]), "Ana lives in Rome.", "--agent", "ana", home=home, check=False)
    assert refused.returncode == 2 and "update the current version" in refused.stderr


def test_patch_in_lettas_shape_and_history_over_http(memory: Memory) -> None:
    client = TestClient(create_app(memory, KeyRing.parse([("t", "admin-key-0123456789")])))
    headers = {"Authorization": "Bearer admin-key-0123456789"}
    base = "/v1/agents/ana/archival-memory"
    assert client.post("/v1/agents", json={"name": "ana"}, headers=headers).status_code == 201
    made = client.post(
        base,
        json={"text": "Ana lives in Lisbon.", "tags": ["home"], "valid_from": "2019-01-01T00:00:00Z"},
        headers=headers,
    ).json()[0]
    patched = client.patch(
        f"{base}/{made['id']}",
        json={
            "text": "Ana lives in Berlin.",
            "valid_from": "2021-01-01T00:00:00Z",
            "citation": {"source_url": "https://chat.example/7"},
        },
        headers=headers,
    )
    assert patched.status_code == 200
    new = patched.json()[0]
    assert new["supersedes"] == made["id"] and new["tags"] == ["home"]
    assert new["citation"] == {
        "session_id": None,
        "turn_id": None,
        "source_url": "https://chat.example/7",
        "document": None,
    }
    again = client.patch(f"{base}/{made['id']}", json={"text": "Ana lives in Rome."}, headers=headers)
    assert again.status_code == 409 and again.json()["error"] == "version_conflict"
    assert client.patch(f"{base}/424242", json={"text": "x"}, headers=headers).status_code == 404
    assert client.patch(f"{base}/{new['id']}", json={"text": ""}, headers=headers).status_code == 422
    history = client.get(f"{base}/{new['id']}/history", headers=headers).json()
    assert [v["text"] for v in history] == ["Ana lives in Lisbon.", "Ana lives in Berlin."]
    assert history[0]["superseded_by"] == new["id"] and history[0]["valid_to"].startswith("2021-01-01")
    search = client.get(f"{base}/search", params={"query": "where Ana lives"}, headers=headers).json()
    assert [r["content"] for r in search["results"]] == ["Ana lives in Berlin."]
    then = client.get(
        f"{base}/search", params={"query": "where Ana lives", "as_of": "2020-01-01T00:00:00Z"}, headers=headers
    ).json()
    assert [r["content"] for r in then["results"]] == ["Ana lives in Lisbon."]
    assert [p["text"] for p in client.get(base, headers=headers).json()] == ["Ana lives in Berlin."]


def test_the_update_tool_and_as_of_search(memory: Memory) -> None:
    ctx = ToolContext(memory=memory, agent="ana", session_id="chat-9", turn=4)

    def run(name: str, **arguments: object) -> dict[str, Any]:
        tool = TOOLS[name]
        return dict(json.loads(tool.run(ctx, tool.arguments.model_validate(arguments))))

    saved = {"id": memory.archival("ana").insert("Ana's manager is Bo.", valid_from=day(2020)).record.id}
    updated = run("archival_memory_update", id=saved["id"], content="Ana's manager is Cy.", valid_from="2024-03-01")
    assert updated["supersedes"] == saved["id"] and updated["citation"] == {"session_id": "chat-9", "turn_id": "4"}
    now = run("archival_memory_search", query="Ana's manager")["results"]
    assert [r["text"] for r in now] == ["Ana's manager is Cy."] and now[0]["valid_from"].startswith("2024-03-01")
    then = run("archival_memory_search", query="Ana's manager", as_of="2024-02-01")["results"]
    assert [r["text"] for r in then] == ["Ana's manager is Bo."] and then[0]["valid_to"].startswith("2024-03-01")


def test_the_update_tool_through_an_mcp_client(memory: Memory) -> None:
    old = memory.archival("alice").insert("The wifi password is on the fridge.", valid_from=day(2020)).record.id

    async def session(client: Client) -> tuple[tuple[bool, str], ...]:
        updated = await call(client, "archival_memory_update", id=old, content="The wifi password is on the router.")
        stale = await call(client, "archival_memory_update", id=old, content="The wifi password is lost.")
        now = await call(client, "archival_memory_search", query="wifi password")
        then = await call(client, "archival_memory_search", query="wifi password", as_of="2021-06-01")
        return updated, stale, now, then

    updated, stale, now, then = run_client(build_server(memory, "alice"), session)
    assert not updated[0] and json.loads(updated[1])["supersedes"] == old
    assert stale[0] and "update the current version" in stale[1]
    assert [r["text"] for r in json.loads(now[1])["results"]] == ["The wifi password is on the router."]
    assert [r["text"] for r in json.loads(then[1])["results"]] == ["The wifi password is on the fridge."]


def every_version(mem: Memory, agent: str) -> list[tuple[Any, ...]]:
    """Every field of every version of every passage and message (current, superseded, ended), with
    the versions before and after each by text instead of by id (ids differ between homes)."""
    rows = []
    store = mem._engine.store
    for tier in Tier:
        records = sorted(store.get(agent, [int(i) for i in store.ids(agent, tier)]), key=lambda r: r.id)
        texts = {r.id: r.text for r in records}
        rows += [
            (
                tier,
                r.text,
                r.role,
                r.tags,
                r.citation,
                r.created_at,
                r.expires_at,
                r.valid_from,
                r.valid_to,
                r.untrusted,
                texts.get(r.supersedes or 0),
                texts.get(r.superseded_by or 0),
            )
            for r in records
        ]
    return rows


def test_an_export_carries_every_version_and_an_import_restores_them_linked(memory: Memory) -> None:
    from datetime import timedelta

    moves(memory)
    memory.archival("ana").insert(
        "The offer held until last week.",
        valid_from=datetime.now(UTC) - timedelta(days=14),
        valid_to=datetime.now(UTC) - timedelta(days=7),
    )
    memory.recall("ana").append("user", "I moved to Oslo", session_id="s1", turn_id=3)
    doc = memory.export_agent("ana")
    assert doc.version == 2 and len(doc.passages) == 5  # three versions of one passage, an ended one, another
    memory.import_agent(doc, name="ana-copy")
    assert every_version(memory, "ana-copy") == every_version(memory, "ana")
    assert [h.text for h in memory.archival("ana-copy").search("where Ana lives", as_of=day(2022))][:1] == [
        "Ana lives in Berlin."
    ]
    assert [r.text for r in memory.archival("ana-copy").list()] == [
        "Ana's favourite food is ramen.",
        "Ana lives in Oslo.",
    ]


def test_a_new_version_keeps_the_deadline_unless_it_sets_one_and_cannot_begin_before_the_old(memory: Memory) -> None:
    from datetime import timedelta

    from memvec.errors import InvalidInputError

    archival = memory.archival("ana")
    soon = datetime.now(UTC) + timedelta(days=1)
    first = archival.insert("The door code is 4711.", expires_at=soon, valid_from=day(2020)).record
    second = archival.update(first.id, "The door code is 4712.").record
    assert second.expires_at == soon  # the text may not outlive the deadline its first version had
    third = archival.insert("The door code is 4713.", supersedes=second.id).record  # consolidation's way
    assert third.expires_at == soon
    later = soon + timedelta(days=7)
    assert archival.update(third.id, "The door code is 4714.", expires_at=later).record.expires_at == later
    current = archival.list()[0]
    with pytest.raises(InvalidInputError, match="before the current version's"):
        archival.update(current.id, "The door code was 1234.", valid_from=day(2019))
    assert [r.text for r in archival.list()] == ["The door code is 4714."]
    assert [r.valid_to is None for r in archival.history(current.id)] == [False, False, False, True]


@pytest.mark.slow
def test_patch_takes_a_deadline_and_refuses_an_interval_that_would_invert(memory: Memory) -> None:
    client = TestClient(create_app(memory, KeyRing.parse([("t", "admin-key-0123456789")])))
    headers = {"Authorization": "Bearer admin-key-0123456789"}
    base = "/v1/agents/ana/archival-memory"
    assert client.post("/v1/agents", json={"name": "ana"}, headers=headers).status_code == 201
    made = client.post(
        base,
        json={"text": "Trial ends soon.", "expires_at": "2999-01-01T00:00:00Z", "valid_from": "2021-01-01T00:00:00Z"},
        headers=headers,
    ).json()[0]
    kept = client.patch(f"{base}/{made['id']}", json={"text": "Trial ends very soon."}, headers=headers).json()[0]
    assert kept["expires_at"].startswith("2999-01-01")
    moved = client.patch(
        f"{base}/{kept['id']}", json={"text": "Trial extended.", "expires_at": "3000-01-01T00:00:00Z"}, headers=headers
    )
    assert moved.status_code == 200 and moved.json()[0]["expires_at"].startswith("3000-01-01")
    early = client.patch(
        f"{base}/{moved.json()[0]['id']}", json={"text": "x", "valid_from": "2020-01-01T00:00:00Z"}, headers=headers
    )
    assert early.status_code == 400 and "before the current version's" in early.json()["detail"]
