"""Letta's conversations in the SQL stores (memvec.types.conversations): one row each, its context
(`state`) written by replies apart from its description (`summary`, `model`) written by updates, so
neither undoes the other; deleted with the agent."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from memvec.store.rows import format_time, parse_time
from memvec.store.scopes import marks
from memvec.types.agents import AgentState
from memvec.types.conversations import Conversation

_COLUMNS = "id, agent, summary, model, state, created_at, updated_at, last_message_at"


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _conversation(row: Any) -> Conversation:
    return Conversation(
        id=row["id"],
        agent=row["agent"],
        summary=row["summary"],
        model=row["model"],
        state=AgentState.model_validate_json(row["state"]),
        created_at=parse_time(row["created_at"]),
        updated_at=parse_time(row["updated_at"]),
        last_message_at=parse_time(row["last_message_at"]) if row["last_message_at"] else None,
    )


class ConversationStore:
    """The conversation methods of `SQLStore` (a mixin over its plumbing)."""

    def add_conversation(self: _SQL, conversation: Conversation) -> None:
        c = conversation
        with self._write() as db:
            self._run(
                db,
                f"INSERT INTO conversations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    c.id,
                    c.agent,
                    c.summary,
                    c.model,
                    c.state.model_dump_json(),
                    format_time(c.created_at),
                    format_time(c.updated_at),
                    format_time(c.last_message_at) if c.last_message_at else None,
                ),
            )

    def conversation(self: _SQL, conversation_id: str) -> Conversation | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,))
        return _conversation(rows[0]) if rows else None

    def conversations(self: _SQL, agents: Sequence[str] | None, *, newest_first: bool = False) -> list[Conversation]:
        """The conversations of these agents (None: of every agent), oldest first (or newest)."""
        if agents is not None and not agents:
            return []
        order = "DESC" if newest_first else "ASC"
        where = "" if agents is None else f"WHERE agent IN ({marks(len(agents))}) "
        rows = self._query(
            f"SELECT {_COLUMNS} FROM conversations {where}ORDER BY created_at {order}, id {order}",
            list(agents or ()),
        )
        return [_conversation(r) for r in rows]

    def describe_conversation(
        self: _SQL, conversation_id: str, summary: str | None, model: str | None, at: datetime
    ) -> bool:
        """Set its summary and model (None clears); False: no such conversation."""
        with self._write() as db:
            cursor = self._run(
                db,
                "UPDATE conversations SET summary = ?, model = ?, updated_at = ? WHERE id = ?",
                (summary, model, format_time(at), conversation_id),
            )
            return bool(cursor.rowcount)

    def put_conversation_state(self: _SQL, conversation_id: str, state: AgentState, messaged_at: datetime) -> bool:
        """Write its context, and when a message was last sent to it; False: it was deleted meanwhile."""
        with self._write() as db:
            cursor = self._run(
                db,
                "UPDATE conversations SET state = ?, last_message_at = ? WHERE id = ?",
                (state.model_dump_json(), format_time(messaged_at), conversation_id),
            )
            return bool(cursor.rowcount)

    def delete_conversation(self: _SQL, conversation_id: str) -> bool:
        with self._write() as db:
            return bool(self._run(db, "DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount)
