"""Recall messages' Letta identity in the SQL stores (memvec.types.messages): one row per message
that has one, deleted with its record (a foreign key)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memvec.store.scopes import CHUNK, marks
from memvec.types.messages import MessageMeta


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


class MessageMetaStore:
    """The message-identity methods of `SQLStore` (a mixin over its plumbing)."""

    def put_message_meta(self: _SQL, record_id: int, meta: MessageMeta) -> None:
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO message_meta (record_id, run_id, meta) VALUES (?, ?, ?) "
                "ON CONFLICT (record_id) DO UPDATE SET run_id = excluded.run_id, meta = excluded.meta",
                (record_id, meta.run_id, meta.model_dump_json(exclude_none=True)),
            )

    def message_meta(self: _SQL, record_ids: Sequence[int]) -> dict[int, MessageMeta]:
        found: dict[int, MessageMeta] = {}
        wanted = [int(i) for i in record_ids]
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            rows = self._query(
                f"SELECT record_id, meta FROM message_meta WHERE record_id IN ({marks(len(chunk))})", chunk
            )
            found.update({int(r["record_id"]): MessageMeta.model_validate_json(r["meta"]) for r in rows})
        return found

    def run_message_ids(self: _SQL, run_id: str) -> list[int]:
        """The recall messages a run wrote, in the order written."""
        rows = self._query("SELECT record_id FROM message_meta WHERE run_id = ? ORDER BY record_id", (run_id,))
        return [int(r["record_id"]) for r in rows]
