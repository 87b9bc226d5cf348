"""`memvec serve`'s logs: a startup line, one line per request with its id (returned to the caller),
never a key or a body, in text or JSON; the id also on lines logged while the request is served."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from memvec.service.access_log import AccessLog
from memvec.service.auth import KeyRing
from memvec.telemetry.logs import REQUEST_ID, JsonFormatter, RequestIdFilter, TextFormatter
from tests.service_helpers import Server

KEY = "log-key-0123456789"
SECRET = "the-secret-body-text-417"


def json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


@pytest.mark.slow
def test_a_request_line_carries_its_id_route_status_and_key_id_but_never_the_key_or_body(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", keys=KEY, serve_args=["--log-format", "json"]).start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as api:
            api.post("/v1/agents", json={"name": "ana"}).raise_for_status()
            given = api.post(
                "/v1/agents/ana/archival-memory", json={"text": SECRET}, headers={"X-Request-ID": "client-chosen.1"}
            )
            made = api.get("/v1/agents/ana/archival-memory/search", params={"query": SECRET})
            hostile = api.get("/v1/health", headers={"X-Request-ID": "bad id\twith spaces"})
            refused = httpx.get(f"{server.url}/v1/agents", headers={"Authorization": "Bearer wrong-key-000"})
    finally:
        server.stop()
    assert given.headers["x-request-id"] == "client-chosen.1"
    assert len(made.headers["x-request-id"]) == 32 and hostile.headers["x-request-id"] != "bad id\twith spaces"
    lines = json_lines(server.log_path)
    access = {line["request_id"]: line for line in lines if line["logger"] == "memvec.access"}
    assert access["client-chosen.1"] | {"duration_ms": 0, "time": ""} == {
        "time": "",
        "level": "INFO",
        "logger": "memvec.access",
        "request_id": "client-chosen.1",
        "message": "POST /v1/agents/{agent_id}/archival-memory 201",
        "method": "POST",
        "route": "/v1/agents/{agent_id}/archival-memory",
        "status": 201,
        "duration_ms": 0,
        "key_id": hashlib.sha256(KEY.encode()).hexdigest()[:8],
        "client": "127.0.0.1",
    }
    assert access[made.headers["x-request-id"]]["route"] == "/v1/agents/{agent_id}/archival-memory/search"
    assert access[refused.headers["x-request-id"]]["status"] == 401
    assert access[refused.headers["x-request-id"]]["key_id"] == "-"
    text = server.log_path.read_text()
    assert KEY not in text and SECRET not in text and "wrong-key-000" not in text
    started = [line["message"] for line in lines if line["message"].startswith("listening on")]
    assert started and f"http://127.0.0.1:{server.port}" in started[0] and "hash:64" in started[0]


def test_lines_logged_in_a_worker_thread_carry_the_request_id() -> None:
    """Sync route handlers (every memvec route doing store or model work) run in a thread pool; what
    they log carries the id of the request they serve."""
    caught: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    app = FastAPI()

    @app.get("/work")
    def work() -> dict[str, str]:
        logging.getLogger("memvec.agent").warning("working in %s", threading.current_thread().name)
        return {}

    handler = Catch()
    handler.addFilter(RequestIdFilter())
    memvec_log = logging.getLogger("memvec")
    level = memvec_log.level
    memvec_log.addHandler(handler)
    memvec_log.setLevel(logging.INFO)
    try:
        with TestClient(AccessLog(app, keys=KeyRing({}))) as client:
            answers = [client.get("/work", headers={"X-Request-ID": f"req-{n}"}) for n in range(3)]
    finally:
        memvec_log.removeHandler(handler)
        memvec_log.setLevel(level)
    assert [a.headers["x-request-id"] for a in answers] == ["req-0", "req-1", "req-2"]
    worked = [(r.request_id, r.name) for r in caught]  # type: ignore[attr-defined]
    assert worked == [(f"req-{n}", name) for n in range(3) for name in ("memvec.agent", "memvec.access")]
    assert "MainThread" not in caught[0].getMessage()


def test_text_and_json_lines_hold_the_same_fields() -> None:
    record = logging.LogRecord("memvec.access", logging.INFO, __file__, 1, "%s %s %s", ("GET", "/v1/health", 200), None)
    record.__dict__.update(
        {
            "method": "GET",
            "route": "/v1/health",
            "status": 200,
            "duration_ms": 1.5,
            "key_id": "-",
            "client": "127.0.0.1",
        }
    )
    token = REQUEST_ID.set("abc")
    try:
        RequestIdFilter().filter(record)
    finally:
        REQUEST_ID.reset(token)
    text = TextFormatter().format(record)
    assert text.endswith("INFO memvec.access [abc] GET /v1/health 200 duration_ms=1.5 key_id=- client=127.0.0.1")
    assert json.loads(JsonFormatter().format(record))["request_id"] == "abc"
