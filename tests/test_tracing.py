"""OpenTelemetry spans, recorded with the SDK's in-memory exporter: a search request through the
service gives one trace (the request named by its route, the search and its stages, the store
reads beneath), an LLM call its span; without an endpoint `memvec serve` exports nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from memvec.telemetry.tracing import export_from_environment
from tests.scripted_llm import ScriptedLLM, say

EXPORTER = InMemorySpanExporter()
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"  # W3C trace context of a calling service


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider (it can be set once per process) recording into EXPORTER."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [found] = [s for s in finished if s.name == name]
    return found


def test_a_search_request_is_one_trace_down_to_the_store(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    with (
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem,
        TestClient(create_app(mem, allowed_hosts=frozenset({"testserver"}))) as client,
    ):
        client.post("/v1/agents", json={"name": "ana"}).raise_for_status()
        client.post("/v1/agents/ana/archival-memory", json={"text": "Ana keeps bees"}).raise_for_status()
        spans.clear()
        client.get(
            "/v1/agents/ana/archival-memory/search",
            params={"query": "bees"},
            headers={"X-Request-ID": "trace-me", "traceparent": CALLER},
        ).raise_for_status()
    finished = spans.get_finished_spans()
    request = by_name(finished, "GET /v1/agents/{agent_id}/archival-memory/search")
    assert request.attributes is not None and request.attributes["http.response.status_code"] == 200
    assert request.attributes["memvec.request_id"] == "trace-me"
    assert f"{request.context.trace_id:032x}" == CALLER.split("-")[1], "the caller's trace goes on"
    search = by_name(finished, "memvec.search")
    assert search.attributes is not None and dict(search.attributes) == {
        "memvec.tier": "archival",
        "memvec.mode": "hybrid",
        "memvec.k": 10,
    }
    assert search.parent is not None and search.parent.span_id == request.context.span_id
    for stage in ("memvec.search.embed", "memvec.search.rank"):
        found = by_name(finished, stage)
        assert found.parent is not None and found.parent.span_id == search.context.span_id
    reads = [s for s in finished if s.name == "memvec.store.read"]
    assert reads and all(s.context.trace_id == request.context.trace_id for s in reads)
    assert all(s.attributes is not None and s.attributes["db.system"] == "sqlite" for s in reads)
    assert "bees" not in str([dict(s.attributes or {}) for s in finished]), "no query text in a span"


def test_an_llm_call_has_its_span(spans: InMemorySpanExporter, llm: ScriptedLLM) -> None:
    from memvec.agent.llm import complete

    llm.script = [say("hello")]
    complete(
        "scripted/agent",
        [{"role": "user", "content": "hi"}],
        tools=[{"type": "function", "function": {"name": "send_message", "parameters": {"type": "object"}}}],
    )
    called = by_name(spans.get_finished_spans(), "memvec.llm.completion")
    assert called.attributes is not None and called.attributes["gen_ai.request.model"] == "scripted/agent"


def test_without_an_endpoint_nothing_is_exported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert export_from_environment() is False
