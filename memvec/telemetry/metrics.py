"""memvec's Prometheus metrics, defined once for every layer that counts something (the engine, the
embedder's batcher, the agent's LLM calls, the HTTP service), exported by `GET /metrics`
(memvec.service.routes_metrics).

Under `memvec serve --workers N` each worker counts in files under PROMETHEUS_MULTIPROC_DIR (set by
the supervisor before it starts them: prometheus-client reads it when this module is imported) and any
worker's /metrics answers for all of them. Labels take bounded values only: a route's template, never
its path; a tier, a mode, a stage; never an agent name or query text."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Gauge, Histogram

# seconds, from a cached search (~1 ms) to a slow model reply
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

HTTP_REQUESTS = Counter(
    "memvec_http_requests_total", "HTTP requests answered, by route template and status", ["method", "route", "status"]
)
HTTP_SECONDS = Histogram(
    "memvec_http_request_duration_seconds",
    "HTTP request duration, by route template",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_SECONDS = Histogram(
    "memvec_search_stage_duration_seconds",
    "Search time by tier, mode and stage (embed: the query's vector; rank: candidates, "
    "fusion and the second stage; total)",
    ["tier", "mode", "stage"],
    buckets=LATENCY_BUCKETS,
)
INDEX_LOADS = Counter("memvec_index_loads_total", "Indexes loaded into memory (opened and caught up)")
INDEX_EVICTIONS = Counter("memvec_index_evictions_total", "Indexes saved and unloaded to stay within the budget")
CHANGES_APPLIED = Counter(
    "memvec_index_changes_applied_total",
    "Store changes applied to loaded indexes: this process's writes and, for the "
    "agents it has loaded, every other server's",
)
INDEXES_LOADED = Gauge("memvec_indexes_loaded", "Indexes in memory now", multiprocess_mode="livesum")
EMBED_BATCH = Histogram(
    "memvec_embed_batch_size",
    "Texts per forward pass of the embedding model",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
AGENT_BUSY = Counter(
    "memvec_agent_busy_total",
    "Requests answered 409 agent_busy (another server or thread held the agent's lease past the wait)",
)
LEASE_WAIT_SECONDS = Histogram(
    "memvec_agent_lease_wait_seconds", "Time spent waiting for an agent's lease", buckets=LATENCY_BUCKETS
)
STORE_UNAVAILABLE = Counter("memvec_store_unavailable_total", "Requests answered 503: the store was unreachable")
LLM_CALLS = Counter("memvec_llm_calls_total", "Calls to LLM providers through litellm, by outcome", ["outcome"])
LLM_TOKENS = Counter("memvec_llm_tokens_total", "Tokens of LLM calls as the provider counted them", ["kind"])


@contextmanager
def timed(histogram: Histogram, *labels: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        histogram.labels(*labels).observe(time.perf_counter() - started)
