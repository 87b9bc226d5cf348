"""Speed and scale through the public API: ingest, query latency, growth with N, rebuild."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.harness import MeasuredEmbedder, RandomEmbedder
from benchmarks.metrics import percentile
from memvec import Memory, NewRecord, SearchRequest
from memvec.embed import Embedder
from memvec.index.heap import BIG_INDEX, release_freed_memory

BATCH = 256
_SUBJECTS = ["I", "We", "My sister", "The team", "Our neighbour", "Grandpa", "The kids", "My manager"]
_VERBS = ["visited", "cooked", "painted", "fixed", "talked about", "planned", "read about", "bought", "sold", "lost"]
_OBJECTS = [
    "the old bicycle",
    "a lemon cake",
    "the garden fence",
    "a trip to Lisbon",
    "the quarterly budget",
    "a jazz concert",
    "the new laptop",
    "a marathon plan",
    "the leaking roof",
    "a birthday party",
    "the adoption papers",
    "a pottery class",
    "the camping gear",
    "a job interview",
    "the piano lessons",
]
_WHEN = ["yesterday", "last weekend", "this morning", "on Friday", "in March", "after work", "before dinner"]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """Diary-like sentences with a numbered detail, so every text is distinct."""
    rng = random.Random(seed)
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_WHEN)}, "
        f"note {i} with detail {rng.randrange(10**6)}."
        for i in range(n)
    ]


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of this process (or of `pid`)."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def disk_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


SESSION_SIZE = 50  # records per session (a conversation or a document), so the session-level score has work


def _records(
    texts: list[str], first: int, agent: str = "bench", times: list[datetime] | None = None
) -> list[NewRecord]:
    return [
        NewRecord.model_validate(
            {
                "agent": agent,
                "tier": "archival",
                "text": t,
                "citation": {"session_id": f"s{(first + i) // SESSION_SIZE}"},
                **({"created_at": times[first + i]} if times else {}),
            }
        )
        for i, t in enumerate(texts)
    ]


def ingest(
    mem: Memory,
    texts: list[str],
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
    spread_over: timedelta | None = None,
) -> float:
    """Seconds to insert `texts`; `spread_over`: their times spread evenly over that span up to now
    (else all now), so a period a query names ("yesterday", "in March") holds some of them."""
    now = datetime.now(UTC)
    times = [now - spread_over * (1 - i / len(texts)) for i in range(len(texts))] if spread_over else None
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        mem.insert(_records(texts[start : start + batch], start, times=times))
        if progress:
            progress(min(batch, len(texts) - start))
    return time.perf_counter() - started


def latencies(mem: Memory, queries: list[str], fields: dict[str, Any], k: int = 10) -> list[float]:
    """Milliseconds per search call."""
    out = []
    for query in queries:
        request = SearchRequest.model_validate({"agent": "bench", "tier": "archival", "query": query, "k": k, **fields})
        started = time.perf_counter()
        mem.search(request)
        out.append((time.perf_counter() - started) * 1000)
    return out


def summary_ms(values: list[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "mean": sum(values) / len(values),
    }


MODES: dict[str, dict[str, Any]] = {
    "token": {"mode": "token"},
    "bm25": {"mode": "bm25"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid"},
    "hybrid, no ranker": {"mode": "hybrid", "rerank": False},
    # the diary texts' queries name a period ("yesterday", "in March") 3 times in 5: the default ranks
    # those twice (memvec.search.period); this is the same search without that second ranking
    "hybrid, period ignored": {"mode": "hybrid", "boost_dates_in_query": False},
    "hybrid without session score": {"mode": "hybrid", "session_weight": 0.0},
}


def ingest_and_query(
    model: Embedder, n: int, n_queries: int = 200, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Real-model ingest throughput (embedding vs the rest), query latency, disk, rebuild."""
    texts = synthetic_texts(n)
    queries = [t.split(",")[0] for t in synthetic_texts(n_queries, seed=99)]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        embedder = MeasuredEmbedder(model, cache_queries=False)
        rss_before = rss_bytes()
        mem = Memory.open(home, embedder=embedder, query_cache_size=0)
        total = ingest(mem, texts, progress=progress, spread_over=timedelta(days=365))
        embed_seconds = embedder.seconds
        mem.close()
        result: dict[str, Any] = {
            "n": n,
            "batch": BATCH,
            "seconds": total,
            "records_per_s": n / total,
            "embed_seconds": embed_seconds,
            "index_and_store_seconds": total - embed_seconds,
            "disk_bytes_per_record": disk_bytes(home) / n,
        }
        mem = Memory.open(home, embedder=embedder, query_cache_size=0)  # every query a forward pass
        mem.search(SearchRequest(agent="bench", tier="archival", query="warm up"))
        result["rss_bytes_per_record"] = max(0, rss_bytes() - rss_before) / n
        result["latency_ms_with_embedding"] = {m: summary_ms(latencies(mem, queries, f)) for m, f in MODES.items()}
        embedder.cache_queries = True  # the same queries again, their vectors now cached: search cost alone
        for query in queries:
            embedder.embed_query(query)
        result["latency_ms_search_only"] = {m: summary_ms(latencies(mem, queries, f)) for m, f in MODES.items()}
        mem.close()
        result["hnsw_recall_at_10_vs_flat_real"] = _hnsw_recall(home, embedder, queries)
        mem = Memory.open(home, embedder=embedder, index={"kind": "flat"})
        result["rebuild_seconds_no_reembed"] = _timed(lambda: mem.rebuild())
        result["rebuild_seconds_reembed"] = _timed(lambda: mem.rebuild(model="sentence-transformers/all-MiniLM-L6-v2"))
        mem.close()
    return result


def context_ingest(model: Embedder, n: int = 2000, session_size: int = 20) -> dict[str, Any]:
    """Recall messages in sessions: each is embedded alone and after the previous message of its session."""
    texts = synthetic_texts(n, seed=21)
    records = [
        NewRecord.model_validate(
            {
                "agent": "bench",
                "tier": "recall",
                "text": t,
                "role": "user",
                "citation": {"session_id": f"s{i // session_size}", "turn_id": str(i)},
            }
        )
        for i, t in enumerate(texts)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        embedder = MeasuredEmbedder(model, cache_queries=False)
        mem = Memory.open(Path(tmp), embedder=embedder)
        started = time.perf_counter()
        for start in range(0, n, BATCH):
            mem.insert(records[start : start + BATCH])
        seconds = time.perf_counter() - started
        mem.close()
    return {"n": n, "seconds": seconds, "records_per_s": n / seconds, "embed_seconds": embedder.seconds}


def _hnsw_recall(home: Path, embedder: Embedder, queries: list[str]) -> float:
    """Recall@10 of HNSW against exact search on real embeddings (vector mode)."""
    found: dict[str, dict[str, set[int]]] = {}
    for kind in ("flat", "hnsw"):
        with Memory.open(home, embedder=embedder, index={"kind": kind}) as mem:
            archival = mem.archival("bench")
            found[kind] = {q: {h.id for h in archival.search(q, k=10, mode="vector")} for q in queries}
    return sum(len(found["hnsw"][q] & found["flat"][q]) / 10 for q in queries) / len(queries)


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def growth_point(
    n: int, dim: int = 384, n_queries: int = 100, progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Index cost at N records with random unit vectors (no model): Flat vs HNSW."""
    texts = synthetic_texts(n, seed=n)
    queries = [f"query {i}: " + t.split(",")[0] for i, t in enumerate(synthetic_texts(n_queries, seed=5))]
    point: dict[str, Any] = {"n": n}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        release_freed_memory(BIG_INDEX)  # what earlier points freed must not count for or against this one
        rss_before = rss_bytes()
        mem = Memory.open(home, embedder=RandomEmbedder(dim), index={"kind": "flat"})
        point["ingest_seconds"] = ingest(mem, texts, batch=5000, progress=progress)
        mem.close()
        point["disk_bytes_per_record"] = disk_bytes(home) / n
        flat_hits: dict[str, list[int]] = {}
        for kind in ("flat", "hnsw"):
            started = time.perf_counter()
            mem = Memory.open(home, embedder=RandomEmbedder(dim), index={"kind": kind})
            mem._engine.tier_index("bench", mem.archival("bench").tier)  # loads, or builds HNSW from the store
            point[f"{kind}_open_seconds"] = time.perf_counter() - started
            release_freed_memory(BIG_INDEX)  # count what the index holds, not what building it freed
            point[f"{kind}_rss_bytes_per_record"] = max(0, rss_bytes() - rss_before) / n
            point[f"{kind}_vector_ms"] = summary_ms(latencies(mem, queries, {"mode": "vector"}))
            point[f"{kind}_hybrid_ms"] = summary_ms(latencies(mem, queries, {"mode": "hybrid"}))
            hits = {q: [h.id for h in mem.archival("bench").search(q, k=10, mode="vector")] for q in queries}
            if kind == "flat":
                flat_hits = hits
            else:
                point["hnsw_recall_at_10_vs_flat"] = sum(
                    len(set(hits[q]) & set(flat_hits[q])) / 10 for q in queries
                ) / len(queries)
            mem.close()
    return point
