"""Documents through the files path: every SciFact abstract a Markdown file (its title the heading)
added with `add_many` (500 files at a time, as `memvec add-file` hands over a folder), beside the
same abstracts as one record each, in one sitting; both searched with the same claims. A file run
ranks documents by their best chunk (200 chunks asked, then cut to 100 documents). Also: ingest
throughput against the model's own rate on the same chunks, a PDF's pages per second, and
(`--overlaps 0,32,64`) the chunk overlap swept.

    python -m benchmarks.documents [--quick] [--overlaps 0,32,64] [--scifact DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks import scifact
from benchmarks.datasets import Query
from memvec import Memory
from memvec.embed import DEFAULT_MODEL_NAME, Embedder, load_embedder, qualified_model_id
from memvec.embed.base import tokenizer_of
from memvec.engine.documents import chunk_settings
from memvec.errors import InvalidInputError
from memvec.types import DocumentReport, NewRecord, Tier

MODES = {"default": None, "fusion alone": False}
PDF_PAGES = 100


def corpus(folder: Path, keys: set[str]) -> dict[str, tuple[str, str]]:
    rows = (json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line)
    return {r["_id"]: (r["title"], r["text"]) for r in rows if r["_id"] in keys}


def ranked(mem: Memory, queries: list[Query], key_of: Any, k: int, rerank: bool | None) -> list[list[str]]:
    out = []
    for query in queries:
        keys: list[str] = []
        for hit in mem.archival("docs").search(query.text, k=k, rerank=rerank):
            key = key_of(hit)
            if key not in keys:
                keys.append(key)
        out.append(keys[:100])
    return out


def _scores(mem: Memory, queries: list[Query], key_of: Any, k: int) -> dict[str, dict[str, float]]:
    return {
        mode: scifact.summarize(list(zip(ranked(mem, queries, key_of, k, rerank), queries, strict=True)))
        for mode, rerank in MODES.items()
    }


def run_files(
    embedder: Embedder, texts: dict[str, tuple[str, str]], queries: list[Query], overlap: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home", embedder=embedder) as mem:
        files = [(f"{key}.md", f"# {title}\n\n{abstract}\n".encode()) for key, (title, abstract) in texts.items()]
        started = time.perf_counter()
        chunks = 0
        for start in range(0, len(files), 500):  # as `memvec add-file` hands a folder over: batched
            for report in mem.documents("docs").add_many(files[start : start + 500], chunk_overlap=overlap):
                assert isinstance(report, DocumentReport), report
                chunks += report.document.chunks
        size = sum(len(content) for _, content in files)
        seconds = time.perf_counter() - started
        chunk_texts = [r.text for r in mem.archival("docs").list(limit=len(texts) * 50)]
        started = time.perf_counter()
        embedder.embed_documents(chunk_texts)
        model_seconds = time.perf_counter() - started
        scores = _scores(mem, queries, lambda hit: hit.citation.document.file_name.removesuffix(".md"), 200)
    return {
        "overlap": overlap,
        "scores": scores,
        "documents": len(texts),
        "chunks": chunks,
        "bytes": size,
        "seconds": seconds,
        "docs_per_s": len(texts) / seconds,
        "mb_per_s": size / seconds / 1e6,
        "model_mb_per_s": size / model_seconds / 1e6,
        "ratio_to_model": model_seconds / seconds,
    }


def run_records(
    embedder: Embedder, texts: dict[str, tuple[str, str]], queries: list[Query], windows: bool = True
) -> dict[str, Any]:
    """One record an abstract; `windows`: a long one embedded over all of its windows, else its first only."""
    settings: dict[str, Any] = {"index": {"long_text_windows": windows}}
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home", embedder=embedder, **settings) as mem:
        records = [
            NewRecord(
                agent="docs", tier=Tier.ARCHIVAL, text=f"{title}. {abstract}".strip(), citation={"source_url": key}
            )
            for key, (title, abstract) in texts.items()
        ]
        started = time.perf_counter()
        for start in range(0, len(records), 256):
            mem.insert(records[start : start + 256])
        seconds = time.perf_counter() - started
        scores = _scores(mem, queries, lambda hit: hit.citation.source_url, 100)
    return {
        "scores": scores,
        "documents": len(texts),
        "seconds": seconds,
        "docs_per_s": len(texts) / seconds,
        "windows": windows,
        "longer_than_window": longer_than_window(embedder, records),
    }


def longer_than_window(embedder: Embedder, records: list[NewRecord]) -> float:
    """The share of records the model's window cannot hold whole."""
    found = tokenizer_of(embedder)
    if found is None or not records:
        return 0.0
    return sum(len(spans) > found[1] for spans in found[0]([r.text for r in records])) / len(records)


def run_pdf(embedder: Embedder, texts: dict[str, tuple[str, str]], pages: int) -> dict[str, Any]:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for title, abstract in list(texts.values())[:pages]:
        pdf.add_page()
        pdf.multi_cell(0, 5, f"{title}\n\n{abstract}".encode("latin-1", "replace").decode("latin-1"))
    data = bytes(pdf.output())
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home", embedder=embedder) as mem:
        started = time.perf_counter()
        report = mem.add_document("docs", "abstracts.pdf", data)
        seconds = time.perf_counter() - started
    return {
        "pages": report.document.pages,
        "chunks": report.document.chunks,
        "bytes": len(data),
        "seconds": seconds,
        "pages_per_s": (report.document.pages or 0) / seconds,
    }


def run(folder: Path, size: str, embedder: Embedder, overlaps: tuple[int, ...] = (32,)) -> dict[str, Any]:
    """`size`: "quick" (10 claims over their abstracts and 24 others), "default" (fold 0's claims,
    every abstract) or "full"."""
    for overlap in overlaps:  # refused before any work, not after the first runs
        chunk_settings(embedder, overlap)
    task = scifact.task(folder, None if size == "full" else {0})
    if size == "quick":
        task = scifact.smaller(task, queries=10, docs=24)
    texts = corpus(folder, {d.key for d in task.docs})
    return {
        "queries": len(task.queries),
        "records": run_records(embedder, texts, task.queries),
        "records_first_window": run_records(embedder, texts, task.queries, windows=False),
        "files": [run_files(embedder, texts, task.queries, overlap) for overlap in overlaps],
        "pdf": run_pdf(embedder, texts, 3 if size == "quick" else PDF_PAGES),
    }


def markdown(found: dict[str, Any]) -> list[str]:
    records = found["records"]
    out = [
        "## SciFact as files",
        "",
        f'{found["queries"]} claims over {records["documents"]:,} abstracts, each once as a record ("title. '
        'abstract") and once as a Markdown file through `add_many` (title as heading, chunks cut by the '
        "model's tokenizer, overlap in tokens); a file run ranks documents by their best chunk.",
        "",
        "| ingested as | mode | nDCG@10 | R@100 | MRR@10 | documents/s |",
        "|---|---|---|---|---|---|",
    ]
    arms = (("one record each", records), ("one record each, first window only", found["records_first_window"]))
    for name, arm in arms:
        for mode, scores in arm["scores"].items():
            out.append(
                f"| {name} | {mode} | {scores['ndcg@10']:.3f} | {scores['recall@100']:.3f} | "
                f"{scores['mrr@10']:.3f} | {arm['docs_per_s']:.0f} |"
            )
    for files in found["files"]:
        for mode, scores in files["scores"].items():
            out.append(
                f"| files, overlap {files['overlap']} | {mode} | {scores['ndcg@10']:.3f} | "
                f"{scores['recall@100']:.3f} | {scores['mrr@10']:.3f} | {files['docs_per_s']:.0f} |"
            )
    files, pdf, cut = found["files"][0], found["pdf"], found["records_first_window"]
    out += [
        "",
        f"Long records: {records['longer_than_window']:.0%} of the abstracts are longer than the model's window. "
        "A record is embedded past its first window (the rest in equal windows, added to the first window's "
        "vector at a quarter weight: one vector a record, as many bytes as before); read to the first window "
        f"only, ingest runs at {cut['docs_per_s']:.0f} records/s against {records['docs_per_s']:.0f}.",
        "",
        f"Files: {files['chunks']:,} chunks for {files['documents']:,} abstracts, {files['mb_per_s']:.3f} MB/s "
        f"of Markdown ingested; the model alone embeds the same chunks at {files['model_mb_per_s']:.3f} MB/s "
        f"(ingest at {files['ratio_to_model']:.2f}x the model's rate: each chunk is embedded alone and with its "
        f"heading path). A {pdf['pages']}-page PDF: {pdf['pages_per_s']:.1f} pages/s ({pdf['chunks']} chunks).",
        "",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.documents", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="10 claims over their abstracts and 24 others")
    parser.add_argument("--overlaps", default="32", help="chunk overlaps to run, in tokens (e.g. 0,32,64)")
    parser.add_argument("--scifact", type=Path, default=scifact.DEFAULT_PATH)
    parser.add_argument("--model", default=qualified_model_id(DEFAULT_MODEL_NAME, None))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    overlaps = tuple(int(v) for v in args.overlaps.split(","))
    try:
        found = run(args.scifact, "quick" if args.quick else "default", load_embedder(args.model), overlaps)
    except (FileNotFoundError, InvalidInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "documents.json").write_text(json.dumps(found, indent=1))
    (args.out / "documents.md").write_text("\n".join(["# Documents", "", *markdown(found)]))
    print("\n".join(markdown(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
