"""`GET /metrics`: memvec's metrics (memvec.telemetry.metrics) and the store's totals in Prometheus' text format,
for an unscoped key (any caller of a keyless server). Under `--workers` every worker's counts, summed."""

from __future__ import annotations

import os
from collections.abc import Iterator

from fastapi import HTTPException, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from memvec.memory import Memory
from memvec.service.deps import Caller, Service, api_router

router = api_router()

CONNECTIONS = {
    "opened": "Connections this process opened to PostgreSQL (reconnects included)",
    "failed": "Attempts to connect to PostgreSQL that failed",
    "lost": "Connections found broken and replaced",
}


class StoreTotals:
    """Records and agents in the store (the same for every server on it) and this process's PostgreSQL
    connections, read at each scrape."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    def collect(self) -> Iterator[Metric]:
        for kind, count in self.memory.connection_stats().items():  # this process's pool (PostgreSQL)
            yield CounterMetricFamily(f"memvec_store_connections_{kind}", CONNECTIONS[kind], value=count)
        records, agents = self.memory.totals()
        yield GaugeMetricFamily("memvec_records", "Records in the store, both tiers, every agent", value=records)
        yield GaugeMetricFamily("memvec_agents", "Agents in the store", value=agents)


def exposition(memory: Memory) -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        counted = CollectorRegistry()
        MultiProcessCollector(counted)  # type: ignore[no-untyped-call]
    else:
        counted = REGISTRY
    totals = CollectorRegistry(auto_describe=False)
    totals.register(StoreTotals(memory))
    return generate_latest(counted) + generate_latest(totals)


@router.get("/metrics", include_in_schema=False)
def metrics(principal: Caller, service: Service) -> Response:
    if principal.agents is not None:
        raise HTTPException(403, "metrics cover every agent: they need an unscoped key")
    return Response(exposition(service.memory), media_type=CONTENT_TYPE_LATEST)
