"""Where one search's time goes, in process: the speed benchmark's 10,000 diary records (times
spread over the past year) and its 200 queries (3 in 5 name a period), each query's vector cached
first so only search work is measured. Per mode, the whole search's median and mean wall time
without a profiler, then the same searches under cProfile with each part's cumulative time per
search (cProfile slows Python code more than C code, so read the parts as shares, the wall times
as the speeds). `make bench-search-profile` writes benchmarks/results/search-parts.{md,json}.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.report import write_report
from benchmarks.speed import ingest, latencies, synthetic_texts
from benchmarks.tables import markdown_table
from memvec import Memory, SearchRequest
from memvec.embed import load_embedder

MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "fusion alone": {"rerank": False},
    "default, period ignored": {"boost_dates_in_query": False},
    "fusion alone, period ignored": {"rerank": False, "boost_dates_in_query": False},
}

# (module path suffix, function name) -> the part it stands for; cumulative times, so a part
# includes what it calls (BM25 scoring runs inside fusion)
PARTS: dict[str, tuple[str, str]] = {
    "whole search": ("memvec/engine/searching.py", "search"),
    "fusion (candidates, scores, session means)": ("memvec/search/hybrid.py", "_fuse"),
    "BM25 scoring of the query": ("memvec/index/lexical.py", "query_scores"),
    "the ranker's features": ("memvec/search/hybrid.py", "_featured"),
    "the ranker's trees": ("memvec/search/rerank.py", "score"),
    "reading the hits from the store": ("memvec/search/hybrid.py", "to_hits"),
    "the filters' scope (a store read)": ("memvec/engine/searching.py", "_scope"),
    "whether the period divides the records": ("memvec/engine/searching.py", "_divides"),
    "merging a period's two rankings": ("memvec/search/period.py", "with_period"),
}


def parts_ms(mem: Memory, queries: list[str], fields: dict[str, Any]) -> dict[str, float]:
    """Each part's cumulative milliseconds per search under cProfile (0.0: never called)."""
    batch = [
        SearchRequest.model_validate({"agent": "bench", "tier": "archival", "query": q, "k": 10, **fields})
        for q in queries
    ]
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [mem.search(r) for r in batch])
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    out = {}
    for part, (suffix, name) in PARTS.items():
        seconds = sum(v[3] for (path, _, func), v in stats.items() if func == name and path.endswith(suffix))
        out[part] = seconds * 1000 / len(batch)
    return out


def measure(n: int, n_queries: int, rounds: int) -> dict[str, Any]:
    texts = synthetic_texts(n)
    queries = [t.split(",")[0] for t in synthetic_texts(n_queries, seed=99)]
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp), embedder=load_embedder(), query_cache_size=2 * n_queries)
        ingest(mem, texts, spread_over=timedelta(days=365))
        results: dict[str, Any] = {"n": n, "queries": n_queries, "rounds": rounds, "commit": _commit(), "modes": {}}
        for mode, fields in MODES.items():
            latencies(mem, queries, fields)  # vectors cached, every code path warm
            times = [ms for _ in range(rounds) for ms in latencies(mem, queries, fields)]
            results["modes"][mode] = {
                "p50_ms": statistics.median(times),
                "mean_ms": statistics.fmean(times),
                "parts_ms": parts_ms(mem, queries, fields),
            }
        mem.close()
    return results


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def markdown(results: dict[str, Any]) -> str:
    modes = results["modes"]
    rows = [["wall time per search, median", *(m["p50_ms"] for m in modes.values())]]
    rows += [["wall time per search, mean", *(m["mean_ms"] for m in modes.values())]]
    rows += [[f"{part} (under cProfile)", *(m["parts_ms"][part] for m in modes.values())] for part in PARTS]
    return "\n".join(
        [
            "# Where a search's time goes, in process (`make bench-search-profile`)",
            "",
            f"At {results['commit']}: {results['n']:,} records, {results['queries']} queries ({results['rounds']} "
            "rounds for the wall times), the query vectors cached. Milliseconds per search. The parts are "
            "cumulative times under cProfile, which slows Python more than C: read them as shares. "
            "BM25 scoring runs inside fusion.",
            "",
            markdown_table(["part", *modes], rows),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_profile", description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    results = measure(args.records, args.queries, args.rounds)
    write_report(args.out, "search-parts", results, markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
