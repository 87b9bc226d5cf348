"""PDF to text, page by page, by pypdf (pure Python; a citation names the page its chunk is on)."""

from __future__ import annotations

import io
import logging

from memvec.documents.formats import MAX_PDF_PAGES, Block, ParsedDocument, parse_lines
from memvec.errors import UnreadableDocumentError

PAGE_BREAK = "\n\n"


def parse_pdf(name: str, data: bytes) -> ParsedDocument:
    """The text of every page, pages joined by a blank line; each page's paragraphs are blocks with
    its number. UnreadableDocumentError for a file pypdf cannot open, an encrypted one, too many
    pages, or one with no text layer (a scan: memvec does no OCR)."""
    if not data.startswith(b"%PDF-"):
        raise UnreadableDocumentError(f"{name}: not a PDF (it does not start with %PDF-)")
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on odd but readable files are noise
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise UnreadableDocumentError(f"{name}: the PDF is encrypted")
        if len(reader.pages) > MAX_PDF_PAGES:
            raise UnreadableDocumentError(f"{name}: {len(reader.pages):,} pages; the limit is {MAX_PDF_PAGES:,}")
        pages = [page.extract_text() or "" for page in reader.pages]
    except UnreadableDocumentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        raise UnreadableDocumentError(f"{name}: the PDF cannot be read ({type(exc).__name__}: {exc})") from None
    text, blocks = "", []
    for number, page_text in enumerate(pages, start=1):
        page_text = page_text.replace("\x00", "").strip()
        if not page_text:
            continue
        if text:
            text += PAGE_BREAK
        parsed = parse_lines(page_text, markdown=False, media_type="application/pdf", page=number, offset=len(text))
        blocks += parsed.blocks or [Block(len(text), len(text) + len(page_text), number)]
        text += page_text
    if not blocks:
        raise UnreadableDocumentError(f"{name}: the PDF has no text layer (a scanned PDF needs OCR first)")
    return ParsedDocument(text=text, media_type="application/pdf", blocks=blocks, pages=len(pages))
