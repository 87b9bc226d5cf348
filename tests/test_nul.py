"""NUL in any stored string is a 422 that writes nothing, on SQLite and on PostgreSQL alike (#34 item 6):
SQLite would store it and PostgreSQL cannot, so an export from one would not import into the other."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from tests.test_postgres import BASE_URL, ensure_postgres

NUL = "a\x00b"
# (method, path, body) each carrying a NUL in one stored string
REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("post", "/v1/agents/ana/archival-memory", {"text": NUL}),
    ("post", "/v1/agents/ana/archival-memory", {"text": "ok", "tags": [NUL]}),
    ("post", "/v1/agents/ana/archival-memory", {"text": "ok", "citation": {"session_id": NUL}}),
    ("post", "/v1/agents/ana/archival-memory", {"text": "ok", "citation": {"source_url": NUL}}),
    ("post", "/v1/agents/ana/archival-memory", {"text": "ok", "citation": {"turn_id": NUL}}),
    ("post", "/v1/agents/ana/messages", {"messages": [{"role": "user", "content": NUL}]}),
    ("post", "/v1/agents/ana/messages", {"messages": [{"role": "user", "content": "hi", "name": NUL}]}),
    ("post", "/v1/agents/ana/messages", {"messages": [{"role": "user", "content": "hi"}], "session_id": NUL}),
    ("patch", "/v1/agents/ana/core-memory/blocks/human", {"value": NUL}),
    ("patch", "/v1/agents/ana/core-memory/blocks/human", {"description": NUL}),
    ("post", "/v1/agents", {"name": "bob", "description": NUL}),
    ("post", "/v1/agents", {"name": "bob", "system": NUL}),
    ("post", "/v1/agents", {"name": "bob", "memory_blocks": [{"label": "notes", "value": NUL}]}),
    ("patch", "/v1/agents/ana", {"description": NUL}),
    ("post", "/v1/agents/ana/forget", {"roles": [NUL]}),
]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TestClient, Memory]]:
    """One home per store for the whole module: every test checks that it changed nothing."""
    schema = f"memvec_test_{uuid.uuid4().hex[:12]}"
    store = None
    if request.param == "postgresql":
        import psycopg

        ensure_postgres()
        with psycopg.connect(BASE_URL, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        store = f"{BASE_URL}?options=-csearch_path%3D{schema}"
    with Memory.open(tmp_path_factory.mktemp("nul") / "home", embedder=HashingEmbedder(32), store=store) as mem:
        client = TestClient(create_app(mem), base_url="http://localhost")
        assert client.post("/v1/agents", json={"name": "ana"}).status_code == 201
        yield client, mem
    if store is not None:
        with psycopg.connect(BASE_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def snapshot(mem: Memory) -> Any:
    return (
        [(a, mem.get_agent(a)[0].model_dump()) for a in mem.agents()],
        [b.model_dump() for b in mem.core("ana").blocks()],
        [
            r.model_dump()
            for tier in ("archival", "recall")
            for r in (mem.archival("ana") if tier == "archival" else mem.recall("ana")).list(limit=100)
        ],
    )


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS, ids=[f"{m} {p} {sorted(b)}" for m, p, b in REQUESTS])
def test_nul_in_a_stored_string_is_refused_and_writes_nothing(
    api: tuple[TestClient, Memory], method: str, path: str, body: dict[str, Any]
) -> None:
    client, mem = api
    before = snapshot(mem)
    answer = getattr(client, method)(path, json=body)
    assert answer.status_code in (400, 422), answer.text
    assert snapshot(mem) == before


def test_a_label_in_a_path_is_checked_before_the_store(api: tuple[TestClient, Memory]) -> None:
    client, _ = api
    for label in ("a%00b", "has space", "x" * 65):
        assert client.get(f"/v1/agents/ana/core-memory/blocks/{label}").status_code == 422
