"""One agent's tier at 1M records (`make bench-full`): synthetic text with a Zipf vocabulary and
synthetic clustered vectors (benchmarks.harness.RandomEmbedder), so the model's cost is left out.

The home is filled once (kind flat), then each measurement opens it in a fresh child process, so
RSS per record is what one loaded tier index costs (vectors + BM25 + ids + sessions; the SQLite
page cache is bounded and small) and nothing left over from the ingest counts. Reported: ingest
and HNSW-SQ8 build time, RSS per record per kind, hybrid and BM25 p50/p99 (search only, the
synthetic embedder costs microseconds), recall@10 of hnsw-sq8 against exact float32 search, and
the BM25 query time of the dense all-documents scorer memvec used before (as a baseline).
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import RandomEmbedder
from benchmarks.speed import SESSION_SIZE, rss_bytes, summary_ms
from memvec import Memory, NewRecord, SearchRequest, Tier
from memvec.index.lexical import term_hash, top_k
from memvec.index.tokenize import STOPWORDS, tokenize

DIM = 384
VOCABULARY = 1_000_000


def zipf_texts(n: int, seed: int, words: int = 16) -> list[str]:
    """Texts of `words` words drawn from a Zipf(1.1) vocabulary. As in English, the most frequent
    words are stopwords: the first ranks are memvec's own stopword list (the tokenizer drops them,
    as it drops them from real text); the long tail is made-up words (ranks past the vocabulary are
    drawn again uniformly from its rare part). A quarter of the texts hold the word "diary", a
    corpus-wide common word; each text ends with a unique token."""
    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.1, size=(n, words))
    overflow = ranks > VOCABULARY
    ranks[overflow] = rng.integers(1_000, VOCABULARY, size=int(overflow.sum()))
    common = rng.random(n) < 0.25
    return [
        " ".join(_word(int(r)) for r in row) + (" diary" if c else "") + f" n{i}"
        for i, (row, c) in enumerate(zip(ranks, common, strict=True))
    ]


_STOPWORDS = sorted(STOPWORDS)


def _word(rank: int) -> str:
    if rank <= len(_STOPWORDS):
        return _STOPWORDS[rank - 1]
    letters, vowels = "bcdfghjklmnpqrstvwxz", "aeiou"
    out, value = [], rank
    while True:
        out.append(letters[value % 20] + vowels[(value // 20) % 5])
        value //= 100
        if value == 0:
            return "".join(out) + "x"


def queries(n: int) -> list[str]:
    """Eight words of a text like the others (three to four of them are stopwords)."""
    return [" ".join(t.split()[:8]) for t in zipf_texts(n, seed=4242)]


def fill(home: Path, n: int, batch: int = 5_000) -> float:
    started = time.perf_counter()
    with Memory.open(home, embedder=RandomEmbedder(DIM), index={"kind": "flat"}) as mem:
        for start in range(0, n, batch):
            texts = zipf_texts(min(batch, n - start), seed=start)
            mem.insert(
                [
                    NewRecord.model_validate(
                        {
                            "agent": "big",
                            "tier": "archival",
                            "text": t,
                            "citation": {"session_id": f"s{(start + i) // SESSION_SIZE}"},
                        }
                    )
                    for i, t in enumerate(texts)
                ]
            )
    return time.perf_counter() - started


def _dense_bm25(index: Any, query: str) -> None:
    """The scorer memvec had before: a score array over every document of the tier, filled from
    the query's postings, then the top 100 of its non-zero entries (the same formula)."""
    lexical, n = index.lexical, len(index.lexical)
    slot_ids = np.frombuffer(lexical._slot_ids, dtype=np.int64)
    scores = np.zeros(len(slot_ids), dtype=np.float32)
    norm = lexical.k1 * (
        1.0 - lexical.b + lexical.b * np.frombuffer(lexical._slot_lens, dtype=np.float32) / lexical.avgdl
    )
    for token in tokenize(query):
        slots, tfs = lexical._postings(term_hash(token))
        if len(slots):
            idf = np.log1p((n - len(slots) + 0.5) / (len(slots) + 0.5))
            scores[slots] += idf * tfs * (lexical.k1 + 1.0) / (tfs + norm[slots])
    candidates = (slot_ids >= 0) & (scores > 0)
    top_k(slot_ids[candidates], scores[candidates], 100)


def _timed_ms(action: Any, items: list[str]) -> dict[str, float]:
    values = []
    for item in items:
        started = time.perf_counter()
        action(item)
        values.append((time.perf_counter() - started) * 1000)
    return summary_ms(values)


def measure_kind(home: str, kind: str, n: int, n_queries: int, out: Any) -> None:
    """In a child process: open the tier with `kind`, then RSS and latencies."""
    before = rss_bytes()
    started = time.perf_counter()
    mem = Memory.open(home, embedder=RandomEmbedder(DIM), index={"kind": kind})
    index = mem._engine.tier_index("big", Tier.ARCHIVAL)
    result: dict[str, Any] = {
        "kind": index.vector.kind,
        "open_s": time.perf_counter() - started,
        "rss_bytes_per_record": (rss_bytes() - before) / n,
    }
    texts = queries(n_queries)
    request = {"agent": "big", "tier": "archival", "k": 10}
    common = [f"{q} diary" for q in texts]  # one term in a quarter of the tier
    for label, items in (("", texts), ("common_", common)):
        result[f"{label}hybrid_ms"] = _timed_ms(lambda q: mem.search(SearchRequest(**request, query=q)), items)
        result[f"{label}bm25_ms"] = _timed_ms(lambda q: index.lexical.search(q, 100), items)
        result[f"{label}bm25_dense_ms"] = _timed_ms(lambda q: _dense_bm25(index, q), items)
    result["vector_ms"] = _timed_ms(lambda q: mem.search(SearchRequest(**request, query=q, mode="vector")), texts)
    result["vector_top10"] = [
        [h.id for h in mem.search(SearchRequest(**request, query=q, mode="vector"))] for q in texts
    ]
    mem.close()
    out.put(result)


def in_child(home: Path, kind: str, n: int, n_queries: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=measure_kind, args=(str(home), kind, n, n_queries, results))
    child.start()
    result: dict[str, Any] = results.get()
    child.join()
    return result


def run(n: int, n_queries: int = 200, work: Path | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        home = Path(tmp)
        point: dict[str, Any] = {"n": n, "ingest_s": fill(home, n)}
        flat = in_child(home, "flat", n, n_queries)
        compact = in_child(home, "auto", n, n_queries)  # builds hnsw-sq8 from the store past 50,000
        reopened = in_child(home, "auto", n, n_queries)  # loads what the previous child saved
        exact = flat.pop("vector_top10")
        for row in (compact, reopened):
            found = row.pop("vector_top10")
            row["recall_at_10_vs_exact"] = sum(
                len(set(a) & set(b)) / 10 for a, b in zip(found, exact, strict=True)
            ) / len(exact)
        point.update(flat=flat, auto_build=compact, auto=reopened)
    return point


def crossover(sizes: tuple[int, ...] = (10_000, 25_000, 50_000, 100_000), n_queries: int = 200) -> list[dict[str, Any]]:
    """Vector search alone, flat against hnsw-sq8, at the sizes around auto_hnsw_from: where HNSW
    starts to win, and what building it costs (what a tier pays once when it crosses the line)."""
    from benchmarks.compact import measure, vectors

    rows = []
    queries = RandomEmbedder(DIM).embed_documents([f"query {i}" for i in range(n_queries)])
    for n in sizes:
        data = vectors(n)
        flat = measure("flat", data, queries, None)
        hnsw = measure("hnsw-sq8", data, queries, flat["hits"])
        rows.append(
            {
                "n": n,
                "flat_p50_ms": flat["search_ms"]["p50"],
                "hnsw_p50_ms": hnsw["search_ms"]["p50"],
                "hnsw_build_s": hnsw["build_s"],
                "recall_at_10": hnsw["recall_at_10_vs_exact"],
            }
        )
    return rows


def crossover_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "## Where HNSW starts to win (vector search alone, one thread, 200 queries)",
        "",
        "| N | flat p50 ms | hnsw-sq8 p50 ms | hnsw-sq8 build s | recall@10 vs exact |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['n']:,} | {r['flat_p50_ms']:.2f} | {r['hnsw_p50_ms']:.2f} | {r['hnsw_build_s']:.1f} | "
        f"{r['recall_at_10']:.3f} |"
        for r in rows
    ]
    return "\n".join(lines) + "\n"


def markdown(points: list[dict[str, Any]]) -> str:
    lines = [
        "## One tier at scale (synthetic Zipf text, synthetic clustered vectors, dim 384: index cost without "
        "model cost)",
        "",
        "Each row: one child process opening the tier (RSS per record = what the loaded index costs: vectors, "
        "BM25, ids, sessions; the store stays on disk). Times are search only (the synthetic embedder costs "
        "microseconds), p50 / p99 over 200 queries of 8 words. 'common' adds a word found in a quarter of "
        "the tier to each query. 'dense' is the BM25 scorer memvec had before (a score for every record), "
        "timed on the same index. Recall@10 is vector search against exact float32 search.",
        "",
        "| N | kind | open s | RSS B/rec | hybrid ms | hybrid, common ms | vector p50 ms | BM25 ms | "
        "BM25 dense p50 ms | BM25 common ms | BM25 common dense p50 ms | recall@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for point in points:
        for label in ("flat", "auto_build", "auto"):
            r = point[label]
            name = r["kind"] + (" (built from the store)" if label == "auto_build" else "")
            recall = f"{r['recall_at_10_vs_exact']:.3f}" if "recall_at_10_vs_exact" in r else "exact"
            cells = [
                f"{point['n']:,}",
                name,
                f"{r['open_s']:.1f}",
                f"{r['rss_bytes_per_record']:.0f}",
                _pair(r["hybrid_ms"]),
                _pair(r["common_hybrid_ms"]),
                f"{r['vector_ms']['p50']:.2f}",
                _pair(r["bm25_ms"]),
                f"{r['bm25_dense_ms']['p50']:.2f}",
                _pair(r["common_bm25_ms"]),
                f"{r['common_bm25_dense_ms']['p50']:.2f}",
                recall,
            ]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"Ingest (flat, store + indexes): {p['n']:,} records in {p['ingest_s']:.0f} s." for p in points]
    return "\n".join(lines) + "\n"


def _pair(ms: dict[str, float]) -> str:
    return f"{ms['p50']:.2f} / {ms['p99']:.2f}"


def save(points: list[dict[str, Any]], out: Path, crossing: list[dict[str, Any]] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps({"points": points, "crossover": crossing}, indent=1))
    (out / "scale.md").write_text(markdown(points) + ("\n" + crossover_markdown(crossing) if crossing else ""))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, action="append", help="tier sizes (default: 100,000 and 1,000,000)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-crossover", action="store_true", help="skip the flat vs hnsw-sq8 table")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    crossing = crossover(n_queries=args.queries) if not args.no_crossover else None
    points = []
    for n in args.n or [100_000, 1_000_000]:
        started = time.perf_counter()
        points.append(run(n, args.queries))
        print(f"{n:,} records: {time.perf_counter() - started:.0f} s", flush=True)
        save(points, args.out, crossing)
    print((args.out / "scale.md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
