"""Agents as Letta has them: an `agent-<uuid>` id fixed at creation beside a display name that may
change, hold spaces and repeat; paths take the id or the handle (the name the CLI and the Python API
use); homes of the previous schema get ids for their agents in place, and PostgreSQL homes too."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from memvec.types import AGENT_ID_PATTERN
from tests.test_postgres import open_pg, pg_url  # noqa: F401 (pytest finds the fixture by name)
from tests.test_upgrades import home_at_schema

HTTP_MADE = "agent-7d0c2f4e-1b2a-4c3d-9e8f-0a1b2c3d4e5f"  # an agent a previous release made over HTTP


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with (
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem,
        TestClient(create_app(mem), base_url="http://localhost") as client,
    ):
        yield client


def test_an_agent_gets_an_id_apart_from_a_name_that_may_change_hold_spaces_and_repeat(api: TestClient) -> None:
    first = api.post("/v1/agents", json={"name": "Research assistant"}).json()
    second = api.post("/v1/agents", json={"name": "Research assistant"}).json()
    assert re.fullmatch(AGENT_ID_PATTERN, first["id"]) and re.fullmatch(AGENT_ID_PATTERN, second["id"])
    assert first["id"] != second["id"] and first["name"] == second["name"] == "Research assistant"
    renamed = api.patch(f"/v1/agents/{first['id']}", json={"name": "Reader, renamed"}).json()
    assert (renamed["id"], renamed["name"]) == (first["id"], "Reader, renamed")
    api.post(f"/v1/agents/{first['id']}/archival-memory", json={"text": "kept across the rename"})
    assert [p["text"] for p in api.get(f"/v1/agents/{first['id']}/archival-memory").json()] == [
        "kept across the rename"
    ]
    assert [a["id"] for a in api.get("/v1/agents", params={"name": "Research assistant"}).json()] == [second["id"]]
    assert [a["id"] for a in api.get("/v1/agents").json()] == [first["id"], second["id"]]  # oldest first
    assert api.delete(f"/v1/agents/{second['id']}").status_code == 200
    assert api.get(f"/v1/agents/{second['id']}").status_code == 404
    assert api.get(f"/v1/agents/{first['id']}").json()["name"] == "Reader, renamed"


def test_a_name_free_as_a_handle_is_the_handle_and_both_paths_reach_the_agent(api: TestClient) -> None:
    made = api.post("/v1/agents", json={"name": "ana"}).json()
    by_id, by_handle = api.get(f"/v1/agents/{made['id']}").json(), api.get("/v1/agents/ana").json()
    assert by_id == by_handle == made
    assert api.patch("/v1/agents/ana", json={"name": "Ana Silva"}).json()["id"] == made["id"]
    assert api.get("/v1/agents/ana").json()["name"] == "Ana Silva"  # the handle stays


@pytest.mark.parametrize("name", ["", " ", "tab\there", "x" * 257, "bell\x07"])
def test_a_display_name_that_cannot_be_shown_is_refused_and_nothing_is_made(api: TestClient, name: str) -> None:
    response = api.post("/v1/agents", json={"name": name})
    assert response.status_code == 422, response.text
    assert api.get("/v1/agents").json() == []


def test_an_agent_written_through_the_python_api_gets_one_id_and_keeps_it(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        mem.archival("notes").insert("written before anyone asked for an id")
        first = mem.agent_identity("notes")
        assert re.fullmatch(AGENT_ID_PATTERN, first.id) and first.name == "notes"
        assert mem.agent_identities() == {"notes": first} and mem.find_agent(first.id) == "notes"
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        assert mem.agent_identity("notes") == first
        mem.delete_agent("notes")
        assert mem.find_agent(first.id) is None and mem.agent_identities() == {}


def test_a_home_of_the_previous_schema_gets_ids_names_and_keeps_its_data(tmp_path: Path) -> None:
    home = home_at_schema(tmp_path / "home", 16)  # a record of agent 'ana'
    with sqlite3.connect(home / "store.sqlite3") as db:
        for name in ("bob", HTTP_MADE):
            db.execute(
                "INSERT INTO agents (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (name, f'{{"name": "{name}"}}', "2026-11-29T00:00:00Z", "2026-11-29T00:00:00Z"),
            )
    with Memory.open(home, model="hash:64") as mem, TestClient(create_app(mem), base_url="http://localhost") as api:
        listed = {a["name"]: a["id"] for a in api.get("/v1/agents").json()}
        assert set(listed) == {"ana", "bob", HTTP_MADE}
        assert listed[HTTP_MADE] == HTTP_MADE  # an id a client may hold already stays its id
        assert all(re.fullmatch(AGENT_ID_PATTERN, agent_id) for agent_id in listed.values())
        assert len(set(listed.values())) == 3
        passages = api.get(f"/v1/agents/{listed['ana']}/archival-memory").json()
        assert [p["text"] for p in passages] == ["Ana keeps bees in Lisbon"]
        assert api.get("/v1/agents/ana").json()["id"] == listed["ana"]  # the old path still works
    with Memory.open(home, model="hash:64") as mem:
        assert {h: i.id for h, i in mem.agent_identities().items()} == {
            "ana": listed["ana"],
            "bob": listed["bob"],
            HTTP_MADE: HTTP_MADE,
        }


@pytest.mark.postgres
def test_postgresql_homes_give_their_agents_ids_once(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    import psycopg

    with open_pg(tmp_path / "a", pg_url) as mem:
        mem.archival("ana").insert("on PostgreSQL")
        mem.create_agent(mem.get_agent("ana")[0].model_copy(update={"name": "bob"}))
    with psycopg.connect(pg_url, autocommit=True) as db:
        # as a home of the previous release left it: no identities, and no digest of this schema
        db.execute("DROP TABLE agent_identities")
        db.execute("DELETE FROM memvec_meta WHERE key = 'schema_sha256'")
    with open_pg(tmp_path / "b", pg_url) as mem:
        made = {h: i.id for h, i in mem.agent_identities().items()}
        assert set(made) == {"ana", "bob"} and all(re.fullmatch(AGENT_ID_PATTERN, i) for i in made.values())
        assert mem.find_agent(made["ana"]) == "ana"
    with open_pg(tmp_path / "c", pg_url) as mem:
        assert {h: i.id for h, i in mem.agent_identities().items()} == made
