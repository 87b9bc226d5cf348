"""`GET /metrics`: Prometheus' text format, parsed by prometheus-client's own parser; its counters
move with the requests served, also summed across `memvec serve --workers 2`; only an unscoped key
may read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from tests.service_helpers import Server

ADMIN, SCOPED = "metrics-admin-01", "metrics-scope-01"
SEARCH_ROUTE = "/v1/agents/{agent_id}/archival-memory/search"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        keys = KeyRing.parse([("test", ADMIN), ("test", f"{SCOPED}=ana")])
        with TestClient(create_app(mem, keys), headers={"Authorization": f"Bearer {ADMIN}"}) as test_client:
            yield test_client


def test_metrics_count_requests_searches_and_records(client: TestClient) -> None:
    client.post("/v1/agents", json={"name": "ana"}).raise_for_status()
    client.post("/v1/agents/ana/archival-memory", json={"text": "Ana likes green tea"}).raise_for_status()
    before = samples(client.get("/metrics").text)
    for _ in range(3):
        client.get("/v1/agents/ana/archival-memory/search", params={"query": "tea"}).raise_for_status()
    client.post("/v1/agents/ana/archival-memory", json={"text": "Ana keeps bees"}).raise_for_status()
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=")
    after = samples(response.text)
    searched = {"method": "GET", "route": SEARCH_ROUTE, "status": "200"}
    assert (
        value(after, "memvec_http_requests_total", **searched) - value(before, "memvec_http_requests_total", **searched)
        == 3
    )
    stage = {"tier": "archival", "mode": "hybrid"}
    for name in ("embed", "rank", "total"):
        moved = value(after, "memvec_search_stage_duration_seconds_count", **stage, stage=name) - value(
            before, "memvec_search_stage_duration_seconds_count", **stage, stage=name
        )
        assert moved == 3, name
    assert value(after, "memvec_records") == 2 and value(after, "memvec_agents") == 1
    assert value(after, "memvec_indexes_loaded") >= 1
    assert not [key for key in after if "ana" in dict(key[1]).values()], "no agent name as a label"
    assert not [key for key in after if key[0].startswith("memvec_store_connections")], "SQLite has no pool"


def test_metrics_need_an_unscoped_key(client: TestClient) -> None:
    assert client.get("/metrics", headers={"Authorization": ""}).status_code == 401
    assert client.get("/metrics", headers={"Authorization": f"Bearer {SCOPED}"}).status_code == 403


@pytest.mark.slow
def test_workers_are_counted_together(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", keys=ADMIN, serve_args=["--workers", "2"]).start()
    auth = {"Authorization": f"Bearer {ADMIN}"}
    try:
        httpx.post(f"{server.url}/v1/agents", json={"name": "ana"}, headers=auth).raise_for_status()
        for _ in range(20):  # a new connection each: the kernel spreads them over both workers
            with httpx.Client(headers=auth, timeout=30) as one:
                one.get(f"{server.url}/v1/agents/ana/archival-memory/search", params={"query": "x"}).raise_for_status()
        counted = [
            value(
                samples(httpx.get(f"{server.url}/metrics", headers=auth).text),
                "memvec_http_requests_total",
                method="GET",
                route=SEARCH_ROUTE,
                status="200",
            )
            for _ in range(6)
        ]
    finally:
        server.stop()
    assert counted == [20.0] * 6, counted


def test_changes_written_elsewhere_are_counted_when_caught_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with (
        Memory.open(home, embedder=HashingEmbedder(64)) as mem,
        TestClient(create_app(mem, allowed_hosts=frozenset({"testserver"}))) as client,
    ):
        client.post("/v1/agents", json={"name": "ana"}).raise_for_status()
        client.get("/v1/agents/ana/archival-memory/search", params={"query": "x"}).raise_for_status()
        before = value(samples(client.get("/metrics").text), "memvec_index_changes_applied_total")
        with Memory.open(home, embedder=HashingEmbedder(64)) as other:  # another server on the same store
            for text in ("Ana keeps bees", "Ana lives in Lisbon", "Ana likes tea"):
                other.archival("ana").insert(text)
        client.get("/v1/agents/ana/archival-memory/search", params={"query": "bees"}).raise_for_status()
        after = value(samples(client.get("/metrics").text), "memvec_index_changes_applied_total")
    assert after - before == 6  # the writer's index applied its 3 writes, the server's caught up with them


WEBDAV = ("PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH", "REPORT", "PURGE")


@pytest.mark.slow
def test_keyless_clients_inventing_methods_and_paths_add_no_series(tmp_path: Path) -> None:
    """Labels come from closed sets: an unknown method is `other`, an unrouted path `(no route)`."""
    server = Server(tmp_path / "home", keys=ADMIN).start()
    auth = {"Authorization": f"Bearer {ADMIN}"}

    def series() -> set[tuple[str, frozenset[tuple[str, str]]]]:
        text = httpx.get(f"{server.url}/metrics", headers=auth).text
        return {key for key in samples(text) if key[0].startswith("memvec_http_")}

    try:
        with httpx.Client(timeout=30) as keyless:
            for n in range(3):  # the series those requests make, once made
                keyless.request(f"WARMUP{n}", f"{server.url}/v1/agents")
                keyless.request(WEBDAV[n], f"{server.url}/v1/agents/{n}{'z' * 100}")
                keyless.get(f"{server.url}/no/such/path/{n}")
            series()  # a scrape's own series
            before = series()
            for n in range(150):
                # an invented method is refused by the HTTP parser (400); WebDAV's methods parse and
                # reach the app, which routes none of them
                for method in (f"X{n:04d}{'Y' * 200}", WEBDAV[n % len(WEBDAV)]):
                    answered = keyless.request(method, f"{server.url}/v1/agents/{n}{'z' * 100}")
                    assert answered.status_code < 500
                keyless.get(f"{server.url}/no/such/path/{n}{'q' * 100}")
        after = series()
    finally:
        server.stop()
    assert after - before == set(), sorted(after - before)[:5]
    methods = {dict(labels).get("method") for _, labels in after}
    assert "other" in methods and all(m is None or len(m) <= 7 for m in methods), methods
