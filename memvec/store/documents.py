"""Documents in the SQL stores: a file's text and facts, kept with the archival records (its chunks)
that cite it. A changed file is a new row that replaces the old one; the old row and its chunks stay,
closed, so a search `as_of` before the change still finds them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from memvec.store.base import NewDocument
from memvec.store.rows import format_time, parse_time
from memvec.types import Document

_COLUMNS = (
    "id, owner, name, content_hash, media_type, size_bytes, pages, title, chunks, created_at, replaced_at, "
    "replaced_by, original_name"
)


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _document(row: Any) -> Document:
    return Document(
        id=row["id"],
        owner=row["owner"],
        name=row["name"],
        original_name=row["original_name"] or row["name"],
        content_hash=row["content_hash"],
        media_type=row["media_type"],
        size_bytes=row["size_bytes"],
        pages=row["pages"],
        title=row["title"],
        chunks=row["chunks"],
        created_at=parse_time(row["created_at"]),
        replaced_at=parse_time(row["replaced_at"]) if row["replaced_at"] else None,
        replaced_by=row["replaced_by"],
    )


BlockRow = tuple[int, int, int | None, tuple[str, ...]]


def _packed(blocks: Sequence[tuple[int, int, int | None, Sequence[str]]]) -> dict[str, Any]:
    """The blocks with each heading stored once, as (title, parent) nodes: a heading path on every
    paragraph made the column grow with paragraphs times the headings above them (a 42 KB file with
    long headings wrote 120 MB)."""
    nodes: dict[tuple[str, ...], int] = {(): -1}
    headings: list[tuple[str, int]] = []
    rows = []
    for start, end, page, path in blocks:
        path = tuple(path)
        for depth in range(1, len(path) + 1):
            if path[:depth] not in nodes:
                nodes[path[:depth]] = len(headings)
                headings.append((path[depth - 1], nodes[path[: depth - 1]]))
        rows.append((start, end, page, nodes[path]))
    return {"headings": headings, "blocks": rows}


def _unpacked(stored: Any) -> list[BlockRow]:
    if isinstance(stored, list):  # written before headings were stored once: a path on every block
        return [(s, e, p, tuple(h)) for s, e, p, h in stored]
    paths: list[tuple[str, ...]] = []
    for title, parent in stored["headings"]:  # a parent always comes before its children
        paths.append((*(paths[parent] if parent >= 0 else ()), title))
    return [(s, e, p, paths[i] if i >= 0 else ()) for s, e, p, i in stored["blocks"]]


class DocumentStore:
    """The document methods of `SQLStore` (a mixin over its plumbing)."""

    def add_document_row(self: _SQL, doc: NewDocument) -> int:
        with self._write() as db:
            rows = self._run(
                db,
                "INSERT INTO documents (owner, name, content_hash, media_type, size_bytes, text, "
                "pages, title, chunks, blocks, created_at, original_name) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
                "RETURNING id",
                (
                    doc.owner,
                    doc.name,
                    doc.content_hash,
                    doc.media_type,
                    doc.size_bytes,
                    doc.text,
                    doc.pages,
                    doc.title,
                    doc.chunks,
                    json.dumps(_packed(doc.blocks)),
                    format_time(doc.created_at),
                    doc.original_name if doc.original_name != doc.name else None,
                ),
            ).fetchall()
            return int(rows[0]["id"])

    def replace_document(self: _SQL, old: int, new: int, at: datetime) -> int:
        """Mark document `old` replaced by `new` at `at`, and close its chunks' current versions there
        (in every agent holding a copy); returns how many chunks were closed."""
        with self._write() as db:
            self._run(
                db, "UPDATE documents SET replaced_at = ?, replaced_by = ? WHERE id = ?", (format_time(at), new, old)
            )
            return int(
                self._run(
                    db,
                    "UPDATE records SET valid_to = ? WHERE document_id = ? AND valid_to IS NULL",
                    (format_time(at), old),
                ).rowcount
            )

    def documents(self: _SQL, owner: str, *, include_replaced: bool = False) -> list[Document]:
        """The owner's documents, oldest first (current ones only unless `include_replaced`)."""
        current = "" if include_replaced else " AND replaced_by IS NULL"
        rows = self._query(f"SELECT {_COLUMNS} FROM documents WHERE owner = ?{current} ORDER BY id", (owner,))
        return [_document(r) for r in rows]

    def current_document(
        self: _SQL, owner: str, *, name: str | None = None, content_hash: str | None = None
    ) -> Document | None:
        """The owner's current document of that name, or with that content (an indexed lookup)."""
        column, value = ("name", name) if name is not None else ("content_hash", content_hash)
        rows = self._query(
            f"SELECT {_COLUMNS} FROM documents WHERE owner = ? AND {column} = ? "
            "AND replaced_by IS NULL ORDER BY id LIMIT 1",
            (owner, value),
        )
        return _document(rows[0]) if rows else None

    def orphan_documents(self: _SQL) -> list[Document]:
        """Documents owned by a folder that no longer exists (every version): no route reaches them."""
        rows = self._query(
            f"SELECT {_COLUMNS} FROM documents WHERE owner LIKE ? "
            "AND substr(owner, 2) NOT IN (SELECT id FROM folders) ORDER BY id",
            ("~%",),
        )
        return [_document(r) for r in rows]

    def document(self: _SQL, document_id: int) -> Document | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM documents WHERE id = ?", (document_id,))
        return _document(rows[0]) if rows else None

    def document_text(self: _SQL, document_id: int) -> str | None:
        rows = self._query("SELECT text FROM documents WHERE id = ?", (document_id,))
        return str(rows[0]["text"]) if rows else None

    def document_blocks(self: _SQL, document_id: int) -> list[BlockRow]:
        """The document's paragraphs as parsed: (start, end, page, headings), to cut it into chunks again."""
        rows = self._query("SELECT blocks FROM documents WHERE id = ?", (document_id,))
        return _unpacked(json.loads(rows[0]["blocks"])) if rows else []

    def document_versions(self: _SQL, document_id: int) -> list[int]:
        """The ids of every version of the file `document_id` is a version of, oldest first."""
        rows = self._query("SELECT owner, name FROM documents WHERE id = ?", (document_id,))
        if not rows:
            return []
        return [
            int(r["id"])
            for r in self._query(
                "SELECT id FROM documents WHERE owner = ? AND name = ? ORDER BY id", (rows[0]["owner"], rows[0]["name"])
            )
        ]

    def chunk_ids(self: _SQL, document_ids: Sequence[int]) -> dict[str, list[int]]:
        """The records citing any of the documents (every version), by agent."""
        if not document_ids:
            return {}
        marks = ",".join("?" * len(document_ids))
        rows = self._query(
            f"SELECT agent, id FROM records WHERE document_id IN ({marks}) ORDER BY id", [int(i) for i in document_ids]
        )
        out: dict[str, list[int]] = {}
        for r in rows:
            out.setdefault(r["agent"], []).append(int(r["id"]))
        return out

    def delete_document_rows(self: _SQL, document_ids: Sequence[int]) -> None:
        if document_ids:
            with self._write() as db:
                self._run(
                    db,
                    f"DELETE FROM documents WHERE id IN ({','.join('?' * len(document_ids))})",
                    [int(i) for i in document_ids],
                )
                self._run(
                    db,
                    f"DELETE FROM agent_files WHERE document_id IN ({','.join('?' * len(document_ids))})",
                    [int(i) for i in document_ids],
                )
