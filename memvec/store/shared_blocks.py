"""Shared core blocks in the SQL stores: a block made once (Letta's `/v1/blocks`) and attached to
several agents, so what one agent writes into it every holder sees in its next prompt.

A shared block is an ordinary `core_blocks` row whose owner is not an agent but `~block-<hex>` (a
name no agent can have), so edits, history and undo are the same code as for an agent's own blocks;
`block_attachments` says which agents hold it, under which label."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from memvec.errors import CoreMemoryError, NotFoundError
from memvec.store.blocks import BLOCK_COLUMNS, SHARED_OWNER_PREFIX, block_of_row
from memvec.store.rows import format_time
from memvec.types import CoreBlock


class _SQL(Protocol):
    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def attachments(self, agent: str) -> dict[str, str]: ...


class SharedBlockStore:
    """The shared-block methods of `SQLStore` (a mixin over its plumbing)."""

    def shared_blocks(self: _SQL) -> list[tuple[str, CoreBlock]]:
        """Every shared block with its owner name, oldest first."""
        rows = self._query(
            f"SELECT agent, {BLOCK_COLUMNS} FROM core_blocks WHERE agent LIKE ? ORDER BY updated_at, agent",
            (f"{SHARED_OWNER_PREFIX}%",),
        )
        return [(r["agent"], block_of_row(r)) for r in rows]

    def block_owner(self: _SQL, agent: str, label: str) -> str:
        """Whose row holds the agent's block `label`: a shared block's owner, else the agent itself."""
        return self.attachments(agent).get(label, agent)

    def attachments(self: _SQL, agent: str) -> dict[str, str]:
        """The shared blocks attached to the agent: label -> owner, in the order attached (one whose
        block is gone, its creation undone, is no attachment)."""
        rows = self._query(
            "SELECT a.label, a.owner FROM block_attachments a JOIN core_blocks b "
            "ON b.agent = a.owner AND b.label = a.label WHERE a.agent = ? "
            "ORDER BY a.attached_at, a.owner",
            (agent,),
        )
        return {r["label"]: r["owner"] for r in rows}

    def block_holders(self: _SQL, owner: str) -> list[str]:
        """The agents a shared block is attached to."""
        rows = self._query("SELECT agent FROM block_attachments WHERE owner = ? ORDER BY agent", (owner,))
        return [r["agent"] for r in rows]

    def attach_block(self: _SQL, agent: str, owner: str) -> bool:
        """Attach a shared block to an agent (False: it already was). CoreMemoryError when the agent
        already has a block of that label."""
        with self._write() as db:
            found = self._run(db, "SELECT label FROM core_blocks WHERE agent = ?", (owner,)).fetchone()
            if found is None:
                raise NotFoundError(f"no shared block {owner.removeprefix(SHARED_OWNER_PREFIX)!r}")
            label = found["label"]
            held = self._run(
                db,
                "SELECT a.owner FROM block_attachments a JOIN core_blocks b ON b.agent = a.owner "
                "AND b.label = a.label WHERE a.agent = ? AND a.label = ?",
                (agent, label),
            ).fetchone()
            self._run(
                db,
                "DELETE FROM block_attachments WHERE agent = ? AND label = ? AND owner <> ?",
                (agent, label, owner if held is None else held["owner"]),
            )  # what a gone block left
            if held is not None and held["owner"] == owner:
                return False
            own = self._run(
                db, "SELECT 1 AS x FROM core_blocks WHERE agent = ? AND label = ?", (agent, label)
            ).fetchone()
            if held is not None or own is not None:
                raise CoreMemoryError(
                    f"agent {agent!r} already has a block labelled {label!r}: detach or delete it first"
                )
            self._run(
                db,
                "INSERT INTO block_attachments (agent, label, owner, attached_at) VALUES (?,?,?,?)",
                (agent, label, owner, format_time(datetime.now(UTC))),
            )
            return True

    def detach_block(self: _SQL, agent: str, owner: str) -> bool:
        with self._write() as db:
            return bool(
                self._run(db, "DELETE FROM block_attachments WHERE agent = ? AND owner = ?", (agent, owner)).rowcount
            )

    def delete_shared_block(self: _SQL, owner: str) -> bool:
        """Delete a shared block, its history and every attachment of it."""
        with self._write() as db:
            self._run(db, "DELETE FROM block_attachments WHERE owner = ?", (owner,))
            self._run(db, "DELETE FROM block_history WHERE agent = ?", (owner,))
            return bool(self._run(db, "DELETE FROM core_blocks WHERE agent = ?", (owner,)).rowcount)
