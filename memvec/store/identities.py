"""Agents' identities in the SQL stores: Letta's `agent-<uuid>` id and a display name beside the
handle that keys the agent's data (memvec.types.AgentIdentity).

An agent written without one (through the Python API's tiers, or by a memvec older than schema 17
while a newer one runs beside it) gets one the first time it is asked for, so every agent has
exactly one id, and it never changes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memvec.types import AGENT_ID_PATTERN, AgentIdentity

_LETTA_ID = re.compile(AGENT_ID_PATTERN)
_COLUMNS = "handle, id, name"


class _SQL(Protocol):
    def _write(self: _SQL) -> AbstractContextManager[Any]: ...

    def _run(self: _SQL, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self: _SQL, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def agents(self: _SQL) -> list[str]: ...


def new_agent_id(handle: str | None = None) -> str:
    """A handle that already reads as a Letta id (an agent made over HTTP without a free name) is its
    own id; any other handle gets a fresh one."""
    return handle if handle is not None and is_agent_id(handle) else f"agent-{uuid.uuid4()}"


def is_agent_id(ref: str) -> bool:
    """Whether `ref` has the shape of a Letta id (every id memvec gives has it)."""
    return _LETTA_ID.fullmatch(ref) is not None


def _identity(row: Any) -> AgentIdentity:
    return AgentIdentity(handle=row["handle"], id=row["id"], name=row["name"])


class IdentityStore:
    """The identity methods of `SQLStore` (a mixin over its plumbing)."""

    def claim_identity(self: _SQL, identity: AgentIdentity) -> bool:
        """Record a new agent's identity; False (nothing written) when its handle or id is taken.
        Creating over HTTP claims first, so two creates of one name cannot end up as one agent."""
        with self._write() as db:
            cursor = self._run(
                db,
                f"INSERT INTO agent_identities ({_COLUMNS}) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                (identity.handle, identity.id, identity.name),
            )
            return bool(cursor.rowcount)

    def identity(self: _SQL, handle: str) -> AgentIdentity:
        """The agent's identity, made (id fresh, name = handle) if it has none yet."""
        rows = self._query(f"SELECT {_COLUMNS} FROM agent_identities WHERE handle = ?", (handle,))
        if rows:
            return _identity(rows[0])
        IdentityStore.claim_identity(self, AgentIdentity(handle=handle, id=new_agent_id(handle), name=handle))
        return _identity(self._query(f"SELECT {_COLUMNS} FROM agent_identities WHERE handle = ?", (handle,))[0])

    def identities(self: _SQL) -> dict[str, AgentIdentity]:
        """Every agent's identity by handle, oldest agent first (made for the agents that have none yet)."""
        rows = self._query(
            "SELECT i.handle, i.id, i.name FROM agent_identities i LEFT JOIN agents a ON a.name = i.handle "
            "ORDER BY COALESCE(a.created_at, ''), i.id"
        )
        found = {r["handle"]: _identity(r) for r in rows}
        missing = [handle for handle in self.agents() if handle not in found]
        return {**found, **{handle: IdentityStore.identity(self, handle) for handle in missing}}

    def handle_taken(self: _SQL, handle: str) -> bool:
        """Whether an identity holds this handle (claimed, perhaps by a create still under way)."""
        return bool(self._query("SELECT 1 FROM agent_identities WHERE handle = ?", (handle,)))

    def handle_of(self: _SQL, agent_id: str) -> str | None:
        rows = self._query("SELECT handle FROM agent_identities WHERE id = ?", (agent_id,))
        return str(rows[0]["handle"]) if rows else None

    def rename_agent(self: _SQL, handle: str, name: str) -> None:
        """A new display name (the id and the handle stay)."""
        IdentityStore.identity(self, handle)
        with self._write() as db:
            self._run(db, "UPDATE agent_identities SET name = ? WHERE handle = ?", (name, handle))
