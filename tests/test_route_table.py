"""docs/integrations.md's route table is the truth: each route it lists as served answers from its
handler (any status but the router's own 404/405), each it lists as not served is the router's 404,
and every `/v1` route of the app is listed, so a new route cannot go undocumented."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from tests.service_helpers import api_routes

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"
ROW = re.compile(r"^\| `(GET|POST|PATCH|PUT|DELETE) (/\S+)` \| (served|not served)", re.M)
TABLE = [(method, path, status == "served") for method, path, status in ROW.findall(DOC.read_text())]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with (
        Memory.open(tmp_path_factory.mktemp("routes") / "home", embedder=HashingEmbedder(64)) as mem,
        TestClient(create_app(mem, allowed_hosts=frozenset({"testserver"}))) as test_client,
    ):
        yield test_client


def concrete(client: TestClient, path: str) -> str:
    """The path with real ids: agent `ana` with a `human` block and a passage (made again if gone),
    a shared block where the route takes only those, a folder with a file, a conversation of ana's."""
    if client.get("/v1/agents/ana").status_code == 404:
        client.post("/v1/agents", json={"name": "ana", "memory_blocks": [{"label": "human", "value": "x"}]})
    passage = client.get("/v1/agents/ana/archival-memory").json()
    passage_id = (
        passage[0]["id"]
        if passage
        else client.post("/v1/agents/ana/archival-memory", json={"text": "Ana keeps bees"}).json()[0]["id"]
    )
    block_id = "ana:human"
    if "/attach/" in path or "/detach/" in path or path.endswith("/agents"):
        shared = [b for b in client.get("/v1/blocks").json() if b["id"].startswith("block-")]
        block_id = shared[0]["id"] if shared else client.post("/v1/blocks", json={"label": "team"}).json()["id"]
    if "{folder_id}" in path:
        folders = client.get("/v1/folders").json()
        folder_id = folders[0]["id"] if folders else client.post("/v1/folders", json={"name": "docs"}).json()["id"]
        files = client.get(f"/v1/folders/{folder_id}/files").json()
        file_id = (
            files[0]["id"]
            if files
            else client.post(
                f"/v1/folders/{folder_id}/upload", files={"file": ("a.txt", b"Ana keeps bees", "text/plain")}
            ).json()["id"]
        )
        path = path.replace("{folder_id}", folder_id).replace("{file_id}", file_id)
    if "{conversation_id}" in path:
        made = client.post("/v1/conversations?agent_id=ana", json={}).json()["id"]
        path = path.replace("{conversation_id}", made)
    return (
        path.replace("{agent_id}", "ana")
        .replace("{label}", "human")
        .replace("{passage_id}", str(passage_id))
        .replace("{run_id}", "1")
        .replace("{block_id}", block_id)
    )


def routers_own(status: int, body: str) -> bool:
    """The router's answer for a route it does not have (not a handler's 404 for a missing record)."""
    return status == 405 or (status == 501 and json.loads(body).get("error") == "not_served")


@pytest.mark.parametrize(("method", "path", "served"), TABLE, ids=[f"{m} {p}" for m, p, _ in TABLE])
def test_each_listed_route_is_as_the_table_says(client: TestClient, method: str, path: str, served: bool) -> None:
    response = client.request(method, concrete(client, path), json={} if method in {"POST", "PATCH", "PUT"} else None)
    assert routers_own(response.status_code, response.text) is not served, (response.status_code, response.text)


def test_every_route_of_the_app_is_in_the_table(client: TestClient) -> None:
    listed = {(method, path) for method, path, served in TABLE if served}
    routes = {
        (method, route.path)
        for route in api_routes(client.app)
        if route.path.startswith("/v1")
        for method in route.methods or ()
        if method != "HEAD"
    }
    assert routes - listed == set(), "document these routes in docs/integrations.md"
    assert listed - routes == set(), "the table lists routes the app does not have"
    assert len(TABLE) > 30


def test_every_route_documents_the_error_body(client: TestClient) -> None:
    """Schemathesis holds each answer to its route's documented responses: a route (or router) that
    forgets ERROR_RESPONSES documents FastAPI's own 422 shape and none of memvec's refusals."""
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status in ("401", "404", "422", "503"):
                if (path, status) == ("/v1/health", "503"):
                    continue  # the health body itself, saying what is down
                schema = operation["responses"].get(status, {}).get("content", {}).get("application/json", {})
                assert schema.get("schema") == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, status)


def test_no_route_is_built_at_its_first_request(client: TestClient) -> None:
    """An included router's routes are rebuilt lazily at the first request, and concurrent first
    requests race (a pydantic warning in a request thread): every route is built when the app is."""
    app = client.app
    assert isinstance(app, FastAPI)
    lazy = [route for route in app.routes if getattr(route, "original_router", None) is not None]
    assert lazy == []
