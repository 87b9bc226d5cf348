"""What logs and metrics cost a search, in one run: `memvec serve` answering one client's searches
with a log line per request (`--log-level info`, to a file) and without (`warning`), alternated; and
the metric updates one search request makes, timed alone, against that search's median."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.load import run_level, start_server, stop_server
from benchmarks.speed import synthetic_texts
from memvec import Memory
from memvec.telemetry.metrics import HTTP_REQUESTS, HTTP_SECONDS, SEARCH_SECONDS
from memvec.types import NewRecord, Tier

ROUTE = "/v1/agents/{agent_id}/archival-memory/search"


def run(model: str, preload: int = 1000, seconds: float = 3.0, rounds: int = 2) -> dict[str, Any]:
    queries = [t.split(",")[0] for t in synthetic_texts(200, seed=17)]

    def search(api: httpx.Client, worker: int, i: int) -> int:
        params: dict[str, str | int] = {"query": f"{queries[i % len(queries)]} #{i}", "top_k": 10}
        return api.get("/v1/agents/obs/archival-memory/search", params=params).status_code

    p50: dict[str, list[float]] = {"warning": [], "info": []}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        with Memory.open(home, model=model) as mem:
            mem.archival("obs").insert_many(
                [NewRecord(agent="obs", tier=Tier.ARCHIVAL, text=text) for text in synthetic_texts(preload, seed=5)]
            )
        for _ in range(rounds):
            for level in p50:
                process, url = start_server(
                    home, ["--model", model], ["--log-level", level], stderr_path=Path(tmp) / f"{level}.log"
                )
                try:
                    p50[level].append(run_level(url, 1, seconds, search, 200)["p50_ms"])
                finally:
                    stop_server(process)
    quiet, logged = statistics.median(p50["warning"]), statistics.median(p50["info"])
    metrics_us = metric_updates_us()
    return {
        "preload": preload,
        "seconds": seconds,
        "rounds": rounds,
        "p50_ms_without_log": quiet,
        "p50_ms_with_log": logged,
        "log_ratio": logged / quiet,
        "metrics_us_per_search": metrics_us,
        "metrics_share": metrics_us / (1000 * quiet),
    }


def metric_updates_us(repeats: int = 20_000) -> float:
    """Median µs of what a search request adds to the metrics: its request count and duration, and
    its three search stages."""
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeats):
            HTTP_REQUESTS.labels("GET", ROUTE, "200").inc()
            HTTP_SECONDS.labels("GET", ROUTE).observe(0.004)
            for stage in ("embed", "rank", "total"):
                SEARCH_SECONDS.labels("archival", "hybrid", stage).observe(0.002)
        samples.append((time.perf_counter() - started) / repeats * 1e6)
    return statistics.median(samples)
