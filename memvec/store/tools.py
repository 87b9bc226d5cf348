"""Custom tools in the SQL stores (Letta's `/v1/tools`): one row per tool, its name unique in the home.

The built-in tools are not stored: they are the code's (memvec.tools), with fixed ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memvec.errors import NameTakenError
from memvec.store.rows import format_time, parse_time
from memvec.types.tools import ToolDef

_COLUMNS = "id, name, spec, created_at, updated_at"


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _spec(tool: ToolDef) -> str:
    return tool.model_dump_json(exclude={"created_at", "updated_at"})


class ToolStore:
    """The tool methods of `SQLStore` (a mixin over its plumbing)."""

    def create_tool(self: _SQL, tool: ToolDef) -> ToolDef:
        """Write a new tool; NameTakenError (nothing written) when another tool has its name."""
        assert tool.created_at is not None and tool.updated_at is not None
        with self._write() as db:
            cursor = self._run(
                db,
                f"INSERT INTO tools ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (tool.id, tool.name, _spec(tool), format_time(tool.created_at), format_time(tool.updated_at)),
            )
            if not cursor.rowcount:
                raise NameTakenError(f"a tool named {tool.name!r} exists already; upsert (PUT) replaces it")
        return tool

    def upsert_tool(self: _SQL, tool: ToolDef) -> ToolDef:
        """Write the tool, or replace the one with its name (which keeps its id and creation time),
        in one statement: two upserts of one name make one tool."""
        assert tool.created_at is not None and tool.updated_at is not None
        with self._write() as db:
            self._run(
                db,
                f"INSERT INTO tools ({_COLUMNS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE "
                "SET spec = excluded.spec, updated_at = excluded.updated_at",
                (tool.id, tool.name, _spec(tool), format_time(tool.created_at), format_time(tool.updated_at)),
            )
        found = ToolStore.tool_named(self, tool.name)
        assert found is not None
        return found

    def replace_tool(self: _SQL, tool: ToolDef) -> bool:
        """Write an existing tool's new definition (False: no tool has its id; NameTakenError: its new
        name is another tool's)."""
        assert tool.updated_at is not None
        with self._write() as db:
            taken = self._run(db, "SELECT id FROM tools WHERE name = ? AND id <> ?", (tool.name, tool.id)).fetchall()
            if taken:
                raise NameTakenError(f"a tool named {tool.name!r} exists already ({taken[0]['id']})")
            cursor = self._run(
                db,
                "UPDATE tools SET name = ?, spec = ?, updated_at = ? WHERE id = ?",
                (tool.name, _spec(tool), format_time(tool.updated_at), tool.id),
            )
            return bool(cursor.rowcount)

    def tool(self: _SQL, tool_id: str) -> ToolDef | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM tools WHERE id = ?", (tool_id,))
        return _with_times(rows[0]) if rows else None

    def tool_named(self: _SQL, name: str) -> ToolDef | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM tools WHERE name = ?", (name,))
        return _with_times(rows[0]) if rows else None

    def tools(self: _SQL) -> list[ToolDef]:
        """Every custom tool, oldest first."""
        return [_with_times(r) for r in self._query(f"SELECT {_COLUMNS} FROM tools ORDER BY created_at, id")]

    def delete_tool(self: _SQL, tool_id: str) -> bool:
        with self._write() as db:
            return bool(self._run(db, "DELETE FROM tools WHERE id = ?", (tool_id,)).rowcount)


def _with_times(row: Any) -> ToolDef:
    """The row's tool: its id and times are the row's (an upsert keeps the row's id, not the spec's)."""
    return ToolDef.model_validate_json(row["spec"]).model_copy(
        update={
            "id": row["id"],
            "created_at": parse_time(row["created_at"]),
            "updated_at": parse_time(row["updated_at"]),
        }
    )
