"""The two search routes encode their answer themselves (memvec.service.deps.json_response) instead of
handing FastAPI a model to validate again: the JSON is what FastAPI's own encoding gives, and the
OpenAPI document still describes it."""

from __future__ import annotations

from fastapi.encoders import jsonable_encoder
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.service.app import create_app
from memvec.service.schemas import SearchOut

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
