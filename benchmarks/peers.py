"""memvec beside peer systems on the same task, in one run: the LoCoMo recall tier (every turn of a
conversation, "speaker: text"), the same packaged all-MiniLM-L6-v2 model from its local path, the
same questions. Reports recall@10, index time and query latency per system.

`make bench-peers` runs it in its own environment (.venv-peers) with txtai and chromadb installed;
a peer that is not installed is reported as such.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
# txtai imports litellm before memvec can say so: keep litellm from fetching its cost map over the network
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from benchmarks import datasets
from benchmarks.harness import records_for
from benchmarks.metrics import hit_at_k, percentile
from benchmarks.tables import markdown_table
from memvec import Memory, SearchRequest
from memvec.embed import load_embedder
from memvec.embed.locate import packaged_minilm_path

Searcher = Callable[[str], list[str]]  # query -> ranked dia_ids


def memvec_system(
    task: datasets.Task, workdir: Path, model_id: str | None = None, rerank: bool | None = None
) -> Searcher:
    """memvec with its defaults (the int8 ONNX backend), or `model_id` (e.g. the torch backend);
    `rerank=False`: fusion alone, without the learned ranker."""
    mem = Memory.open(workdir, embedder=load_embedder(model_id))
    records = records_for(task, "peers")
    for start in range(0, len(records), 256):
        mem.insert(records[start : start + 256])

    def search(query: str) -> list[str]:
        request = SearchRequest(agent="peers", tier=task.tier, query=query, k=10, rerank=rerank)
        return [h.citation.turn_id or "" for h in mem.search(request)]

    return search


def txtai_system(task: datasets.Task, workdir: Path) -> Searcher:
    from txtai import Embeddings

    embeddings = Embeddings(path=str(packaged_minilm_path()), hybrid=True, content=True)
    embeddings.index([(doc.key, doc.text, None) for doc in task.docs])
    return lambda query: [str(r["id"]) for r in embeddings.search(query, 10)]


def chromadb_system(task: datasets.Task, workdir: Path) -> Searcher:
    import chromadb
    from chromadb.config import Settings
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(packaged_minilm_path()), device="cpu")

    class MiniLM(chromadb.EmbeddingFunction):  # type: ignore[misc]
        def __init__(self) -> None:
            pass

        def __call__(self, input: list[str]) -> Any:
            return [v.tolist() for v in model.encode(list(input), normalize_embeddings=True, batch_size=64)]

        @staticmethod
        def name() -> str:
            return "memvec-bench-minilm"

    client = chromadb.EphemeralClient(Settings(anonymized_telemetry=False, allow_reset=True))
    collection = client.create_collection(
        f"c{time.time_ns()}", embedding_function=MiniLM(), metadata={"hnsw:space": "cosine"}
    )
    for start in range(0, len(task.docs), 1000):
        chunk = task.docs[start : start + 1000]
        collection.add(ids=[d.key for d in chunk], documents=[d.text for d in chunk])
    return lambda query: list(collection.query(query_texts=[query], n_results=10)["ids"][0])


SYSTEMS: dict[str, Callable[[datasets.Task, Path], Searcher]] = {
    "memvec (hybrid, defaults)": memvec_system,
    "memvec (hybrid, fusion alone)": lambda task, workdir: memvec_system(task, workdir, rerank=False),
    "memvec (hybrid, torch backend)": lambda task, workdir: memvec_system(task, workdir, "all-MiniLM-L6-v2"),
    "txtai (hybrid)": txtai_system,
    "chromadb (vector, HNSW)": chromadb_system,
}


def run_system(build: Callable[[datasets.Task, Path], Searcher], tasks: list[datasets.Task]) -> dict[str, Any]:
    hits, latencies, index_seconds = [], [], 0.0
    for task in tasks:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            search = build(task, Path(tmp))
            index_seconds += time.perf_counter() - started
            for query in task.queries:
                started = time.perf_counter()
                ranked = search(query.text)
                latencies.append((time.perf_counter() - started) * 1000)
                hits.append(hit_at_k(ranked, query.evidence, 10))
    return {
        "recall@10": mean(hits),
        "index_seconds": index_seconds,
        "docs": sum(len(t.docs) for t in tasks),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "queries": len(hits),
    }


def _ratios(measured: dict[str, dict[str, Any]]) -> list[str]:
    ours, peer = measured.get("memvec (hybrid, defaults)"), measured.get("txtai (hybrid)")
    if not ours or not peer:
        return []
    index_ratio, query_ratio = ours["index_seconds"] / peer["index_seconds"], ours["p50_ms"] / peer["p50_ms"]
    return [
        f"memvec (defaults) against txtai in this run: index time x{index_ratio:.2f}, query p50 "
        f"x{query_ratio:.2f}, recall@10 {ours['recall@10'] - peer['recall@10']:+.3f}.",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__)
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    tasks = [datasets.locomo_recall_task(s) for s in datasets.load_locomo(args.locomo)]
    rows, measured = [], {}
    for name, build in SYSTEMS.items():
        try:
            r = run_system(build, tasks)
        except ImportError as exc:
            rows.append([name, "not installed", "-", "-", "-", str(exc)[:60]])
            continue
        measured[name] = r
        rows.append(
            [
                name,
                r["recall@10"],
                round(r["index_seconds"], 1),
                r["p50_ms"],
                r["p99_ms"],
                f"{r['docs']} turns, {r['queries']} questions",
            ]
        )
        print(name, r, flush=True)
    text = [
        "# memvec beside peers (LoCoMo recall tier, same MiniLM, one run)",
        "",
        "Each system indexes every turn of each dev conversation as `speaker: text` with the packaged "
        "all-MiniLM-L6-v2 and answers every question with evidence; recall@10 = any evidence turn in "
        "the top 10. Query latency includes embedding the query; index time includes loading the model. "
        "memvec runs with its defaults (hybrid fusion with the session-level score, session-context and "
        "date indexing, the int8 ONNX backend), and once more on the torch backend (what it ran on "
        "before) for reference. **The defaults' learned ranker was fitted on these same five dev "
        "conversations**, so its recall@10 here is in-sample: held out (each conversation ranked by a "
        "ranker fitted on the other four, `latest.md`) it is lower; *fusion alone* (no ranker, nothing "
        "fitted) is the clean comparison. The torch backend has no ranker fitted for it: fusion alone.",
        "",
        markdown_table(["system", "recall@10", "index s", "query p50 ms", "query p99 ms", "data"], rows),
        "",
        *_ratios(measured),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.md").write_text("\n".join(text))
    print(f"peers: {args.out / 'peers.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
