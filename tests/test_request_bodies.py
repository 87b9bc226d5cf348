"""Request bodies through the app in this process (#34 item 2): a large JSON body is parsed and
validated in a worker thread, never on the event loop, and parsed once; a sprawling body is refused
before validation; a body with many errors is answered with a few of them and the count."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

import memvec.limits
from memvec.service import body, front
from memvec.service.front import THREAD_PARSE_BYTES
from tests.service_helpers import InProcess

ADMIN = "admin-key-0123456789"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def service(tmp_path: Path) -> Iterator[InProcess]:
    app = InProcess(tmp_path / "home", keys=ADMIN)
    yield app
    app.stop()


def _post(service: InProcess, path: str, payload: Any) -> tuple[httpx.Response, int]:
    """POST on an event loop in this thread; also returns that loop's thread id."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=service.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=AUTH) as client:
            created = await client.post("/v1/agents", json={"name": "ana"})
            assert created.status_code in (201, 409), created.text
            return await client.post(path, content=json.dumps(payload), headers={"content-type": "application/json"})

    return asyncio.run(send()), threading.get_ident()


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, *, length: int | None = None) -> list[int]:
    """The threads `module.name` is called on (with `length`: only calls whose first argument is that long)."""
    threads: list[int] = []
    original = getattr(module, name)

    def spied(*args: Any, **kwargs: Any) -> Any:
        if length is None or (args and len(args[0]) == length):
            threads.append(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spied)
    return threads


def _archival(service: InProcess) -> int:
    return sum(p.records for p in service.memory.partition_stats({"ana"}) if p.tier == "archival")


def _batch(size_bytes: int, *, last: dict[str, Any] | None = None) -> dict[str, Any]:
    count = 100
    passages: list[dict[str, Any]] = [{"text": f"{n} " + "w" * (size_bytes // count)} for n in range(count)]
    if last is not None:
        passages[-1] = last
    return {"passages": passages}


@pytest.mark.slow
def test_a_large_body_is_parsed_and_validated_in_a_worker_thread_and_parsed_once(
    service: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _spy(monkeypatch, front, "load_json")
    validated = _spy(monkeypatch, body, "_validated")
    payload = _batch(4 * THREAD_PARSE_BYTES, last={"text": ""})  # one invalid passage: nothing is stored
    # FastAPI's own parse of the body would be a second call with the same text
    reparsed = _spy(monkeypatch, json, "loads", length=len(json.dumps(payload)))
    response, loop_thread = _post(service, "/v1/agents/ana/archival-memory", payload)
    assert response.status_code == 422, response.text
    assert ["body", "PassageBatch", "passages", 99, "text"] in [e["loc"] for e in response.json()["detail"]]
    assert len(parsed) == 2 and parsed == [loop_thread, parsed[1]] and parsed[1] != loop_thread  # small, then large
    assert validated and set(validated) != {loop_thread}
    assert len(reparsed) == 1, "the front door's parse is handed on, not done again"
    assert _archival(service) == 0


def test_a_small_body_is_parsed_once_on_the_loop_and_stored(
    service: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = {"text": "Ana keeps bees in Porto, " + "and more " * 40}
    reparsed = _spy(monkeypatch, json, "loads", length=len(json.dumps(payload)))
    response, loop_thread = _post(service, "/v1/agents/ana/archival-memory", payload)
    assert response.status_code in (200, 201), response.text
    assert reparsed == [loop_thread]
    assert _archival(service) == 1


def test_a_large_valid_body_is_stored_whole(service: InProcess) -> None:
    response, _ = _post(service, "/v1/agents/ana/archival-memory", _batch(4 * THREAD_PARSE_BYTES))
    assert response.status_code in (200, 201), response.text
    assert len(response.json()) == 100 and _archival(service) == 100


def test_a_body_of_too_many_values_is_refused_before_validation(
    service: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated = _spy(monkeypatch, body, "_validated")
    sprawl = {"text": "x", **{f"k{n}": 1 for n in range(memvec.limits.MAX_BODY_VALUES)}}
    response, _ = _post(service, "/v1/agents/ana/archival-memory", sprawl)
    assert response.status_code == 422
    assert f"more than {memvec.limits.MAX_BODY_VALUES} JSON values" in response.json()["detail"]
    assert not validated


def test_a_body_with_thousands_of_errors_is_answered_with_twenty_and_the_count(service: InProcess) -> None:
    extra = {"text": "x", **{f"unknown{n}": 1 for n in range(5_000)}}
    response, _ = _post(service, "/v1/agents/ana/archival-memory", {"passages": [extra]})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert len(detail) == 21 and all(e["loc"][0] == "body" for e in detail[:20])
    found = int(detail[-1]["msg"].split()[1])
    assert found + 20 > 5_000 and detail[-1]["msg"] == f"and {found} more errors"
    assert _archival(service) == 0


def test_the_api_answers_with_a_trailing_slash_without_a_redirect(service: InProcess) -> None:
    async def calls() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=service.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=AUTH) as client:
            return [
                await client.post("/v1/agents/", json={"name": "ana"}),
                await client.get("/v1/agents/"),
                await client.get("/v1/agents/ana/"),
                await client.get("/v1/agents/nobody/"),
            ]

    created, listed, retrieved, missing = asyncio.run(calls())
    assert created.status_code == 201 and listed.status_code == 200 and retrieved.status_code == 200
    assert [a["name"] for a in listed.json()] == ["ana"] and retrieved.json()["name"] == "ana"
    assert missing.status_code == 404


def test_every_route_of_the_app_reads_its_body_off_the_event_loop(service: InProcess) -> None:
    # what each route module's router makes (deps.api_router); a route added another way would not
    routes = [route for route in service.app.routes if isinstance(route, APIRoute)]
    assert len(routes) > 50 and all(isinstance(route, body.OffLoopBodyRoute) for route in routes)
