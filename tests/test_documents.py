"""Documents into archival memory: parsing, chunking, citations, the file lifecycle, the CLI."""

from __future__ import annotations

import itertools
import json
import re
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec.cli import cli, run
from memvec.documents import formats
from memvec.documents.chunking import ChunkSettings, chunk_document, heads_section, word_spans
from memvec.documents.formats import Block, parse
from memvec.embed.hashing import HashingEmbedder
from memvec.errors import InvalidInputError, NotFoundError, UnreadableDocumentError
from memvec.memory import Memory
from memvec.types import AgentSettings, DocumentReport

MANUAL = """# Pump manual

The P-200 pump moves water from the cistern.

## Installation

Bolt the pump to a level concrete slab.

```
pump --prime
# not a heading: inside a fence

still the fence
```

## Maintenance

### Filters

Replace the mesh filter every ninety days.
"""


def make_pdf(pages: list[str]) -> bytes:
    """A real multi-page PDF with one text block per page (fpdf2's core font)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def chunks_of(memory: Memory, agent: str, document_id: int) -> list[tuple[int, str, list[str], int | None]]:
    out = []
    for record in memory.documents(agent).chunks(document_id):
        cited = record.citation.document
        assert cited is not None
        out.append((cited.chunk, record.text, cited.headings, cited.page))
    return out


def test_markdown_chunks_carry_their_heading_path_and_slice_the_file(memory: Memory) -> None:
    report = memory.add_document("ana", "manual.md", MANUAL)
    assert report.created and report.document.media_type == "text/markdown" and report.document.chunks == 3
    text = memory.documents("ana").text(report.document.id)
    assert text == MANUAL
    for record in memory.documents("ana").chunks(report.document.id):
        cited = record.citation.document
        assert cited is not None and text[cited.start : cited.end] == record.text
        assert cited.file_name == "manual.md" and cited.content_hash == report.document.content_hash
    rows = chunks_of(memory, "ana", report.document.id)
    assert [c[2] for c in rows] == [
        ["Pump manual"],
        ["Pump manual", "Installation"],
        ["Pump manual", "Maintenance", "Filters"],  # a heading alone is no chunk: it opens the next one
    ]
    assert rows[2][1] == "## Maintenance\n\n### Filters\n\nReplace the mesh filter every ninety days."
    fenced = rows[1][1]
    assert "# not a heading" in fenced and "still the fence" in fenced


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("# Pump P-200\n\n## Specs\n\nIt moves 200 litres a minute.\n", ["# Pump P-200\n\n## Specs\n\nIt moves"]),
        ("Intro text.\n\n## References\n", ["Intro text.\n\n## References"]),
        ("# Only a title\n", ["# Only a title"]),
        ("# A\n\n## B\n\n### C\n\n" + "word " * 60 + "\n", ["# A\n\n## B\n\n### C\n\nword", "word word"]),
    ],
    ids=["heading-then-subheading", "trailing-heading", "title-only", "headings-before-a-long-paragraph"],
)
def test_a_heading_line_is_never_a_chunk_of_its_own(text: str, chunks: list[str]) -> None:
    doc = parse("p.md", text.encode())
    cut = chunk_document(doc, word_spans, ChunkSettings(max_tokens=40, overlap=4))
    assert len(cut) == len(chunks)
    for chunk, opening in zip(cut, chunks, strict=True):
        assert doc.text[chunk.start : chunk.end].startswith(opening)
    assert not [c for c in cut[:-1] if heads_section(doc.text, Block(c.start, c.end, c.page, c.headings))]


def test_html_keeps_headings_and_drops_what_is_not_text(memory: Memory) -> None:
    page = (
        "<html><head><title>Pump</title><style>p{color:red}</style></head><body>"
        "<h1>Pump manual</h1><p>The P-200 moves <b>water</b>.</p><script>var hidden = 1;</script>"
        "<h2>Filters</h2><ul><li>Replace the mesh filter.</li><li>Rinse it.</li></ul></body></html>"
    )
    report = memory.add_document("ana", "manual.html", page)
    document = memory.documents("ana")
    text = document.text(report.document.id)
    assert "hidden" not in text and "color" not in text and "The P-200 moves water." in text
    assert report.document.title == "Pump"
    rows = chunks_of(memory, "ana", report.document.id)
    assert [r[2] for r in rows] == [["Pump manual"], ["Pump manual", "Filters"]]
    assert rows[1][1] == "Filters\n\nReplace the mesh filter.\n\nRinse it."


SITE = (
    "<html><head><title>P-200</title></head><body>"
    "<header><a href='/'>Acme pumps</a> <a href='/shop'>Shop</a></header>"
    "<nav><a href='/'>Home</a> | <a href='/p'>Products</a> | <a href='/s'>Support</a></nav>"
    "<div role='navigation'><a href='/a'>Account</a></div>"
    "<main><article><header><h1>Pump P-200</h1></header>"
    "<nav><a href='#specs'>Specs</a></nav>"
    "<h2>Specs</h2><div><div><p>The P-200 moves 200 litres a minute.</p></div></div>"
    "<footer>Last checked in May.</footer></article></main>"
    "<footer>Copyright Acme <div>Imprint</div></footer></body></html>"
)


def test_html_leaves_out_the_page_frame_and_keeps_the_article(memory: Memory) -> None:
    report = memory.add_document("ana", "p200.html", SITE)
    text = memory.documents("ana").text(report.document.id)
    assert text == "Pump P-200\n\nSpecs\n\nThe P-200 moves 200 litres a minute.\n\nLast checked in May."
    rows = chunks_of(memory, "ana", report.document.id)
    assert [(r[1].split("\n")[0], r[2]) for r in rows] == [("Pump P-200", ["Pump P-200", "Specs"])]
    only_navigation = "<html><body><nav><a href='/'>Home</a> | <a href='/p'>Products</a></nav></body></html>"
    assert memory.documents("ana").text(memory.add_document("ana", "nav.html", only_navigation).document.id) == (
        "Home | Products"
    )


def test_with_the_real_model_a_file_is_found_by_its_content_not_its_frame_or_title(real_memory: Memory) -> None:
    real_memory.add_document("ana", "p200.html", SITE)
    real_memory.add_document(
        "ana",
        "pumps.md",
        "# Pump P-200\n\n## Specs\n\nThe P-200 moves 200 litres a minute.\n\n## Support\n\nCall us on weekdays.\n",
    )
    archival = real_memory.archival("ana")
    hits = archival.search("How many litres a minute does the P-200 pump move?", k=5, per_document=True)
    assert len(hits) == 2 and all("200 litres a minute" in h.text for h in hits), [h.text for h in hits]
    assert not [h for h in archival.search("Home Products Support Account", k=10) if "Products" in h.text]


def test_a_pdf_is_read_page_by_page_and_each_chunk_names_its_page(memory: Memory) -> None:
    pages = [
        "Cover page of the field guide.",
        "Chapter one covers ferns.",
        "Chapter two covers mosses.",
        "Chapter three covers lichens.",
    ]
    report = memory.add_document("ana", "guide.pdf", make_pdf(pages))
    assert report.document.pages == 4 and report.document.media_type == "application/pdf"
    rows = chunks_of(memory, "ana", report.document.id)
    assert [(r[1], r[3]) for r in rows] == list(zip(pages, [1, 2, 3, 4], strict=True))


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.txt", b"", "empty"),
        ("broken.pdf", b"%PDF-1.7\n1 0 obj <</Type /Catalog>> garbage", "cannot be read|no text"),
        ("fake.pdf", b"just text named like a PDF", "not a PDF"),
        ("photo.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary data"),
        ("latin.txt", "caf\xe9".encode("latin-1"), "not UTF-8"),
        ("blank.md", b"\n\n   \n", "no text"),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_clearly_and_writes_nothing(
    memory: Memory, name: str, data: bytes, message: str
) -> None:
    with pytest.raises(UnreadableDocumentError, match=message):
        memory.add_document("ana", name, data)
    assert memory.documents("ana").list(include_replaced=True) == [] and memory.archival("ana").count() == 0


def test_the_size_limit_is_checked_before_the_file_is_parsed(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: object) -> None:
        raise AssertionError("parsed a file over the limit")

    monkeypatch.setattr(formats, "MAX_DOCUMENT_BYTES", 1_000)
    monkeypatch.setattr("memvec.documents.pdf.parse_pdf", never)
    with pytest.raises(UnreadableDocumentError, match="the limit is 1,000"):
        memory.add_document("ana", "big.pdf", b"%PDF-1.4" + b" " * 1_000)


@pytest.mark.parametrize("overlap", [-1, 47, 10_000])
def test_an_overlap_the_window_cannot_hold_is_refused_and_writes_nothing(memory: Memory, overlap: int) -> None:
    # the test embedder has no tokenizer: 200-word windows, less the heading reserve, hold 184
    with pytest.raises(InvalidInputError, match=f"overlap by 0 to 46 tokens, not {overlap}"):
        memory.add_document("ana", "notes.md", "# Notes\n\nsome text", chunk_overlap=overlap)
    assert memory.documents("ana").list(include_replaced=True) == [] and memory.archival("ana").count() == 0
    assert memory.add_document("ana", "notes.md", "# Notes\n\nsome text", chunk_overlap=46).created


def test_the_same_content_again_adds_nothing(memory: Memory) -> None:
    first = memory.add_document("ana", "manual.md", MANUAL)
    again = memory.add_document("ana", "copy of manual.md", MANUAL.encode())
    assert not again.created and again.document == first.document and again.chunk_ids == []
    assert memory.archival("ana").count() == first.document.chunks


def test_a_changed_file_replaces_its_chunks_as_new_versions(memory: Memory) -> None:
    first = memory.add_document("ana", "manual.md", MANUAL)
    before = datetime.now(UTC)
    second = memory.add_document("ana", "manual.md", MANUAL.replace("ninety", "thirty"))
    assert second.created and second.replaced == first.document.id
    docs = memory.documents("ana")
    assert [d.id for d in docs.list()] == [second.document.id]
    old = next(d for d in docs.list(include_replaced=True) if d.id == first.document.id)
    assert old.replaced_by == second.document.id and old.replaced_at is not None
    archival = memory.archival("ana")
    now_hits = archival.search("how often is the mesh filter replaced", k=10)
    assert {h.citation.document.document_id for h in now_hits if h.citation.document} == {second.document.id}
    then_hits = archival.search("how often is the mesh filter replaced", k=10, as_of=before - timedelta(seconds=0))
    assert any("ninety" in h.text for h in then_hits) and not any("thirty" in h.text for h in then_hits)


def test_deleting_a_file_leaves_no_chunk_in_search_store_or_index_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        mem.archival("ana").insert("a passage of the agent's own")
        first = mem.add_document("ana", "notes.md", "# Notes\n\nThe canary-77d1 sings at dawn.\n")
        second = mem.add_document("ana", "notes.md", "# Notes\n\nThe canary-77d1 sings at dusk.\n")
        assert mem.archival("ana").search("canary-77d1", k=5)[0].citation.document is not None
        assert mem.documents("ana").delete(second.document.id) == first.document.chunks + second.document.chunks
        assert mem.documents("ana").list(include_replaced=True) == []
        assert [h.text for h in mem.archival("ana").search("canary-77d1 sings", k=5)] == [
            "a passage of the agent's own"
        ]
        assert mem.archival("ana").count() == 1
        with pytest.raises(NotFoundError):
            mem.documents("ana").text(first.document.id)
    leaked = [path for path in home.rglob("*") if path.is_file() and b"canary-77d1" in path.read_bytes()]
    assert leaked == []


def test_a_passage_that_repeats_a_chunk_is_its_own_record_and_outlives_the_file(memory: Memory) -> None:
    report = memory.add_document("ana", "a.txt", "Water the ferns every Sunday morning.")
    passage = memory.archival("ana").insert("Water the ferns every Sunday morning.")
    assert passage.created and passage.record.id not in report.chunk_ids
    memory.documents("ana").delete(report.document.id)
    assert [r.id for r in memory.archival("ana").list()] == [passage.record.id]


def test_a_hit_expands_to_its_neighbouring_chunks(memory: Memory) -> None:
    text = "\n\n".join(f"# Part {i}\n\nParagraph number {i} of the document." for i in range(6))
    report = memory.add_document("ana", "parts.md", text)
    chunks = memory.documents("ana").chunks(report.document.id)
    around = memory.documents("ana").around(chunks[3], context=1)
    assert [r.citation.document.chunk for r in around if r.citation.document] == [2, 3, 4]


def test_an_agent_deleted_takes_its_documents_along(memory: Memory) -> None:
    memory.add_document("ana", "manual.md", MANUAL)
    memory.add_document("bob", "manual.md", MANUAL)
    memory.delete_agent("ana")
    assert memory.documents("ana").list(include_replaced=True) == []
    assert len(memory.documents("bob").list()) == 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["alpha", "beta", "gamma-delta", "x" * 70, "é"]), min_size=1, max_size=90),
        min_size=1,
        max_size=8,
    ),
    st.integers(min_value=8, max_value=60),
    st.integers(min_value=0, max_value=4),
)
def test_chunks_fit_the_window_keep_text_order_and_cover_every_token(
    paragraphs: list[list[str]], max_tokens: int, overlap: int
) -> None:
    text = "\n\n".join(" ".join(words) for words in paragraphs)
    doc = parse("p.txt", text.encode())
    cut = ChunkSettings(max_tokens=max_tokens, overlap=min(overlap, max_tokens // 4))
    chunks = chunk_document(doc, word_spans, cut)
    tokens = [(doc.text[s:e], s) for s, e in word_spans([doc.text])[0]]
    covered = set()
    for previous, chunk in itertools.pairwise(chunks):
        assert previous.start < chunk.start and previous.end <= chunk.end
    for chunk in chunks:
        inside = [s for _, s in tokens if chunk.start <= s < chunk.end]
        assert 1 <= len(inside) <= max_tokens
        covered.update(inside)
    assert covered == {s for _, s in tokens}


class Cli:
    def __init__(self, home: Path, capsys: pytest.CaptureFixture[str], model: str = "hash:64") -> None:
        self.home, self.capsys, self.model = home, capsys, model

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = run(cli, ["--home", str(self.home), "--model", self.model, *args])
        out, err = self.capsys.readouterr()
        return code, out, err


def test_add_file_takes_files_folders_and_globs_and_reports_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memvec = Cli(tmp_path / "home", capsys)
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "manual.md").write_text(MANUAL)
    (docs / "sub" / "page.html").write_text("<h1>Page</h1><p>Some text.</p>")
    (docs / "sub" / "skip.bin").write_bytes(b"\x00\x01")
    code, out, err = memvec("add-file", str(docs), "--agent", "ana")
    assert code == 0, err
    assert out.count("added") == 2 and "skip.bin" not in out
    assert f"skipped {docs / 'sub' / 'skip.bin'}: binary data" in err
    code, out, _ = memvec("add-file", str(docs / "**" / "*.md"), "--agent", "ana")
    assert code == 0 and out.startswith("unchanged")
    code, out, _ = memvec("documents", "list", "--agent", "ana", "--json")
    listed = [json.loads(line) for line in out.splitlines()]
    assert [d["name"] for d in listed] == ["manual.md", "sub/page.html"]
    code, out, _ = memvec("documents", "text", str(listed[1]["id"]), "--agent", "ana")
    assert out == "Page\n\nSome text.\n"
    code, out, _ = memvec("documents", "delete", str(listed[0]["id"]), "--agent", "ana")
    assert code == 0 and f"{listed[0]['chunks']} chunks" in out


def test_a_docs_tree_keeps_every_file_by_its_path_and_says_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memvec = Cli(tmp_path / "home", capsys)
    tree = tmp_path / "tree"
    for folder in ("alpha", "beta", ".git"):
        (tree / folder).mkdir(parents=True)
    (tree / "alpha" / "README.md").write_text("# Alpha\n\nAlpha pumps run at 40 rpm.\n")
    (tree / "beta" / "README.md").write_text("# Beta\n\nBeta valves open at 3 bar.\n")
    (tree / "guide.rst").write_text("Guide\n=====\n\nRestart the pump after a power cut.\n")
    (tree / "tool.py").write_text("def restart():\n    return 'pump restarted'\n")
    (tree / ".git" / "config").write_text("[core]\n")
    (tree / ".env").write_text("SECRET=1\n")
    (tree / "empty.txt").write_bytes(b"")
    code, out, err = memvec("add-file", str(tree), "--agent", "kb")
    assert code == 0, err
    assert out.count("added") == 4 and "replaced" not in out, out
    assert f"skipped {tree / '.env'}: hidden" in err and f"skipped {tree / '.git/'}: hidden" in err
    assert f"skipped {tree / 'empty.txt'}: the file is empty" in err
    code, out, _ = memvec("documents", "list", "--agent", "kb", "--json")
    names = sorted(json.loads(line)["name"] for line in out.splitlines())
    assert names == ["alpha/README.md", "beta/README.md", "guide.rst", "tool.py"]
    (tree / "beta" / "README.md").write_text("# Beta\n\nBeta valves open at 4 bar.\n")
    code, out, err = memvec("add-file", str(tree), "--agent", "kb")
    assert code == 0, err
    assert out.count("unchanged") == 3 and "as 'beta/README.md'" in out and "replaced document" in out
    code, out, _ = memvec("search", "valves open bar", "--agent", "kb", "--tier", "archival", "--json")
    assert "4 bar" in out and "3 bar" not in out


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(200 * 1024 * 1024)  # sparse: 200 MiB to stat, nothing on disk
    memvec = Cli(tmp_path / "home", capsys)
    tracemalloc.start()
    try:
        code, _, err = memvec("add-file", str(big), "--agent", "ana")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and "big.txt: 209,715,200 bytes; the limit is" in err
    assert peak < 20 * 1024 * 1024, f"{peak:,} bytes allocated: the file was read"


def test_search_prints_a_chunk_cited_on_one_line_and_the_hash_only_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "manual.md").write_text(MANUAL)
    memvec = Cli(tmp_path / "home", capsys)
    assert memvec("add-file", str(tmp_path / "manual.md"), "--agent", "ana")[0] == 0
    code, out, _ = memvec("search", "mesh filter every ninety days", "--agent", "ana", "--tier", "archival", "-k", "1")
    head, text, cited = out.rstrip("\n").split("\n")
    assert code == 0 and "vector=" in head and "session_vector" not in head and "session_bm25" not in head
    assert text.strip() == "## Maintenance ### Filters Replace the mesh filter every ninety days."
    assert re.fullmatch(
        r"manual\.md, § Pump manual > Maintenance > Filters, chars \d+-\d+ · \d{4}-\d\d-\d\d \d\d:\d\d", cited.strip()
    )
    code, out, _ = memvec("search", "mesh filter", "--agent", "ana", "--tier", "archival", "-k", "1", "--json")
    assert len(json.loads(out)[0]["citation"]["document"]["content_hash"]) == 64


def test_add_file_refuses_an_empty_file_and_a_corrupt_pdf_with_exit_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memvec = Cli(tmp_path / "home", capsys)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n%%EOF garbage")
    code, _, err = memvec("add-file", str(tmp_path / "empty.txt"), str(tmp_path / "broken.pdf"), "--agent", "ana")
    assert code == 2
    assert "empty.txt: the file is empty" in err and "broken.pdf: " in err and "2 of 2 files" in err
    code, out, _ = memvec("documents", "list", "--agent", "ana")
    assert out == ""
    assert memvec("add-file", str(tmp_path / "missing-*.md"), "--agent", "ana")[0] == 5


def test_a_question_answered_on_page_3_finds_the_chunk_that_cites_page_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], minilm_int8: object
) -> None:
    """The real model and tokenizer, through the command line: a multi-page PDF in, a question out."""
    pages = [
        "Annual report of the Riverside Allotment Society. This report covers membership and finances.",
        "Membership grew to 214 households this year, and the waiting list now has 38 names on it.",
        "The committee voted to replace the rainwater tanks on plot row C. The new tanks hold 1,200 litres "
        "each and were installed by volunteers in late April.",
        "Finances: the society ended the year with a surplus of 2,310 pounds after the tank purchase.",
    ]
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(make_pdf(pages))
    memvec = Cli(tmp_path / "home", capsys, model="onnx-int8:all-MiniLM-L6-v2")
    code, out, err = memvec("add-file", str(pdf), "--agent", "ana", "--json")
    assert code == 0, err
    document_id = json.loads(out)["document"]["id"]
    code, out, _ = memvec(
        "search", "how big are the new water tanks?", "--agent", "ana", "--tier", "archival", "--json", "-k", "3"
    )
    top = json.loads(out)[0]
    cited = top["citation"]["document"]
    assert cited["page"] == 3 and cited["file_name"] == "report.pdf" and "1,200 litres" in top["text"]
    code, text, _ = memvec("documents", "text", str(document_id), "--agent", "ana")
    assert text[cited["start"] : cited["end"]] == top["text"]


def test_an_export_carries_the_files_and_an_import_cites_them_by_their_new_ids(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "a", embedder=HashingEmbedder(32)) as source:
        source.create_agent(AgentSettings(name="ana"))
        source.add_document("ana", "manual.md", MANUAL)
        before = datetime.now(UTC)
        source.add_document("ana", "manual.md", MANUAL.replace("ninety", "thirty"))
        folder = source.folders().create("papers")
        source.folders().upload(folder.id, "plots.txt", b"Plot row C is by the gate.")
        source.folders().attach(folder.id, "ana")
        exported = source.export_agent("ana")
    assert len(exported.documents) == 3
    with Memory.open(tmp_path / "b", embedder=HashingEmbedder(32)) as target:
        target.add_document("bob", "other.txt", "an unrelated file, so ids differ between the homes")
        target.import_agent(exported, name="ana2")
        docs = target.documents("ana2")
        assert sorted(d.name for d in docs.list()) == ["manual.md", "plots.txt"]
        assert len(docs.list(include_replaced=True)) == 3
        for at, word in ((None, "thirty"), (before, "ninety")):
            hits = target.archival("ana2").search("mesh filter", k=3, as_of=at)
            hit = next(h for h in hits if "mesh filter" in h.text)
            cited = hit.citation.document
            assert cited is not None and word in hit.text
            assert docs.text(cited.document_id)[cited.start : cited.end] == hit.text
        plots = next(d for d in docs.list() if d.name == "plots.txt")
        assert docs.delete(plots.id) == 1 and target.documents("bob").list()[0].name == "other.txt"


def test_an_import_whose_chunk_cites_a_file_it_lacks_is_refused_whole(memory: Memory) -> None:
    memory.add_document("ana", "manual.md", MANUAL)
    exported = memory.export_agent("ana").model_copy(update={"documents": []})
    with pytest.raises(InvalidInputError, match="which the export does not hold"):
        memory.import_agent(exported, name="ana2")
    assert not memory.has_agent("ana2")


def test_many_files_go_in_together_and_a_bad_one_gets_its_error_in_its_place(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "manual.md").write_text(MANUAL)
    reports = memory.documents("ana").add_many(
        [
            tmp_path / "manual.md",
            ("empty.txt", b""),
            ("copy.md", MANUAL),
            ("notes.txt", "Water the ferns."),
            tmp_path / "missing.md",
        ]
    )
    assert [type(r).__name__ for r in reports] == [
        "DocumentReport",
        "UnreadableDocumentError",
        "DocumentReport",
        "DocumentReport",
        "NotFoundError",
    ]
    first, _, copy, notes, _ = reports
    assert isinstance(first, DocumentReport) and isinstance(copy, DocumentReport)
    assert first.created and not copy.created and copy.document.id == first.document.id  # the same content
    assert isinstance(notes, DocumentReport) and notes.created
    assert [d.name for d in memory.documents("ana").list()] == ["manual.md", "notes.txt"]
    assert memory.archival("ana").count() == first.document.chunks + 1


def test_per_document_search_gives_each_file_once_by_its_best_chunk(memory: Memory) -> None:
    for n in range(4):
        body = "\n\n".join(f"## Part {p}\n\nThe heron count in marsh {n} part {p} was high." for p in range(5))
        memory.add_document("ana", f"marsh-{n}.md", f"# Marsh {n}\n\n{body}\n")
    memory.archival("ana").insert("A heron count of my own, with no file.")
    archival = memory.archival("ana")
    chunks = archival.search("heron count marsh", k=10)
    grouped = archival.search("heron count marsh", k=10, per_document=True)
    files = [h.citation.document.document_id for h in grouped if h.citation.document]
    assert len(files) == len(set(files)) == 4 and len(grouped) == 5
    assert len({h.citation.document.document_id for h in chunks if h.citation.document}) < len(chunks)
    first = {
        h.citation.document.document_id: h.id
        for h in reversed(archival.search("heron count marsh", k=100))
        if h.citation.document
    }
    assert {h.id for h in grouped if h.citation.document} == set(first.values())  # the best chunk of each
    assert [h.id for h in archival.search("heron count marsh", k=2, per_document=True)] == [h.id for h in grouped[:2]]


def test_a_backup_restores_the_files_with_their_chunks(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(32)) as mem:
        report = mem.add_document("ana", "manual.md", MANUAL)
        mem.backup(tmp_path / "backup")
    with Memory.restore(tmp_path / "backup", tmp_path / "restored", embedder=HashingEmbedder(32)) as restored:
        docs = restored.documents("ana")
        assert docs.list() == [report.document] and docs.text(report.document.id) == MANUAL
        hit = restored.archival("ana").search("mesh filter", k=1)[0]
        assert hit.citation.document is not None and hit.citation.document.document_id == report.document.id
