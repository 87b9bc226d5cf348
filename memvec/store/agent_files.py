"""Agents' views of their folders' files in the SQL stores (Letta's files_agents): a row per file an
agent opened, closed or looked at part of. A file with no row is open at its start (a file is open
for every attached agent once uploaded); rows of files deleted since are never read (they join no
current document) and are deleted with the file, the agent or the folder's attachment."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memvec.store.rows import format_time, parse_time
from memvec.types.files import FileViewState


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


class AgentFileStore:
    """The file-view methods of `SQLStore` (a mixin over its plumbing)."""

    def file_views(self: _SQL, agent: str) -> dict[int, FileViewState]:
        rows = self._query(
            "SELECT document_id, is_open, start_line, end_line, accessed_at FROM agent_files WHERE agent = ?", (agent,)
        )
        return {
            int(r["document_id"]): FileViewState(
                is_open=bool(r["is_open"]),
                start_line=r["start_line"],
                end_line=r["end_line"],
                accessed_at=parse_time(r["accessed_at"]),
            )
            for r in rows
        }

    def put_file_views(self: _SQL, agent: str, views: dict[int, FileViewState]) -> None:
        """Write these files' views for the agent (one transaction; a view replaces the file's last)."""
        with self._write() as db:
            for document_id, view in views.items():
                self._run(
                    db,
                    "INSERT INTO agent_files (agent, document_id, is_open, start_line, end_line, accessed_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent, document_id) DO UPDATE SET "
                    "is_open = excluded.is_open, start_line = excluded.start_line, "
                    "end_line = excluded.end_line, accessed_at = excluded.accessed_at",
                    (
                        agent,
                        document_id,
                        int(view.is_open),
                        view.start_line,
                        view.end_line,
                        format_time(view.accessed_at),
                    ),
                )
