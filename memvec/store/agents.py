"""The home's meta and agents in the SQL stores: key/value meta (the model, the index kind), the
browser sessions signed out, and each agent's settings and conversation state; deleting an agent
takes everything it owns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from memvec.store.blocks import SHARED_OWNER_PREFIX
from memvec.store.forget_log import Tombstone
from memvec.store.rows import LOG_CHANGE, format_time, parse_time, settings_from_json
from memvec.types import AgentSettings, AgentState


class _SQL(Protocol):
    META_TABLE: str

    def _write(self: _SQL) -> AbstractContextManager[Any]: ...

    def _run(self: _SQL, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self: _SQL, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def note_forgotten(self: _SQL, tombstones: Sequence[Tombstone]) -> None: ...


class AgentStore:
    """The meta, session and agent methods of `SQLStore` (a mixin over its plumbing)."""

    # -- meta -----------------------------------------------------------------------------
    def get_meta(self: _SQL, key: str) -> str | None:
        rows = self._query(f"SELECT value FROM {self.META_TABLE} WHERE key = ?", (key,))
        return str(rows[0]["value"]) if rows else None

    def set_meta(self: _SQL, key: str, value: str) -> None:
        with self._write() as db:
            self._run(
                db,
                f"INSERT INTO {self.META_TABLE} VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- browser sessions -----------------------------------------------------------------
    def revoke_session(self: _SQL, nonce: str, expires_at: datetime) -> None:
        """Remember a signed-out session until it would have expired (and forget the expired ones)."""
        with self._write() as db:
            self._run(db, "DELETE FROM revoked_sessions WHERE expires_at < ?", (format_time(datetime.now(UTC)),))
            self._run(
                db,
                "INSERT INTO revoked_sessions VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
                (nonce, format_time(expires_at)),
            )

    def session_revoked(self: _SQL, nonce: str) -> bool:
        return bool(self._query("SELECT 1 FROM revoked_sessions WHERE nonce = ?", (nonce,)))

    # -- agents --------------------------------------------------------------------------
    def agents(self: _SQL) -> list[str]:
        rows = self._query(
            "SELECT DISTINCT agent AS name FROM records UNION SELECT agent FROM core_blocks "
            "WHERE agent NOT LIKE ? UNION SELECT name FROM agents ORDER BY 1",
            (f"{SHARED_OWNER_PREFIX}%",),
        )
        return [r["name"] for r in rows]

    def has_agent(self: _SQL, name: str) -> bool:
        """The one definition of "an agent exists": it has settings, core blocks or records (as `agents`)."""
        rows = self._query(
            "SELECT 1 AS found FROM agents WHERE name = ? UNION ALL "
            "SELECT 1 FROM core_blocks WHERE agent = ? UNION ALL "
            "SELECT 1 FROM records WHERE agent = ? LIMIT 1",
            (name, name, name),
        )
        return bool(rows)

    # -- agents (settings and conversation state) -----------------------------------------
    def get_agent(self: _SQL, name: str) -> tuple[AgentSettings, AgentState] | None:
        rows = self._query(
            "SELECT settings, summary, in_context, turn, created_at, pending_calls FROM agents WHERE name = ?", (name,)
        )
        if not rows:
            return None
        r = rows[0]
        state = AgentState(
            summary=r["summary"],
            in_context=json.loads(r["in_context"]),
            turn=r["turn"],
            created_at=parse_time(r["created_at"]),
            pending_calls=json.loads(r["pending_calls"]),
        )
        return settings_from_json(r["settings"]), state

    def put_agent(self: _SQL, settings: AgentSettings, state: AgentState | None = None) -> None:
        """Create or update an agent's settings (and its state, when given)."""
        now = format_time(datetime.now(UTC))
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO agents (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, "
                "updated_at = excluded.updated_at",
                (settings.name, settings.model_dump_json(), now, now),
            )
            if state is not None:
                AgentStore._write_state(self, db, settings.name, state, now)

    def put_agent_state(self: _SQL, name: str, state: AgentState) -> bool:
        """Write only the agent's conversation state, leaving its settings as they are now (a reply
        must not undo a change of settings made while it ran). False: the agent has no row yet."""
        with self._write() as db:
            return AgentStore._write_state(self, db, name, state, format_time(datetime.now(UTC)))

    def _write_state(self: _SQL, db: Any, name: str, state: AgentState, now: str) -> bool:
        cursor = self._run(
            db,
            "UPDATE agents SET summary = ?, in_context = ?, turn = ?, pending_calls = ?, updated_at = ? WHERE name = ?",
            (
                state.summary,
                json.dumps(state.in_context),
                state.turn,
                json.dumps([c.model_dump() for c in state.pending_calls]),
                now,
                name,
            ),
        )
        return bool(cursor.rowcount)

    def agent_names(self: _SQL) -> list[str]:
        return [r["name"] for r in self._query("SELECT name FROM agents ORDER BY name")]

    def delete_agent(self: _SQL, name: str) -> list[tuple[int, str]]:
        """Delete an agent with all its records and blocks; returns the (id, tier) of deleted records."""
        with self._write() as db:
            rows = self._run(db, "SELECT id, tier FROM records WHERE agent = ?", (name,)).fetchall()
            self._run(db, "DELETE FROM records WHERE agent = ?", (name,))
            for r in rows:
                self._run(db, LOG_CHANGE, (name, r["tier"], r["id"], "delete"))
            self._run(db, "DELETE FROM core_blocks WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM block_history WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM block_attachments WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM consolidation_runs WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM agent_leases WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM documents WHERE owner = ?", (name,))
            self._run(db, "DELETE FROM folder_attachments WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM agent_files WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM agent_runs WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM conversations WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM message_requests WHERE agent = ?", (name,))
            self._run(db, "DELETE FROM agents WHERE name = ?", (name,))
            self._run(db, "DELETE FROM agent_identities WHERE handle = ?", (name,))
            self.note_forgotten([Tombstone(at=datetime.now(UTC), kind="agent", agent=name)])
        return [(int(r["id"]), str(r["tier"])) for r in rows]
