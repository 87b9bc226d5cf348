"""What a document costs grows linearly with its size, with small constants, and the work is bounded
before it is done (#59 items 6 and 7): heading paths stored once, a PDF's text counted page by
page, its streams decompressed within a limit, a file's chunks counted before any is embedded.

Memory is measured (tracemalloc's peak while parsing), not assumed; time is measured by
`make bench-documents` (benchmarks/document_costs.py), not asserted here."""

from __future__ import annotations

import io
import json
import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec.documents.formats import MAX_HEADING_CHARS, ParsedDocument, parse
from memvec.errors import UnreadableDocumentError
from memvec.limits import MAX_DOCUMENT_CHARS, MAX_DOCUMENT_CHUNKS
from memvec.memory import Memory
from memvec.store.documents import _packed, _unpacked
from memvec.store.sqlite import SQLiteStore

# bytes of stored blocks per byte of input, and bytes of parsing memory per byte of input, at most
# (measured: ~5 and ~47 on the worst shapes generated here; a paragraph of one character is a block)
STORED_PER_BYTE = 8
PARSE_MEMORY_PER_BYTE = 80


def markdown(depth: int, title: int, sections: int, paragraphs: int) -> str:
    """`depth` levels of long headings over `sections` sections of tiny paragraphs: every paragraph
    sits under the whole path, the shape that multiplied a file by its headings."""
    top = "".join(f"{'#' * (level + 1)} {'t' * title} {level}\n\n" for level in range(depth - 1))
    body = "".join(f"{'#' * depth} s{n}\n\n" + "".join(f"p{m}\n\n" for m in range(paragraphs)) for n in range(sections))
    return top + body


def html(depth: int, title: int, sections: int, paragraphs: int) -> str:
    top = "".join(f"<h{level + 1}>{'t' * title}</h{level + 1}>" for level in range(depth - 1))
    body = "".join(
        f"<h{depth}>s{n}</h{depth}>" + "".join(f"<p>p{m}</p>" for m in range(paragraphs)) for n in range(sections)
    )
    return f"<html><body>{top}{body}</body></html>"


def stored_blocks(parsed: ParsedDocument) -> bytes:
    return json.dumps(_packed([(b.start, b.end, b.page, b.headings) for b in parsed.blocks])).encode()


def parse_peak(name: str, data: bytes) -> tuple[ParsedDocument, int]:
    tracemalloc.start()
    try:
        parsed = parse(name, data)
        return parsed, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


SHAPES = st.tuples(st.integers(1, 6), st.integers(1, 3 * MAX_HEADING_CHARS), st.integers(1, 40), st.integers(1, 40))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(shape=SHAPES, format_=st.sampled_from(["md", "html"]))
def test_stored_blocks_and_parse_memory_grow_linearly_with_the_file(
    shape: tuple[int, int, int, int], format_: str
) -> None:
    make: Callable[[int, int, int, int], str] = markdown if format_ == "md" else html
    data = make(*shape).encode()
    parsed, peak = parse_peak(f"doc.{format_}", data)
    stored = stored_blocks(parsed)
    assert len(stored) <= STORED_PER_BYTE * len(data) + 1_000, (len(stored), len(data))
    assert peak <= PARSE_MEMORY_PER_BYTE * len(data) + 1_000_000, (peak, len(data))
    assert _unpacked(json.loads(stored)) == [(b.start, b.end, b.page, b.headings) for b in parsed.blocks]
    assert all(len(h) <= MAX_HEADING_CHARS for b in parsed.blocks for h in b.headings)


@pytest.mark.parametrize("make", [markdown, html], ids=["markdown", "html"])
def test_eight_times_the_file_costs_about_eight_times_the_memory(make: Callable[[int, int, int, int], str]) -> None:
    name = "doc.md" if make is markdown else "doc.html"
    small, large = (make(6, 20, sections, 10).encode() for sections in (200, 1_600))
    (_, small_peak), (_, large_peak) = parse_peak(name, small), parse_peak(name, large)
    growth = (large_peak / small_peak) / (len(large) / len(small))
    assert 0.5 < growth < 1.5, f"memory grew {growth:.2f} times as fast as the file"


def test_a_small_file_of_long_deep_headings_stores_a_small_column(memory: Memory) -> None:
    """The filing's case: ~42 KB of Markdown whose paragraphs sit under six long headings (120 MB before)."""
    data = markdown(6, 6_000, 1, 1_500).encode()
    assert 35_000 < len(data) < 50_000
    report = memory.documents("kb").add("deep.md", data)
    store = memory._store
    assert isinstance(store, SQLiteStore)
    stored = store._query("SELECT blocks FROM documents WHERE id = ?", (report.document.id,))[0]["blocks"]
    assert len(stored) < 8 * len(data)
    cited = sum(len(json.dumps(r.citation.model_dump(mode="json"))) for r in memory.archival("kb").list(limit=1000))
    assert cited < 8 * len(data)
    cited_document = memory.documents("kb").chunks(report.document.id)[0].citation.document
    assert cited_document is not None and cited_document.headings[0].endswith("…")


def test_blocks_written_before_headings_were_stored_once_still_read() -> None:
    old = [[0, 5, None, ["Guide", "Setup"]], [7, 9, 2, []]]
    assert _unpacked(old) == [(0, 5, None, ("Guide", "Setup")), (7, 9, 2, ())]


def test_a_file_cut_into_too_many_chunks_is_refused_before_any_is_embedded(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sections = MAX_DOCUMENT_CHUNKS + 10
    data = "".join(f"# h{n}\n\nx\n\n" for n in range(sections)).encode()

    def not_now(texts: list[str]) -> None:
        raise AssertionError(f"{len(texts)} chunks embedded before the refusal")

    monkeypatch.setattr(memory._engine.embedder, "embed_documents", not_now)
    with pytest.raises(UnreadableDocumentError, match=f"the limit is {MAX_DOCUMENT_CHUNKS:,}"):
        memory.documents("kb").add("tiny-sections.md", data)
    assert memory.documents("kb").list(include_replaced=True) == [] and memory.archival("kb").count() == 0


def shared_stream_pdf(pages: int, content: bytes) -> bytes:
    """A PDF whose pages all draw one compressed content stream (each page re-reads all of it)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
            }
        )
    )
    stream = DecodedStreamObject()
    stream.set_data(content)
    shared = writer._add_object(stream.flate_encode())
    for _ in range(pages):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = shared
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_stream_that_decompresses_past_the_limit_is_refused_without_being_inflated() -> None:
    text = b"BT /F1 12 Tf 72 720 Td " + b"(aaaaaaaaaaaaaaaa) Tj " * 1_000_000 + b"ET"  # 22 MB inflated
    data = shared_stream_pdf(3, text)
    assert len(data) < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableDocumentError, match="holds more than memvec reads"):
            parse("bomb.pdf", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_DOCUMENT_CHARS + 40_000_000, f"{peak:,} bytes"


def test_a_pdf_over_the_text_limit_stops_at_the_page_that_passes_it() -> None:
    line = b"(" + b"a" * 4_000 + b") Tj T* "
    text = b"BT /F1 12 Tf 14 TL 72 720 Td " + line * (MAX_DOCUMENT_CHARS // 4_000 + 10) + b"ET"
    with pytest.raises(UnreadableDocumentError, match="by page 1;"):
        parse("long.pdf", shared_stream_pdf(3, text))
