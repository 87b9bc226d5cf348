"""PDF to text, page by page, by pypdf (pure Python; a citation names the page its chunk is on)."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Sequence
from typing import Any

from memvec.documents.formats import MAX_PDF_PAGES, Block, ParsedDocument, parse_lines
from memvec.errors import UnreadableDocumentError
from memvec.limits import MAX_DOCUMENT_CHARS

PAGE_BREAK = "\n\n"
# pypdf's limits while memvec reads a PDF: a stream decompressed past this much is refused (pypdf's
# default, 75 MB, let a 68 KB file's one shared content stream cost a minute and 1.6 GB). A content
# stream a text layer needs is far smaller than the text limit times a few bytes of operators.
STREAM_BYTES = 4 * MAX_DOCUMENT_CHARS
STREAM_LIMITS = {
    "zlib_maximum_output_length": STREAM_BYTES,
    "lzw_maximum_output_length": STREAM_BYTES,
    "run_length_maximum_output_length": STREAM_BYTES,
    "array_based_stream_maximum_output_length": STREAM_BYTES,
    "brotli_maximum_output_length": STREAM_BYTES,
    "stream_decoding_work_maximum_length": 2 * STREAM_BYTES,
}
READ_BUDGET_S = 60.0  # a PDF whose pages take longer than this to read is refused, between pages


def _page_texts(name: str, pages: Sequence[Any]) -> list[str]:
    """Each page's text, stopping as soon as the text passes the document limit or reading passes
    its time budget (so a page-sharing bomb costs one page, not every page)."""
    started, total, texts = time.monotonic(), 0, []
    for number, page in enumerate(pages, start=1):
        texts.append(page.extract_text() or "")
        total += len(texts[-1])
        if total > MAX_DOCUMENT_CHARS:
            raise UnreadableDocumentError(
                f"{name}: more than {MAX_DOCUMENT_CHARS:,} characters of text by page {number}; that is the limit"
            )
        if (spent := time.monotonic() - started) > READ_BUDGET_S and number < len(pages):
            raise UnreadableDocumentError(
                f"{name}: reading {number} of {len(pages):,} pages took {spent:.0f} s; the limit is "
                f"{READ_BUDGET_S:.0f} s a document"
            )
    return texts


def parse_pdf(name: str, data: bytes) -> ParsedDocument:
    """The text of every page, pages joined by a blank line; each page's paragraphs are blocks with
    its number. UnreadableDocumentError for a file pypdf cannot open, an encrypted one, too many
    pages, or one with no text layer (a scan: memvec does no OCR)."""
    if not data.startswith(b"%PDF-"):
        raise UnreadableDocumentError(f"{name}: not a PDF (it does not start with %PDF-)")
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on odd but readable files are noise
    try:
        with apply_configuration(None, **STREAM_LIMITS):
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted:
                raise UnreadableDocumentError(f"{name}: the PDF is encrypted")
            if len(reader.pages) > MAX_PDF_PAGES:
                raise UnreadableDocumentError(f"{name}: {len(reader.pages):,} pages; the limit is {MAX_PDF_PAGES:,}")
            pages = _page_texts(name, reader.pages)
    except UnreadableDocumentError:
        raise
    except LimitReachedError as exc:
        raise UnreadableDocumentError(f"{name}: the PDF holds more than memvec reads ({exc})") from None
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
