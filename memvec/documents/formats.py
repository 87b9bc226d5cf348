"""Files to text with their structure: plain text, Markdown, HTML and PDF.

Each format gives the document's text and its blocks (paragraphs, with the page they are on and the
headings above them) as character offsets into that text, so a chunk's citation can be sliced out of
it again. The parsers:
- plain text and Markdown: a line scanner (ATX headings `#`..`######`, fenced code kept whole, blank
  lines between paragraphs); the text is the file's own, so offsets slice the file.
- HTML: the standard library's `html.parser` (tolerant of broken markup, no dependency), walked for
  headings `h1`..`h6` and block elements; script, style and other non-text elements are dropped.
- PDF: pypdf (pure Python, maintained, reads page by page: a citation names its page), text
  extracted per page; a PDF without text (a scan) is refused, not stored empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from memvec.errors import UnreadableDocumentError
from memvec.limits import MAX_DOCUMENT_CHARS

MAX_DOCUMENT_BYTES = 15 * 1024 * 1024  # a file as uploaded, checked before it is parsed (an upload fits
# in the service's 16 MiB body with its multipart framing)
MAX_PDF_PAGES = 2_000
# a heading's title as it goes into every heading path below it (cited with, and embedded with, each
# chunk of its section): longer ones are cut, so a path costs at most 6 x this whatever the heading
MAX_HEADING_CHARS = 200
MEDIA_TYPES = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
READABLE = sorted(set(MEDIA_TYPES.values()))


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph (or heading line, or code block) of the document: `text[start:end]`."""

    start: int
    end: int
    page: int | None = None  # 1-based, for paged formats
    headings: tuple[str, ...] = ()  # the heading path above it, outermost first


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    text: str
    media_type: str
    blocks: list[Block]
    pages: int | None = None
    title: str | None = None


def media_type_of(name: str, data: bytes, declared: str | None = None) -> str:
    """The format to read `data` as: the declared media type when it is one memvec reads, else by the
    file name's extension, else by its first bytes; anything else is read as plain text (and refused
    there when it is binary)."""
    declared = (declared or "").split(";")[0].strip().lower()
    if declared in READABLE:
        return declared
    suffix = PurePath(name).suffix.lower()
    if suffix in MEDIA_TYPES:
        return MEDIA_TYPES[suffix]
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    if data[:512].lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return "text/html"
    return "text/plain"


def heading_title(raw: str) -> str:
    title = raw.strip()
    return title if len(title) <= MAX_HEADING_CHARS else title[: MAX_HEADING_CHARS - 1].rstrip() + "…"


def parse(name: str, data: bytes, media_type: str | None = None) -> ParsedDocument:
    """The document in `data` (named `name`) as text and blocks; UnreadableDocumentError when it is
    empty, too large, in a format memvec does not read, corrupt, or without text."""
    if not data:
        raise UnreadableDocumentError(f"{name}: the file is empty (0 bytes)")
    if len(data) > MAX_DOCUMENT_BYTES:
        raise UnreadableDocumentError(f"{name}: {len(data):,} bytes; the limit is {MAX_DOCUMENT_BYTES:,}")
    kind = media_type_of(name, data, media_type)
    if kind == "application/pdf":
        from memvec.documents.pdf import parse_pdf  # pypdf is imported only for PDFs

        parsed = parse_pdf(name, data)
    else:
        text = _decode(name, data)
        if kind == "text/html":
            from memvec.documents.html import parse_html

            parsed = parse_html(text)
        else:
            parsed = parse_lines(text, markdown=kind == "text/markdown", media_type=kind)
    if len(parsed.text) > MAX_DOCUMENT_CHARS:
        raise UnreadableDocumentError(
            f"{name}: {len(parsed.text):,} characters of text; the limit is {MAX_DOCUMENT_CHARS:,}"
        )
    if not parsed.blocks:
        raise UnreadableDocumentError(f"{name}: no text in the file")
    return parsed


def _decode(name: str, data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableDocumentError(f"{name}: binary data, not text (a NUL byte); memvec reads {', '.join(READABLE)}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocumentError(f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return text.replace("\x00", "")


_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass
class _Scan:
    blocks: list[Block] = field(default_factory=list)
    headings: list[tuple[int, str]] = field(default_factory=list)  # (level, title)
    start: int | None = None
    end: int = 0
    fence: str | None = None

    def close(self, page: int | None) -> None:
        if self.start is not None:
            self.blocks.append(Block(self.start, self.end, page, tuple(t for _, t in self.headings)))
        self.start = None


def parse_lines(
    text: str, *, markdown: bool, media_type: str, page: int | None = None, offset: int = 0
) -> ParsedDocument:
    """Paragraphs between blank lines; with `markdown`, ATX headings open sections (the heading line
    is the first block of its section) and fenced code is one block whatever its blank lines."""
    scan = _Scan()
    position = 0
    for line in text.splitlines(keepends=True):
        start, body = position, line.rstrip("\r\n")
        position += len(line)
        if markdown and scan.fence is None and (heading := _HEADING.match(body)):
            scan.close(page)
            level = len(heading.group(1))
            scan.headings = [h for h in scan.headings if h[0] < level] + [(level, heading_title(heading.group(2)))]
            scan.start, scan.end = offset + start, offset + start + len(body)
            scan.close(page)
            continue
        fence = _FENCE.match(body) if markdown else None
        if fence and scan.fence is None:
            scan.fence = fence.group(1)[0] * 3
        elif fence and scan.fence and body.strip().startswith(scan.fence):
            scan.fence = None
        elif not body.strip() and scan.fence is None:
            scan.close(page)
            continue
        if body.strip():
            if scan.start is None:
                scan.start = offset + start + len(body) - len(body.lstrip())
            scan.end = offset + start + len(body.rstrip())
    scan.close(page)
    return ParsedDocument(text=text, media_type=media_type, blocks=scan.blocks)
