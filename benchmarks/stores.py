"""SQLite against PostgreSQL as the store, same records, same index code, no model cost.

Per backend: ingest throughput (batches of 256, one transaction each), hybrid search latency (the
store is read for the hits' rows), and a cold start: the first search of a home without index
files, which rebuilds the indexes from the store's embeddings (what a new server sharing a
PostgreSQL database does). PostgreSQL runs in a fresh schema that is dropped afterwards; when the
server cannot be reached its row says why instead.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import RandomEmbedder
from benchmarks.speed import ingest, latencies, summary_ms, synthetic_texts
from memvec import Memory, SearchRequest, Tier

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """A store URL on a fresh schema of `base_url`, dropped on exit."""
    import psycopg

    schema = f"memvec_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base_url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{base_url}{'&' if '?' in base_url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(base_url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def measure(home: Path, store: str | None, texts: list[str], queries: list[str]) -> dict[str, Any]:
    embedder = RandomEmbedder()
    with Memory.open(home, embedder=embedder, store=store) as mem:
        seconds = ingest(mem, texts)
        stored = mem._store.count("bench", Tier.ARCHIVAL)
        search = summary_ms(latencies(mem, queries, {"mode": "hybrid"}))
    shutil.rmtree(home / "index")
    started = time.perf_counter()
    with Memory.open(home, embedder=embedder, store=store) as mem:
        mem.search(SearchRequest(agent="bench", tier="archival", query="cold start"))
        cold = time.perf_counter() - started
    return {"records": stored, "records_per_s": len(texts) / seconds, "hybrid_ms": search, "cold_start_s": cold}


def compare(n: int = 10_000, n_queries: int = 200, pg_url: str = DEFAULT_PG) -> dict[str, Any]:
    texts = synthetic_texts(n, seed=11)
    queries = [t.split(",")[0] for t in synthetic_texts(n_queries, seed=12)]
    out: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory() as tmp:
        out["sqlite"] = measure(Path(tmp) / "sqlite", None, texts, queries)
        try:
            with pg_schema(pg_url) as url:
                out["postgresql"] = measure(Path(tmp) / "pg", url, texts, queries)
        except Exception as exc:  # an unreachable server is a result to report, not a crash
            out["postgresql"] = {"skipped": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    return out
