"""Where one search's time goes, in process, at 1k, 10k and 100k records: the speed benchmark's diary
records (times spread over the past year) and its 200 queries (3 in 5 name a period), each query's
vector cached first so only search work is measured. Per size and mode, the whole search's median and
mean wall time without a profiler, then the same searches under cProfile with each part's cumulative
time per search (cProfile slows Python code more than C code, so read the parts as shares, the wall
times as the speeds); and per size the second stage's cost against fusion alone. `make
bench-search-profile` writes benchmarks/results/search-parts.{md,json} (~10 min on 2 cores).
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
    "reading the hits from the store": ("memvec/search/hits.py", "to_hits"),
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


def measure(sizes: list[int], n_queries: int, rounds: int) -> dict[str, Any]:
    """Every mode at each number of records (one home grown to each size in turn)."""
    queries = [t.split(",")[0] for t in synthetic_texts(n_queries, seed=99)]
    results: dict[str, Any] = {"queries": n_queries, "rounds": rounds, "commit": _commit(), "sizes": {}}
    texts = synthetic_texts(max(sizes))
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp), embedder=load_embedder(), query_cache_size=2 * n_queries)
        held = 0
        for n in sorted(sizes):
            ingest(mem, texts[held:n], spread_over=timedelta(days=365))
            held = n
            results["sizes"][str(n)] = {mode: _timed(mem, queries, fields, rounds) for mode, fields in MODES.items()}
        mem.close()
    return results


def _timed(mem: Memory, queries: list[str], fields: dict[str, Any], rounds: int) -> dict[str, Any]:
    latencies(mem, queries, fields)  # vectors cached, every code path warm
    times = [ms for _ in range(rounds) for ms in latencies(mem, queries, fields)]
    return {
        "p50_ms": statistics.median(times),
        "mean_ms": statistics.fmean(times),
        "parts_ms": parts_ms(mem, queries, fields),
    }


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


RANKER_PARTS = ("the ranker's features", "the ranker's trees")


def ranker_share(modes: dict[str, Any]) -> tuple[float, float, float]:
    """(default / fusion alone wall medians, the same with the period ignored, the ranker's parts'
    share of the default search under cProfile)."""
    default, parts = modes["default"], modes["default"]["parts_ms"]
    return (
        default["p50_ms"] / modes["fusion alone"]["p50_ms"],
        modes["default, period ignored"]["p50_ms"] / modes["fusion alone, period ignored"]["p50_ms"],
        sum(parts[part] for part in RANKER_PARTS) / parts["whole search"],
    )


def markdown(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    shares = []
    for n, modes in sizes.items():
        with_period, without, share = ranker_share(modes)
        shares.append([f"{int(n):,}", f"{with_period:.2f}", f"{without:.2f}", f"{share:.0%}"])
    lines = [
        "# Where a search's time goes, in process (`make bench-search-profile`)",
        "",
        f"At {results['commit']}: the speed benchmark's diary records (times over a year), {results['queries']} "
        f"queries ({results['rounds']} rounds for the wall times), the query vectors cached. Milliseconds per "
        "search. The parts are cumulative times under cProfile, which slows Python more than C: read them as "
        "shares. BM25 scoring runs inside fusion.",
        "",
        "The second stage's cost by size: the default's wall median over fusion alone's, with and without a "
        "period's second ranking, and the ranker's features and trees as a share of the default search.",
        "",
        markdown_table(["records", "default / fusion alone", "period ignored", "ranker's share"], shares),
    ]
    for n, modes in sizes.items():
        rows = [["wall time per search, median", *(m["p50_ms"] for m in modes.values())]]
        rows += [["wall time per search, mean", *(m["mean_ms"] for m in modes.values())]]
        rows += [[f"{part} (under cProfile)", *(m["parts_ms"][part] for m in modes.values())] for part in PARTS]
        lines += ["", f"## {int(n):,} records", "", markdown_table(["part", *modes], rows)]
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_profile", description=__doc__)
    parser.add_argument(
        "--records", default="1000,10000,100000", help="numbers of records, comma-separated (default %(default)s)"
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    results = measure(_sizes(parser, args.records), args.queries, args.rounds)
    write_report(args.out, "search-parts", results, markdown(results))
    return 0


def _sizes(parser: argparse.ArgumentParser, text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",")})
    except ValueError:
        parser.error(f"--records: {text!r} is not comma-separated numbers")
    if sizes[0] < 1:
        parser.error("--records: each size must be at least 1")
    return sizes


if __name__ == "__main__":
    raise SystemExit(main())
