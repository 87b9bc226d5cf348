"""Staleness between two `memvec serve` on one PostgreSQL database: how long after server A
acknowledges a write does a search through server B find it?

Each write carries a unique token; right after A's 201 the harness searches B (BM25, k=1) for the
token, again and again until it is found. Every search catches up from the shared change log
before it ranks, so the expectation is "found by the first search"; the lag reported is from A's
acknowledgement to B's answer that holds the record (so it includes that one search).
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from benchmarks.load import start_server, stop_server
from benchmarks.metrics import percentile
from benchmarks.stores import DEFAULT_PG, pg_schema


def _lag(writer: httpx.Client, reader: httpx.Client, token: str) -> tuple[float, int]:
    response = writer.post("/v1/agents/ana/archival-memory", json={"text": f"staleness probe {token}"})
    assert response.status_code == 201, response.text
    acknowledged = time.perf_counter()
    for searches in range(1, 10_000):
        hits = reader.get(
            "/v1/agents/ana/archival-memory/search", params={"query": token, "top_k": 1, "mode": "bm25"}
        ).json()["results"]
        if hits and token in hits[0]["content"]:
            return (time.perf_counter() - acknowledged) * 1000, searches
    raise AssertionError(f"server B never found {token}")


def measure(pg_url: str = DEFAULT_PG, writes: int = 200) -> dict[str, Any]:
    try:
        with pg_schema(pg_url) as url, tempfile.TemporaryDirectory() as tmp:
            options = ["--model", "hash:64", "--store", url]
            servers = [start_server(Path(tmp) / name, options) for name in ("a", "b")]
            try:
                return _measure(servers[0][1], servers[1][1], writes)
            finally:
                for process, _ in servers:
                    stop_server(process)
    except Exception as exc:  # an unreachable database is a result to report, not a crash
        return {"skipped": f"{type(exc).__name__}: {exc}".splitlines()[0]}


def _measure(url_a: str, url_b: str, writes: int) -> dict[str, Any]:
    with httpx.Client(base_url=url_a, timeout=60) as a, httpx.Client(base_url=url_b, timeout=60) as b:
        a.post("/v1/agents", json={"name": "ana"}).raise_for_status()
        b.get("/v1/agents/ana/archival-memory/search", params={"query": "warm up"}).raise_for_status()
        lags, searches = [], []
        for i in range(writes):
            lag, count = _lag(a, b, f"tok{i}x{uuid.uuid4().hex[:8]}")
            lags.append(lag)
            searches.append(count)
    return {
        "writes": writes,
        "first_search_pct": 100 * sum(1 for s in searches if s == 1) / writes,
        "max_searches": max(searches),
        "lag_ms": {"p50": percentile(lags, 50), "p99": percentile(lags, 99), "max": round(max(lags), 2)},
    }


if __name__ == "__main__":
    import json

    print(json.dumps(measure(), indent=2))
