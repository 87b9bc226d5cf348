"""The two search routes encode their answer themselves (memvec.service.deps.json_response) instead of
handing FastAPI a model to validate again: the JSON is what FastAPI's own encoding gives, and the
OpenAPI document still describes it."""

from __future__ import annotations

from threading import current_thread
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.dependencies.utils import solve_dependencies as fastapi_solve
from fastapi.encoders import jsonable_encoder
from fastapi.routing import request_response
from fastapi.testclient import TestClient

from memvec import Hit, Memory, SearchRequest
from memvec.service.app import create_app
from memvec.service.body import OffLoopBodyRoute
from memvec.service.schemas import SearchOut
from tests.service_helpers import api_routes

ROUTES = ("/v1/agents/ana/archival-memory/search", "/v1/agents/ana/recall-memory/search")


def test_a_search_answers_what_fastapi_would_have_encoded(memory: Memory) -> None:
    memory.archival("ana").insert("Zoë's café opens at 7 — «tôt»", tags=["café"], source_url="https://e/1")
    memory.recall("ana").append("user", "I bought a bike helmet at the café")
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        for route in ROUTES:
            answer = api.get(route, params={"query": "café"})
            assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
            body = SearchOut.model_validate_json(answer.content)
            assert body.count == 1 and "café" in body.results[0].content
            assert answer.json() == jsonable_encoder(body)


def test_the_search_routes_still_document_their_answer(memory: Memory) -> None:
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        paths = api.get("/openapi.json").json()["paths"]
    for route in ROUTES:
        schema = paths[route.replace("/ana/", "/{agent_id}/")]["get"]["responses"]["200"]["content"]
        assert schema["application/json"]["schema"] == {"$ref": "#/components/schemas/SearchOut"}


def test_a_hit_shows_session_parts_only_when_it_is_in_a_session(memory: Memory) -> None:
    archival = memory.archival("ana")
    archival.insert("the heron nests by the reeds", session_id="walk-1")
    archival.insert("a heron stood in the marsh")
    for rerank in (False, None):
        hits = {h.citation.session_id: h.scores for h in archival.search("heron", k=5, rerank=rerank)}
        assert hits["walk-1"].session_vector is not None and hits["walk-1"].session_bm25 is not None
        assert hits[None].session_vector is None and hits[None].session_bm25 is None
        assert hits[None].vector is not None and hits[None].bm25 is not None


# every request the direct path answers, valid or not, and what it must answer as FastAPI would
DIRECT_CASES: list[tuple[str, dict[str, str | list[str]]]] = [
    ("ana", {"query": "café", "top_k": "3"}),
    ("ana", {"query": "café", "tags": ["café", "tea"], "tag_match_mode": "all", "unknown": "ignored"}),
    ("ana", {"query": "café", "mode": "bm25", "min_score": "0.5"}),  # min_score needs vectors
    ("ana", {"query": "café", "start_datetime": "2030-01-02T00:00:00Z", "end_datetime": "2030-01-01T00:00:00Z"}),
    ("ana", {"query": "café", "top_k": "0"}),
    ("ana", {"query": "café", "top_k": "many", "vector_weight": "2", "fusion": "sum", "rerank": "perhaps"}),
    ("ana", {"query": ""}),
    ("ana", {}),
    ("ana", {"query": "café", "tag_match_mode": "some", "start_datetime": "last week"}),
    ("ana", {"query": "café", "roles": ["user", "assistant"], "session_id": "s1", "top_k": "2"}),
    ("nobody", {"query": "café"}),
    ("bad agent!", {"query": "café"}),
    ("bad agent!", {"top_k": "0"}),  # every invalid parameter, the path's first
    ("agent-0b5e3c7a-0000-4000-8000-000000000001", {"query": "café"}),
]


def test_a_search_answered_directly_answers_as_fastapi_would(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search routes skip FastAPI's dependency solving (memvec.service.direct): for valid and
    invalid requests alike, the status and body are what FastAPI's own handling of the route gives."""
    memory.archival("ana").insert("Zoë's café opens at 7", tags=["café"])
    memory.recall("ana").append("user", "I bought a bike helmet at the café")
    app = create_app(memory)
    direct = [route for route in api_routes(app) if route.path.replace("{agent_id}", "ana") in ROUTES]
    assert len(direct) == 2
    answers: dict[str, list[tuple[int, object]]] = {}
    for handling in ("direct", "fastapi"):
        if handling == "fastapi":
            for route in direct:
                monkeypatch.setattr(route, "app", request_response(OffLoopBodyRoute.get_route_handler(route)))
        with TestClient(app, base_url="http://localhost") as api:
            answers[handling] = [
                (answer.status_code, answer.json())
                for route in ROUTES
                for agent, params in DIRECT_CASES
                for answer in [api.get(route.replace("/ana/", f"/{quote(agent)}/"), params=params)]
            ]
    assert {status for status, _ in answers["direct"]} == {200, 404, 422}
    assert answers["direct"] == answers["fastapi"]


def test_searches_run_on_the_search_lane_and_solve_no_dependencies(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search runs on the server's search threads (memvec.service.lanes), and FastAPI's per-request
    dependency solving is not run for it (another route still goes through it)."""
    memory.archival("ana").insert("Zoë's café opens at 7")
    threads: list[str] = []
    searched = memory.search

    def search(request: SearchRequest) -> list[Hit]:
        threads.append(current_thread().name)
        return searched(request)

    solved: list[object] = []

    async def solve_dependencies(*args: Any, **kwargs: Any) -> Any:
        solved.append(args)
        return await fastapi_solve(*args, **kwargs)

    monkeypatch.setattr(memory, "search", search)
    monkeypatch.setattr("fastapi.routing.solve_dependencies", solve_dependencies)
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        for route in ROUTES:
            assert api.get(route, params={"query": "café"}).status_code == 200
        assert not solved
        assert api.get("/v1/agents/ana").status_code == 200 and solved
    assert len(threads) == 2 and all(name.startswith("memvec-search") for name in threads), threads
