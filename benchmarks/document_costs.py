"""What a document costs before its chunks are embedded, up to the largest memvec accepts (4,000,000
characters of text): parsing and cutting (median wall time of 3 runs, without a profiler), the parse's
peak Python memory (tracemalloc, a separate run), the chunks it makes, and the whole `documents.add`
with the `hash:384` embedder (parse, cut, store; the model's own time is the chunks times two over its
rate, which `make bench` reports as ingest). Shapes: plain paragraphs and many tiny sections under long
headings, as Markdown, HTML and PDF (fpdf2). Each size is 4 times the one before, so linear growth
reads as 4x a row. `make bench-documents` writes benchmarks/results/document-costs.{md,json} (~5 min).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.report import write_report
from benchmarks.tables import markdown_table
from memvec import Memory
from memvec.documents.chunking import ChunkSettings, chunk_document
from memvec.documents.formats import parse
from memvec.embed import load_embedder
from memvec.embed.base import tokenizer_of
from memvec.engine.documents import chunk_settings
from memvec.errors import UnreadableDocumentError
from memvec.limits import MAX_DOCUMENT_CHARS

SENTENCE = "The pump moves water from the cistern to the tank; check its mesh filter every week. "
SIZES = (MAX_DOCUMENT_CHARS // 64, MAX_DOCUMENT_CHARS // 16, MAX_DOCUMENT_CHARS // 4, MAX_DOCUMENT_CHARS - 1_000)


def paragraphs_markdown(chars: int) -> bytes:
    section = "## Maintenance\n\n" + (SENTENCE * 8 + "\n\n") * 6
    return (section * (chars // len(section) + 1))[:chars].encode()


def sections_markdown(chars: int) -> bytes:
    top = "".join(f"{'#' * level} {'Heading ' * 20}{level}\n\n" for level in range(1, 6))
    body = "".join(f"###### s{n}\n\np{n}\n\n" for n in range(chars // 16))
    return (top + body)[:chars].encode()


def paragraphs_html(chars: int) -> bytes:
    section = "<h2>Maintenance</h2>" + f"<p>{SENTENCE * 8}</p>" * 6
    return f"<html><body>{section * (chars // (len(section) - 30) + 1)}</body></html>".encode()


def paragraphs_pdf(chars: int) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=8)
    page = SENTENCE * 40
    for _ in range(max(1, chars // len(page))):
        pdf.add_page()
        pdf.multi_cell(0, 4, page)
    return bytes(pdf.output())


SHAPES: dict[str, tuple[str, Callable[[int], bytes]]] = {
    "Markdown, paragraphs": ("doc.md", paragraphs_markdown),
    "Markdown, tiny sections under long headings": ("doc.md", sections_markdown),
    "HTML, paragraphs": ("doc.html", paragraphs_html),
    "PDF, paragraphs": ("doc.pdf", paragraphs_pdf),
}


def measure(name: str, data: bytes, settings: ChunkSettings, spans: Any, home: Path) -> dict[str, Any]:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        parsed = parse(name, data)
        chunks = chunk_document(parsed, spans, settings)
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    parse(name, data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    with Memory.open(home, model="hash:384") as mem:
        started = time.perf_counter()
        try:
            mem.documents("bench").add(name, data)
            added: float | None = time.perf_counter() - started
        except UnreadableDocumentError:  # a refusal is a result: the chunk limit
            added = None
    return {
        "bytes": len(data),
        "chars": len(parsed.text),
        "chunks": len(chunks),
        "parse_and_cut_s": statistics.median(times),
        "parse_peak_mib": peak / 2**20,
        "add_s": added,
    }


def run(out: Path) -> dict[str, Any]:
    embedder = load_embedder("onnx-int8:all-MiniLM-L6-v2")
    found = tokenizer_of(embedder)
    assert found is not None
    settings, spans = chunk_settings(embedder), found[0]
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for shape, (name, make) in SHAPES.items():
            results[shape] = []
            for n, chars in enumerate(SIZES):
                row = measure(name, make(chars), settings, spans, Path(scratch) / f"{len(results)}-{n}")
                results[shape].append(row)
                print(shape, row, flush=True)
    return results


def report(results: dict[str, list[dict[str, Any]]]) -> str:
    rows = [
        [
            shape,
            f"{r['bytes']:,}",
            f"{r['chars']:,}",
            f"{r['chunks']:,}",
            f"{r['parse_and_cut_s']:.2f}",
            f"{r['parse_peak_mib']:.0f}",
            "refused (chunks)" if r["add_s"] is None else f"{r['add_s']:.1f}",
        ]
        for shape, measured in results.items()
        for r in measured
    ]
    head = ["shape", "file bytes", "text chars", "chunks", "parse + cut s", "parse peak MiB", "add s (hash:384)"]
    return "# What a document costs\n\n" + (__doc__ or "") + "\n" + markdown_table(head, rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.document_costs", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    results = run(args.out)
    write_report(args.out, "document-costs", results, report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
