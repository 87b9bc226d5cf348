"""Documents into archival memory: a file parsed, cut into chunks by the model's own tokenizer,
embedded once, and written with its document row in one transaction, each chunk an archival record
whose citation names the file, page, character offsets and heading path.

The same content again (by SHA-256) writes nothing. A changed file (same owner and name, new
content) is a new document that replaces the old one: the old chunks are closed where the new ones
begin, so a search `as_of` before the change still finds them. Deleting a file deletes every version's
chunks from the store and saves the indexes without them. A folder's documents are owned by the
folder; each agent it is attached to holds a copy of their chunks (memvec.engine.folders)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from memvec.documents.chunking import Chunk, ChunkSettings, chunk_document, word_spans
from memvec.documents.formats import Block, ParsedDocument, parse
from memvec.embed.base import FALLBACK_WINDOW, Embedder, embed_records, tokenizer_of
from memvec.engine.engine import Engine
from memvec.errors import InvalidInputError, NotFoundError, UnreadableDocumentError
from memvec.limits import MAX_DOCUMENT_CHUNKS
from memvec.store.base import NewDocument
from memvec.store.forget_log import Tombstone
from memvec.types import Citation, Document, DocumentCitation, DocumentReport, NewRecord, Tier
from memvec.types.values import checked_file_name

HEADING_RESERVE = 16  # tokens of a chunk's window left for its heading path, embedded with it
DEFAULT_OVERLAP = 32
FOLDER_OWNER_PREFIX = "~"  # a folder's documents are owned by `~<folder id>`: no agent name starts with it
SameName = Literal["replace", "skip", "error", "suffix"]
SAME_NAME: tuple[SameName, ...] = get_args(SameName)


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentInput:
    owner: str  # the agent the document is added to, or `~<folder id>`
    name: str
    data: bytes
    media_type: str | None = None
    folder: tuple[str, str] | None = None  # (id, name) of the folder it goes in
    tags: Sequence[str] = ()
    overlap: int = DEFAULT_OVERLAP
    metadata: dict[str, Any] = field(default_factory=dict)  # cited with each chunk as given
    # a current file of the same name with other content: replace it, skip this one, refuse it
    # (InvalidInputError), or add this one under a suffixed name; decided in the write transaction
    same_name: SameName = "replace"


@dataclass(frozen=True, slots=True)
class Chunked:
    """A document cut and embedded, ready to be written into any number of agents."""

    parsed: ParsedDocument
    chunks: list[Chunk]
    texts: list[str]
    contexts: list[str | None]
    vectors: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class _Ready:
    """One file of a batch, parsed and cut, waiting for the batch's one embedding call."""

    position: int
    item: DocumentInput
    content_hash: str
    parsed: ParsedDocument
    chunks: list[Chunk]


EMBED_GROUP_CHUNKS = 2_048  # chunks of several files embedded in one call (bounded: memory stays small)


def chunk_settings(embedder: Embedder, overlap: int = DEFAULT_OVERLAP) -> ChunkSettings:
    """How `embedder`'s model cuts documents: its window less the heading reserve (without a
    tokenizer, words stand in for tokens). InvalidInputError for an overlap the window cannot hold."""
    found = tokenizer_of(embedder)
    window = found[1] if found is not None else FALLBACK_WINDOW
    return ChunkSettings(max_tokens=max(16, window - HEADING_RESERVE), overlap=overlap)


def cut(engine: Engine, parsed: ParsedDocument, overlap: int = DEFAULT_OVERLAP) -> list[Chunk]:
    found = tokenizer_of(engine.embedder)
    settings = chunk_settings(engine.embedder, overlap)
    return chunk_document(parsed, found[0] if found is not None else word_spans, settings)


def embedded(engine: Engine, documents: list[tuple[ParsedDocument, list[Chunk]]]) -> list[Chunked]:
    """The chunks of several documents embedded in one call (the backend batches them by length)."""
    texts = [[parsed.text[c.start : c.end] for c in chunks] for parsed, chunks in documents]
    contexts = [[" > ".join(c.headings) or None for c in chunks] for _, chunks in documents]
    flat_texts = [t for group in texts for t in group]
    flat_contexts = (
        [c for group in contexts for c in group] if engine.index_settings.vector_context else [None] * len(flat_texts)
    )
    vectors = embed_records(engine.embedder, flat_texts, flat_contexts, windows=False)  # chunks fit the window
    out, start = [], 0
    for (parsed, chunks), group_texts, group_contexts in zip(documents, texts, contexts, strict=True):
        out.append(Chunked(parsed, chunks, group_texts, group_contexts, vectors[start : start + len(chunks)]))
        start += len(chunks)
    return out


def chunked(engine: Engine, parsed: ParsedDocument, overlap: int = DEFAULT_OVERLAP) -> Chunked:
    return embedded(engine, [(parsed, cut(engine, parsed, overlap))])[0]


def stored_document(engine: Engine, document: Document) -> ParsedDocument:
    """A stored document as parsed, from its text and blocks (to cut it again for another agent)."""
    blocks = [Block(s, e, p, h) for s, e, p, h in engine.store.document_blocks(document.id)]
    return ParsedDocument(
        text=engine.store.document_text(document.id) or "",
        media_type=document.media_type,
        blocks=blocks,
        pages=document.pages,
        title=document.title,
    )


def add_document(engine: Engine, item: DocumentInput) -> DocumentReport:
    [result] = add_documents(engine, [item])
    if isinstance(result, InvalidInputError):
        raise result
    return result


def add_documents(engine: Engine, items: Sequence[DocumentInput]) -> list[DocumentReport | InvalidInputError]:
    """Each file added as `add_document` does, the chunks of many files embedded together; a file that
    cannot be read gets its error in its place (and writes nothing), the others go in. Each file is
    its own transaction."""
    results: list[DocumentReport | InvalidInputError | None] = [None] * len(items)
    pending: list[_Ready] = []
    for position, item in enumerate(items):
        try:
            ready = _parsed(engine, position, item)
        except InvalidInputError as exc:
            results[position] = exc
            continue
        if isinstance(ready, DocumentReport):
            results[position] = ready
            continue
        pending.append(ready)
        if sum(len(r.chunks) for r in pending) >= EMBED_GROUP_CHUNKS:
            _write_all(engine, pending, results)
            pending = []
    _write_all(engine, pending, results)
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def _parsed(engine: Engine, position: int, item: DocumentInput) -> _Ready | DocumentReport:
    try:
        item = replace(item, name=checked_file_name(item.name))
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    content_hash = hashlib.sha256(item.data).hexdigest()
    if (same := _same_content(engine, item, content_hash)) is not None:
        return DocumentReport(document=same, created=False)
    # skip and error decided early too, saving the parse and the embedding; the write decides again
    early = engine.store.current_document(item.owner, name=item.name) if item.same_name in ("skip", "error") else None
    if (kept := _kept_instead(item, early)) is not None:
        return kept
    parsed = parse(item.name, item.data, item.media_type)
    chunks = cut(engine, parsed, item.overlap)
    if len(chunks) > MAX_DOCUMENT_CHUNKS:
        raise UnreadableDocumentError(
            f"{item.name}: {len(chunks):,} chunks; the limit is {MAX_DOCUMENT_CHUNKS:,} (a file of many tiny "
            "sections: each is a chunk)"
        )
    return _Ready(position, item, content_hash, parsed, chunks)


def _kept_instead(item: DocumentInput, previous: Document | None) -> DocumentReport | None:
    """The current file of the same name when `item.same_name` keeps it (InvalidInputError: refuse)."""
    if previous is not None and item.same_name == "skip":
        return DocumentReport(document=previous, created=False)
    if previous is not None and item.same_name == "error":
        raise InvalidInputError(f"a file named {item.name!r} already exists (document {previous.id})")
    return None


def _same_content(engine: Engine, item: DocumentInput, content_hash: str) -> Document | None:
    """The current document this file repeats, which it adds nothing to. An agent's documents: any
    with the same bytes. A folder's files are known by name (as Letta's are): the file of the same
    name with the same bytes, unless this one goes in under a name of its own or must be refused."""
    if item.folder is None:
        return engine.store.current_document(item.owner, content_hash=content_hash)
    if item.same_name in ("suffix", "error"):
        return None
    same = engine.store.current_document(item.owner, name=item.name)
    return same if same is not None and same.content_hash == content_hash else None


def _write_all(engine: Engine, pending: list[_Ready], results: list[DocumentReport | InvalidInputError | None]) -> None:
    if pending:
        for ready, cut_document in zip(pending, embedded(engine, [(r.parsed, r.chunks) for r in pending]), strict=True):
            results[ready.position] = _written(engine, ready, cut_document)


def _written(engine: Engine, ready: _Ready, cut_document: Chunked) -> DocumentReport:
    """One file's document row and chunks in one transaction (the same content written meanwhile, by
    an earlier file of the batch or another writer: nothing)."""
    item, parsed = ready.item, ready.parsed
    now = engine.store.clock()
    ids: list[int] = []
    with engine.store.transaction():  # every read that decides what to write is inside it
        if (same := _same_content(engine, item, ready.content_hash)) is not None:
            return DocumentReport(document=same, created=False)
        if item.folder and engine.store.folder(item.folder[0]) is None:
            raise NotFoundError(f"no folder {item.folder[0]!r}: it was deleted while the file was read")
        previous = engine.store.current_document(item.owner, name=item.name)
        name = item.name
        if (kept := _kept_instead(item, previous)) is not None:
            return kept
        if previous is not None and item.same_name == "suffix":
            name, previous = free_name(item.name, {d.name for d in engine.store.documents(item.owner)}), None
        document_id = engine.store.add_document_row(
            NewDocument(
                owner=item.owner,
                name=name,
                content_hash=ready.content_hash,
                media_type=parsed.media_type,
                size_bytes=len(item.data),
                text=parsed.text,
                pages=parsed.pages,
                title=parsed.title,
                chunks=len(ready.chunks),
                blocks=[(b.start, b.end, b.page, b.headings) for b in parsed.blocks],
                created_at=now,
                original_name=item.name,
            )
        )
        if previous is not None:
            engine.store.replace_document(previous.id, document_id, now)
        document = engine.store.document(document_id)
        assert document is not None
        # read in the transaction: an agent attached to the folder meanwhile gets this file too
        agents = engine.store.folder_agents(item.folder[0]) if item.folder else [item.owner]
        for agent in agents:
            ids = write_chunks(
                engine,
                agent,
                document,
                cut_document,
                tags=item.tags,
                at=now,
                folder=item.folder[1] if item.folder else None,
                metadata=item.metadata,
            )
    for agent in agents:
        engine.tier_index(agent, Tier.ARCHIVAL)  # catches up with what was just written
    return DocumentReport(document=document, created=True, replaced=previous.id if previous else None, chunk_ids=ids)


def free_name(name: str, taken: set[str]) -> str:
    """`name_(1).ext`, `name_(2).ext`, ... (as Letta renames): the first not taken."""
    stem, dot, ext = name.rpartition(".") if "." in name.rpartition("/")[2] else (name, "", "")
    for n in range(1, 10_000):
        candidate = f"{stem}_({n}){dot}{ext}"
        if candidate not in taken:
            return candidate
    raise InvalidInputError(f"too many files named like {name!r}")


def write_chunks(
    engine: Engine,
    agent: str,
    document: Document,
    cut: Chunked,
    *,
    folder: str | None,
    tags: Sequence[str],
    at: datetime,
    metadata: dict[str, Any] | None = None,
) -> list[int]:
    """The document's chunks as the agent's archival records (inside the caller's transaction)."""
    records = []
    for chunk, text, context in zip(cut.chunks, cut.texts, cut.contexts, strict=True):
        citation = DocumentCitation(
            document_id=document.id,
            file_name=document.name,
            content_hash=document.content_hash,
            media_type=document.media_type,
            folder=folder,
            page=chunk.page,
            start=chunk.start,
            end=chunk.end,
            headings=list(chunk.headings),
            chunk=chunk.index,
            metadata=metadata or {},
        )
        records.append(
            NewRecord(
                agent=agent,
                tier=Tier.ARCHIVAL,
                text=text,
                tags=list(tags),
                created_at=at,
                valid_from=at,
                context=context,
                citation=Citation(document=citation),
            )
        )
    return [
        record_id for record_id, _ in engine.store.insert(engine.prepare(agent, Tier.ARCHIVAL, records, cut.vectors))
    ]


def document_of(engine: Engine, owner: str, document_id: int) -> Document:
    document = engine.store.document(document_id)
    if document is None or document.owner != owner:
        raise NotFoundError(f"{owner!r} has no document {document_id}")
    return document


def delete_documents(engine: Engine, document_ids: Sequence[int]) -> tuple[int, list[str]]:
    """Delete documents (each every version of its file, as given) and their chunks in every agent
    holding them, in one transaction (inside the caller's, if any); returns how many chunks and the
    agents whose indexes the caller saves."""
    holders = engine.store.chunk_ids(document_ids)
    deleted = 0
    with engine.store.transaction():
        engine.store.note_forgotten(document_tombstones(engine, document_ids))
        for agent, ids in holders.items():
            deleted += engine.delete_logged(agent, ids)
        engine.store.delete_document_rows(document_ids)
    return deleted, list(holders)


def document_tombstones(engine: Engine, document_ids: Sequence[int]) -> list[Tombstone]:
    now = datetime.now(UTC)
    return [
        Tombstone(at=now, kind="document", agent=d.owner, ref=str(d.id), content_hash=d.content_hash)
        for d in (engine.store.document(i) for i in document_ids)
        if d is not None
    ]


def saved_without(engine: Engine, agents: Sequence[str]) -> None:
    """What was deleted is in no file: the store's log checkpointed, the agents' indexes saved."""
    engine.store.checkpoint()
    for agent in agents:
        engine.tier_index(agent, Tier.ARCHIVAL).save()


def delete_document(engine: Engine, owner: str, document_id: int) -> int:
    """Delete the document (every version of its file) and its chunks in every agent holding them;
    the indexes are saved without them. Returns how many chunks were deleted."""
    document_of(engine, owner, document_id)
    with engine.store.transaction():  # a version written meanwhile is among those deleted
        deleted, agents = delete_documents(engine, engine.store.document_versions(document_id))
    saved_without(engine, agents)
    return deleted


def delete_orphans(engine: Engine) -> list[Document]:
    """Delete the documents whose folder is gone (with every agent's copies of their chunks); returns them."""
    with engine.store.transaction():
        orphans = engine.store.orphan_documents()
        _, agents = delete_documents(engine, [d.id for d in orphans])
    saved_without(engine, agents)
    return orphans
