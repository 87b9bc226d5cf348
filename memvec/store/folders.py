"""Folders in the SQL stores (Letta's `/v1/folders`): named sets of documents, owned by `~<folder id>`
in the documents table, and the agents they are attached to (whose archival tiers get copies of the
folder's chunks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from memvec.errors import NameTakenError
from memvec.store.rows import format_time, parse_time, readable_metadata
from memvec.types import Folder

_COLUMNS = "id, name, description, instructions, metadata, created_at, updated_at"


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def folder_agents(self, folder_id: str) -> list[str]: ...


def _folder(row: Any, agents: list[str]) -> Folder:
    return Folder(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        instructions=row["instructions"],
        metadata=readable_metadata(json.loads(row["metadata"])),
        created_at=parse_time(row["created_at"]),
        updated_at=parse_time(row["updated_at"]),
        agents=agents,
    )


class FolderStore:
    """The folder methods of `SQLStore` (a mixin over its plumbing)."""

    def put_folder(self: _SQL, folder: Folder, *, create: bool) -> None:
        """Write a folder's name, description, instructions and metadata (NameTakenError: another
        folder has the name)."""
        taken = self._query("SELECT id FROM folders WHERE name = ? AND id <> ?", (folder.name, folder.id))
        if taken:
            raise NameTakenError(f"a folder named {folder.name!r} exists already ({taken[0]['id']})")
        values = (
            folder.name,
            folder.description,
            folder.instructions,
            json.dumps(folder.metadata),
            format_time(folder.updated_at),
        )
        with self._write() as db:
            if create:
                self._run(
                    db,
                    "INSERT INTO folders (name, description, instructions, metadata, updated_at, id, "
                    "created_at) VALUES (?,?,?,?,?,?,?)",
                    (*values, folder.id, format_time(folder.created_at)),
                )
            else:
                self._run(
                    db,
                    "UPDATE folders SET name = ?, description = ?, instructions = ?, metadata = ?, "
                    "updated_at = ? WHERE id = ?",
                    (*values, folder.id),
                )

    def folders(self: _SQL) -> list[Folder]:
        rows = self._query(f"SELECT {_COLUMNS} FROM folders ORDER BY created_at, id")
        return [_folder(r, self.folder_agents(r["id"])) for r in rows]

    def folder(self: _SQL, folder_id: str) -> Folder | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM folders WHERE id = ?", (folder_id,))
        return _folder(rows[0], self.folder_agents(folder_id)) if rows else None

    def folder_agents(self: _SQL, folder_id: str) -> list[str]:
        rows = self._query(
            "SELECT agent FROM folder_attachments WHERE folder_id = ? ORDER BY attached_at, agent", (folder_id,)
        )
        return [r["agent"] for r in rows]

    def agent_folders(self: _SQL, agent: str) -> list[str]:
        rows = self._query(
            "SELECT folder_id FROM folder_attachments WHERE agent = ? ORDER BY attached_at, folder_id", (agent,)
        )
        return [r["folder_id"] for r in rows]

    def attach_folder(self: _SQL, folder_id: str, agent: str, at: datetime) -> bool:
        """False: it was attached already."""
        with self._write() as db:
            if self._run(
                db, "SELECT 1 FROM folder_attachments WHERE folder_id = ? AND agent = ?", (folder_id, agent)
            ).fetchall():
                return False
            self._run(db, "INSERT INTO folder_attachments VALUES (?, ?, ?)", (folder_id, agent, format_time(at)))
            return True

    def detach_folder(self: _SQL, folder_id: str, agent: str) -> bool:
        """Detach it, forgetting what the agent had open of its files."""
        with self._write() as db:
            self._run(
                db,
                "DELETE FROM agent_files WHERE agent = ? AND document_id IN (SELECT id FROM documents WHERE owner = ?)",
                (agent, "~" + folder_id),
            )
            return bool(
                self._run(
                    db, "DELETE FROM folder_attachments WHERE folder_id = ? AND agent = ?", (folder_id, agent)
                ).rowcount
            )

    def delete_folder_row(self: _SQL, folder_id: str) -> None:
        with self._write() as db:
            self._run(db, "DELETE FROM folder_attachments WHERE folder_id = ?", (folder_id,))
            self._run(db, "DELETE FROM folders WHERE id = ?", (folder_id,))
