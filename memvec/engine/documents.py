"""Documents into archival memory: a file parsed, cut into chunks by the model's own tokenizer,
embedded once, and written with its document row in one transaction, each chunk an archival record
whose citation names the file, page, character offsets and heading path.

The same content again (by SHA-256) writes nothing. A changed file (same owner and name, new
content) is a new document that replaces the old one: the old chunks are closed where the new ones
begin, so a search `as_of` before the change still finds them. Deleting a file deletes every version's
chunks from the store and saves the indexes without them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memvec.documents.chunking import Chunk, ChunkSettings, chunk_document, word_spans
from memvec.documents.formats import ParsedDocument, parse
from memvec.embed.base import FALLBACK_WINDOW, embed_records, tokenizer_of
from memvec.engine.engine import Engine
from memvec.errors import NotFoundError
from memvec.store.base import NewDocument
from memvec.types import Citation, Document, DocumentCitation, DocumentReport, NewRecord, Tier

HEADING_RESERVE = 16  # tokens of a chunk's window left for its heading path, embedded with it
DEFAULT_OVERLAP = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInput:
    owner: str  # the agent the document is added to (or the folder that holds it)
    name: str
    data: bytes
    media_type: str | None = None
    folder: str | None = None  # a folder's name, cited with each chunk
    tags: Sequence[str] = ()
    agents: Sequence[str] = field(default_factory=tuple)  # whose archival tier gets the chunks
    overlap: int = DEFAULT_OVERLAP


def chunk_settings(engine: Engine, overlap: int = DEFAULT_OVERLAP) -> tuple[ChunkSettings, bool]:
    """How the home's model cuts documents: its window less the heading reserve (and whether it has a
    tokenizer; without one, words stand in for tokens)."""
    found = tokenizer_of(engine.embedder)
    window = found[1] if found is not None else FALLBACK_WINDOW
    return ChunkSettings(max_tokens=max(16, window - HEADING_RESERVE), overlap=overlap), found is not None


def chunks_of(engine: Engine, parsed: ParsedDocument, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    settings, _ = chunk_settings(engine, overlap)
    found = tokenizer_of(engine.embedder)
    return chunk_document(parsed, found[0] if found is not None else word_spans, settings)


def add_document(engine: Engine, item: DocumentInput) -> DocumentReport:
    content_hash = hashlib.sha256(item.data).hexdigest()
    current = engine.store.documents(item.owner)
    if (same := next((d for d in current if d.content_hash == content_hash), None)) is not None:
        return DocumentReport(document=same, created=False)
    parsed = parse(item.name, item.data, item.media_type)
    chunks = chunks_of(engine, parsed, item.overlap)
    texts = [parsed.text[c.start:c.end] for c in chunks]
    contexts = [" > ".join(c.headings) or None for c in chunks]
    vectors = embed_records(engine.embedder, texts, contexts if engine.index_settings.vector_context
                            else [None] * len(texts))
    previous = next((d for d in current if d.name == item.name), None)
    now = datetime.now(UTC)
    ids: list[int] = []
    with engine.store.transaction():
        document_id = engine.store.add_document_row(NewDocument(
            owner=item.owner, name=item.name, content_hash=content_hash, media_type=parsed.media_type,
            size_bytes=len(item.data), text=parsed.text, pages=parsed.pages, title=parsed.title,
            chunks=len(chunks), created_at=now))
        if previous is not None:
            engine.store.replace_document(previous.id, document_id, now)
        for agent in item.agents:
            records = [_chunk_record(agent, item, parsed, content_hash, document_id, chunk, text, context, now)
                       for chunk, text, context in zip(chunks, texts, contexts, strict=True)]
            written = engine.store.insert(engine.prepare(agent, Tier.ARCHIVAL, records, vectors))
            if agent == item.owner or not ids:
                ids = [record_id for record_id, _ in written]
    for agent in item.agents:
        engine.tier_index(agent, Tier.ARCHIVAL)  # catches up with what was just written
    document = engine.store.document(document_id)
    assert document is not None
    return DocumentReport(document=document, created=True, replaced=previous.id if previous else None,
                          chunk_ids=ids)


def _chunk_record(agent: str, item: DocumentInput, parsed: ParsedDocument, content_hash: str, document_id: int,
                  chunk: Chunk, text: str, context: str | None, now: datetime) -> NewRecord:
    citation = DocumentCitation(document_id=document_id, file_name=item.name, content_hash=content_hash,
                                media_type=parsed.media_type, folder=item.folder, page=chunk.page,
                                start=chunk.start, end=chunk.end, headings=list(chunk.headings), chunk=chunk.index)
    return NewRecord(agent=agent, tier=Tier.ARCHIVAL, text=text, tags=list(item.tags), created_at=now,
                     valid_from=now, context=context, citation=Citation(document=citation))


def document_of(engine: Engine, owner: str, document_id: int) -> Document:
    document = engine.store.document(document_id)
    if document is None or document.owner != owner:
        raise NotFoundError(f"{owner!r} has no document {document_id}")
    return document


def delete_document(engine: Engine, owner: str, document_id: int) -> int:
    """Delete the document (every version of its file) and its chunks in every agent holding them, in
    one transaction; the indexes are saved without them. Returns how many chunks were deleted."""
    document_of(engine, owner, document_id)
    versions = engine.store.document_versions(document_id)
    holders = engine.store.chunk_ids(versions)
    deleted = 0
    with engine.store.transaction():
        for agent, ids in holders.items():
            deleted += engine.store.delete_many(agent, ids)
            engine.store.forget_in_runs(agent, ids)
        engine.store.delete_document_rows(versions)
    engine.store.checkpoint()
    for agent in holders:
        engine.tier_index(agent, Tier.ARCHIVAL).save()
    return deleted
