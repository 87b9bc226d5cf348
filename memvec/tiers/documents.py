"""An agent's documents: files added to its archival memory, each cut into chunks that are archival
records citing the file, page, character offsets and headings (memvec.engine.documents)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from memvec.documents.formats import MAX_DOCUMENT_BYTES
from memvec.engine.documents import (
    DEFAULT_OVERLAP,
    FOLDER_OWNER_PREFIX,
    DocumentInput,
    add_document,
    add_documents,
    delete_document,
)
from memvec.engine.engine import Engine
from memvec.errors import InvalidInputError, MemvecError, NotFoundError, UnreadableDocumentError
from memvec.types import Document, DocumentReport, Metadata, Record, Tier, describe_validation_error

_METADATA: TypeAdapter[dict[str, Any]] = TypeAdapter(Metadata)


class Documents:
    def __init__(self, engine: Engine, agent: str) -> None:
        self._engine = engine
        self.agent = agent

    def add(
        self,
        source: str | os.PathLike[str],
        content: str | bytes | None = None,
        *,
        media_type: str | None = None,
        tags: Sequence[str] = (),
        chunk_overlap: int = DEFAULT_OVERLAP,
        metadata: dict[str, Any] | None = None,
    ) -> DocumentReport:
        """Add the file `source` (read from disk when `content` is None; else `source` is its name and
        `content` its text or bytes). The format comes from `media_type`, else the name's extension,
        else the first bytes: plain text, Markdown, HTML or PDF (UnreadableDocumentError otherwise).
        `chunk_overlap`: tokens a window of a paragraph longer than the model's window repeats from
        the one before (0 to a quarter of the window). `metadata`: the source's own (JSON, at most
        16 KiB), cited with every chunk as given."""
        item = self._input(source, content, media_type, tags, chunk_overlap, metadata)
        return add_document(self._engine, item)

    def add_many(
        self,
        sources: Sequence[str | os.PathLike[str] | tuple[str, str | bytes] | tuple[str, str | bytes, dict[str, Any]]],
        *,
        media_type: str | None = None,
        tags: Sequence[str] = (),
        chunk_overlap: int = DEFAULT_OVERLAP,
        names: Sequence[str | None] | None = None,
    ) -> builtins.list[DocumentReport | MemvecError]:
        """Add many files (paths, or (name, content) or (name, content, metadata)) as `add` does, their
        chunks embedded together (the batched path: much faster than one `add` each). A document is
        known by its name: a path's file name unless `names` gives another for it (say, its path under
        the folder it was found in, so two README.md files are two documents). A file that cannot be
        read gets its error in its place in the answer and writes nothing; the others go in."""
        if names is not None and len(names) != len(sources):
            raise InvalidInputError(f"{len(names)} names for {len(sources)} sources")
        items: builtins.list[DocumentInput | MemvecError] = []
        for n, source in enumerate(sources):
            try:
                if isinstance(source, tuple):
                    metadata = source[2] if len(source) == 3 else {}
                    items.append(self._input(source[0], source[1], media_type, tags, chunk_overlap, metadata))
                else:
                    item = self._input(source, None, media_type, tags, chunk_overlap)
                    named = names[n] if names is not None else None
                    items.append(item if named is None else replace(item, name=named))
            except (InvalidInputError, NotFoundError) as exc:
                items.append(exc)
        readable = [i for i in items if isinstance(i, DocumentInput)]
        done: Iterator[DocumentReport | MemvecError] = iter(add_documents(self._engine, readable))
        return [next(done) if isinstance(i, DocumentInput) else i for i in items]

    def _input(
        self,
        source: str | os.PathLike[str],
        content: str | bytes | None,
        media_type: str | None,
        tags: Sequence[str],
        overlap: int,
        metadata: dict[str, Any] | None = None,
    ) -> DocumentInput:
        if content is None:
            path = Path(source)
            data, name = read_limited(path), path.name
        else:
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            name = os.fspath(source)
        try:
            kept = _METADATA.validate_python(metadata or {})
        except ValidationError as exc:
            raise InvalidInputError(f"{name}: metadata: {describe_validation_error(exc)}") from exc
        return DocumentInput(
            owner=self.agent,
            name=name.strip(),
            data=data,
            media_type=media_type,
            tags=list(tags),
            overlap=overlap,
            metadata=kept,
        )

    def list(self, *, include_replaced: bool = False) -> list[Document]:
        """The agent's documents, oldest first (with the versions changed files replaced, if asked)."""
        return self._engine.store.documents(self.agent, include_replaced=include_replaced)

    def get(self, document_id: int) -> Document:
        """One of the agent's documents, or a file of a folder attached to it."""
        document = self._engine.store.document(document_id)
        folders = {FOLDER_OWNER_PREFIX + f for f in self._engine.store.agent_folders(self.agent)}
        if document is None or (document.owner != self.agent and document.owner not in folders):
            raise NotFoundError(f"agent {self.agent!r} has no document {document_id}")
        return document

    def text(self, document_id: int) -> str:
        """The document's whole text, as its chunks' offsets count it."""
        self.get(document_id)
        return self._engine.store.document_text(document_id) or ""

    def chunks(self, document_id: int) -> builtins.list[Record]:
        """The document's chunks in text order."""
        self.get(document_id)
        ids = self._engine.store.chunk_ids([document_id]).get(self.agent, [])
        records = self._engine.get_many(self.agent, Tier.ARCHIVAL, ids)
        return sorted(records, key=lambda r: r.citation.document.chunk if r.citation.document else 0)

    def around(self, record: Record, *, context: int = 1) -> builtins.list[Record]:
        """A chunk with up to `context` chunks of its document either side, in text order."""
        cited = record.citation.document
        if cited is None:
            raise InvalidInputError(f"record {record.id} is not a document's chunk")
        if not 0 <= context <= 100:
            raise InvalidInputError("context is 0 to 100 chunks either side")
        return [
            r
            for r in self.chunks(cited.document_id)
            if r.citation.document is not None and abs(r.citation.document.chunk - cited.chunk) <= context
        ]

    def delete(self, document_id: int) -> int:
        """Delete the document, every earlier version of its file, and all their chunks (from the store
        and the indexes, which are saved without them); returns how many chunks went."""
        return delete_document(self._engine, self.agent, document_id)


def read_limited(path: Path) -> bytes:
    """The file's bytes, its size checked before it is read (and the read stopped past the limit, for a
    file that grows meanwhile): a file too large costs a stat, not its size in memory."""
    if not path.is_file():
        raise NotFoundError(f"no file {str(path)!r}")
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise UnreadableDocumentError(f"{path.name}: {size:,} bytes; the limit is {MAX_DOCUMENT_BYTES:,}")
    with path.open("rb") as file:
        data = file.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise UnreadableDocumentError(f"{path.name}: more than {MAX_DOCUMENT_BYTES:,} bytes, the limit")
    return data
