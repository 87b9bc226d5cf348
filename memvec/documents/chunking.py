"""A parsed document in chunks that respect its text: whole paragraphs packed together while they fit
the embedding model's window and share a page and a heading path; a paragraph longer than the window
cut in windows of the model's own tokens, at word starts, each overlapping the one before.

A chunk is a span `text[start:end]` of the document's text, so its citation slices the text again."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memvec.documents.formats import Block, ParsedDocument
from memvec.errors import InvalidInputError

Span = tuple[int, int]
TokenSpans = Callable[[Sequence[str]], list[list[Span]]]  # each text's tokens as character spans
_WORD = re.compile(r"\S{1,64}")
_SPACE = re.compile(r"\s+")
MAX_CHUNK_CHARS = 8_000  # a window of tokens can span more (a long unbroken string is one unknown token)


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    start: int
    end: int
    page: int | None
    headings: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkSettings:
    max_tokens: int  # of the model's tokens per chunk (its window less special tokens and a reserve)
    overlap: int = 32  # tokens a window of a long paragraph repeats from the one before

    def __post_init__(self) -> None:
        if self.max_tokens < 8 or not 0 <= self.overlap <= self.max_tokens // 4:
            raise InvalidInputError(
                f"chunks of {self.max_tokens} tokens overlap by 0 to {self.max_tokens // 4} tokens, not {self.overlap}"
            )


def word_spans(texts: Sequence[str]) -> list[list[Span]]:
    """Tokens for an embedder without a tokenizer (the test embedders): words, long ones cut."""
    return [[m.span() for m in _WORD.finditer(text)] for text in texts]


def chunk_document(doc: ParsedDocument, spans_of: TokenSpans, settings: ChunkSettings) -> list[Chunk]:
    """The document's chunks in text order (one tokenizer call for all its blocks). A heading line is
    never a chunk of its own: it opens the chunk of the content under it, deeper headings between them
    included (a title alone answers nothing and would still be found for its words)."""
    spans = spans_of([doc.text[block.start : block.end] for block in doc.blocks])
    heading_lines = [heads_section(doc.text, block) for block in doc.blocks]
    out: list[Chunk] = []
    pending: list[Block] = []
    pending_tokens = 0
    only_headings = False  # every pending block is a heading line

    def flush() -> None:
        nonlocal pending, pending_tokens, only_headings
        only_headings = False
        if pending:
            first, last = pending[0], pending[-1]
            out.append(Chunk(len(out), first.start, last.end, first.page, last.headings))
        pending, pending_tokens = [], 0

    for block, block_spans, heading_line in zip(doc.blocks, spans, heading_lines, strict=True):
        tokens = max(1, len(block_spans))
        joins = only_headings or (
            bool(pending) and (block.page, block.headings) == (pending[-1].page, pending[-1].headings)
        )
        lead, lead_tokens = None, 0
        if pending and (not joins or pending_tokens + tokens > settings.max_tokens):
            if tokens > settings.max_tokens and joins and pending_tokens <= settings.max_tokens // 2:
                # headings (or a short lead-in) open the first window of the long paragraph after them
                lead, lead_tokens = pending[0].start, pending_tokens
                pending, pending_tokens, only_headings = [], 0, False
            else:
                flush()
        if tokens > settings.max_tokens:
            for number, (start, end) in enumerate(windows(block_spans, settings, first=lead_tokens)):
                begin = lead if number == 0 and lead is not None else block.start + start
                out.append(Chunk(len(out), begin, block.start + end, block.page, block.headings))
            continue
        only_headings = heading_line and (only_headings or not pending)
        pending.append(block)
        pending_tokens += tokens
    if out and only_headings:
        out[-1] = replace(out[-1], end=pending[-1].end)  # headings with nothing under them close the text
        pending = []
    flush()
    return _bounded(out)


def heads_section(text: str, block: Block) -> bool:
    """Whether the block is only its section's heading line (Markdown's `## Title`, HTML's h1..h6):
    read from the text and the heading path, so a stored document is cut again the same way."""
    if not block.headings:
        return False
    line = _SPACE.sub(" ", text[block.start : block.end].strip().strip("#").strip())
    title = block.headings[-1]
    return line == title or (title.endswith("…") and line.startswith(title[:-1]))


def _bounded(chunks: list[Chunk]) -> list[Chunk]:
    """Chunks of at most MAX_CHUNK_CHARS characters (longer ones cut in equal parts), renumbered."""
    out: list[Chunk] = []
    for chunk in chunks:
        parts = -(-(chunk.end - chunk.start) // MAX_CHUNK_CHARS)
        step = -(-(chunk.end - chunk.start) // parts)
        for start in range(chunk.start, chunk.end, step):
            out.append(Chunk(len(out), start, min(start + step, chunk.end), chunk.page, chunk.headings))
    return out


def windows(spans: Sequence[Span], settings: ChunkSettings, *, first: int = 0) -> list[Span]:
    """Character spans of windows of at most `max_tokens` tokens over one paragraph's tokens (the
    first `first` tokens fewer, for a lead-in that goes with it), each ending at a word's end and
    starting at a word's start where the window leaves room, and overlapping the previous one by
    about `overlap` tokens."""
    n = len(spans)
    out: list[Span] = []
    i = 0
    while i < n:
        size = settings.max_tokens - (first if not out else 0)
        j = min(i + size, n)
        while j < n and j > i + size // 2 and spans[j][0] == spans[j - 1][1]:  # mid-word: end earlier
            j -= 1
        out.append((spans[i][0], spans[j - 1][1]))
        if j == n:
            break
        following = max(j - settings.overlap, i + 1)
        while following < j and spans[following][0] == spans[following - 1][1]:  # start at a word
            following += 1
        i = following
    return out
