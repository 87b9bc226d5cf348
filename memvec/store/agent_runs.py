"""Letta's runs in the SQL stores (memvec.types.runs): one row per send, written when it starts and
again when it ends; deleted with the agent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memvec.store.rows import format_time, parse_time
from memvec.store.scopes import marks
from memvec.types.runs import AgentRun

_COLUMNS = "id, agent, status, background, created_at, completed_at, stop_reason, usage, error, message_types"


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _agent_run(row: Any) -> AgentRun:
    return AgentRun(
        id=row["id"],
        agent=row["agent"],
        status=row["status"],
        background=bool(row["background"]),
        created_at=parse_time(row["created_at"]),
        completed_at=parse_time(row["completed_at"]) if row["completed_at"] else None,
        stop_reason=row["stop_reason"],
        usage=json.loads(row["usage"] or "{}"),
        error=row["error"],
        message_types=json.loads(row["message_types"]) if row["message_types"] else None,
    )


class AgentRunStore:
    """The run methods of `SQLStore` (a mixin over its plumbing)."""

    def put_agent_run(self: _SQL, run: AgentRun) -> None:
        values = (
            run.agent,
            run.status,
            int(run.background),
            format_time(run.created_at),
            format_time(run.completed_at) if run.completed_at else None,
            run.stop_reason,
            json.dumps(run.usage),
            run.error,
            json.dumps(run.message_types) if run.message_types is not None else None,
        )
        with self._write() as db:
            self._run(
                db,
                f"INSERT INTO agent_runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE "
                "SET status = excluded.status, completed_at = excluded.completed_at, "
                "stop_reason = excluded.stop_reason, usage = excluded.usage, error = excluded.error",
                (run.id, *values),
            )

    def agent_run(self: _SQL, run_id: str) -> AgentRun | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM agent_runs WHERE id = ?", (run_id,))
        return _agent_run(rows[0]) if rows else None

    def agent_runs(self: _SQL, agents: Sequence[str], *, limit: int, newest_first: bool = True) -> list[AgentRun]:
        """The runs of these agents, newest first (or oldest), at most `limit`."""
        if not agents:
            return []
        order = "DESC" if newest_first else "ASC"
        rows = self._query(
            f"SELECT {_COLUMNS} FROM agent_runs WHERE agent IN ({marks(len(agents))}) "
            f"ORDER BY created_at {order}, id {order} LIMIT ?",
            [*agents, limit],
        )
        return [_agent_run(r) for r in rows]
