"""Compact vectors: float32 against fp16 storage, flat and HNSW, on clustered synthetic vectors
(the growth table's generator, no model cost), in one run:

- bytes per vector of the FAISS index as stored (serialized; the in-memory size is the same data),
- build time, one-query search latency (p50/p99),
- recall@10 against exact float32 search (the flat index) over the same queries.

`python -m benchmarks.compact [--n 100000]` writes benchmarks/results/compact.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import RandomEmbedder
from benchmarks.metrics import percentile
from memvec.index.vector import INDEX_KINDS, VectorIndex, faiss

RESULTS = Path(__file__).resolve().parent / "results"


def vectors(n: int, dim: int = 384, batch: int = 1_000) -> np.ndarray:
    embedder = RandomEmbedder(dim)
    return np.concatenate(
        [embedder.embed_documents([f"doc {start}"] * min(batch, n - start)) for start in range(0, n, batch)]
    )


def measure(kind: str, data: np.ndarray, queries: np.ndarray, exact: list[set[int]] | None) -> dict[str, Any]:
    ids = np.arange(1, len(data) + 1, dtype=np.int64)
    started = time.perf_counter()
    index = VectorIndex(data.shape[1], kind=kind)  # type: ignore[arg-type]
    index.add(ids, data)
    build = time.perf_counter() - started
    latencies, found = [], []
    for query in queries:
        began = time.perf_counter()
        hit_ids, _ = index.search(query, 10)
        latencies.append((time.perf_counter() - began) * 1000)
        found.append(set(hit_ids.tolist()))
    recall = 1.0 if exact is None else sum(len(f & e) / 10 for f, e in zip(found, exact, strict=True)) / len(exact)
    stored = len(faiss.serialize_index(index._index))
    return {
        "kind": kind,
        "build_s": round(build, 2),
        "bytes_per_vector": stored / len(data),
        "search_ms": {"p50": percentile(latencies, 50), "p99": percentile(latencies, 99)},
        "recall_at_10_vs_exact": recall,
        "hits": found,
    }


def run(n: int, n_queries: int = 200) -> dict[str, Any]:
    data = vectors(n)
    queries = RandomEmbedder(384).embed_documents([f"query {i}" for i in range(n_queries)])
    rows: list[dict[str, Any]] = []
    exact: list[set[int]] | None = None
    for kind in INDEX_KINDS:
        row = measure(kind, data, queries, exact)
        if kind == "flat":
            exact = row["hits"]
        rows.append({k: v for k, v in row.items() if k != "hits"})
    return {"n": n, "dim": 384, "queries": n_queries, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Compact vectors: {result['n']:,} vectors x {result['dim']} dims, {result['queries']} queries",
        "",
        "One run, one thread per query. Recall@10 is the index's own against exact float32 search (flat) on the "
        "same queries; memvec's vector search then ranks a compact kind's 4 x k candidates by their exact "
        "vectors from the store (scale.md: recall@10 0.98 for hnsw-sq8 at 1M).",
        "",
        "| index kind | bytes/vector | build s | search p50 ms | search p99 ms | recall@10 vs exact |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['kind']} | {r['bytes_per_vector']:.0f} | {r['build_s']} | {r['search_ms']['p50']:.2f} | "
            f"{r['search_ms']['p99']:.2f} | {r['recall_at_10_vs_exact']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    result = run(args.n)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compact.json").write_text(json.dumps(result, indent=1))
    (RESULTS / "compact.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
