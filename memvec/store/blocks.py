"""Core-memory blocks in the SQL stores, with their history: every change (create, edit, rewrite,
delete, undo) is a row in `block_history` written in the same transaction as the change, holding
the whole block before and after it, who made it and when. An undo restores the state before the
latest change not yet undone, if the block is still as that change left it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from memvec.errors import CoreMemoryError, NotFoundError
from memvec.store.forget_log import Tombstone
from memvec.store.rows import format_time, parse_time, readable_metadata
from memvec.types import BlockChange, CoreBlock

SHARED_OWNER_PREFIX = "~"  # not a character an agent name may start with (types.AGENT_PATTERN)

BLOCK_COLUMNS = "label, value, char_limit, read_only, description, metadata"
SHARED_BLOCK_COLUMNS = ", ".join(f"b.{column}" for column in BLOCK_COLUMNS.split(", "))
BLOCK_UPSERT = (
    "INSERT INTO core_blocks (agent, label, value, char_limit, read_only, description, metadata, updated_at) "
    "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (agent, label) DO UPDATE SET value = excluded.value, "
    "char_limit = excluded.char_limit, read_only = excluded.read_only, description = excluded.description, "
    "metadata = excluded.metadata, updated_at = excluded.updated_at"
)
HISTORY_INSERT = (
    "INSERT INTO block_history (agent, label, changed_at, actor, op, old_block, new_block) "
    "VALUES (?,?,?,?,?,?,?) RETURNING seq"
)


Run = Callable[..., Any]  # SQLStore._run: execute in the caller's transaction, return the cursor


class _SQL(Protocol):
    BLOCK_ORDER: str

    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def note_forgotten(self, tombstones: Sequence[Tombstone]) -> None: ...


def block_of_row(row: Any) -> CoreBlock:
    return CoreBlock(
        label=row["label"],
        value=row["value"],
        limit=row["char_limit"],
        read_only=bool(row["read_only"]),
        description=row["description"],
        metadata=readable_metadata(json.loads(row["metadata"])),
    )


def _dump(block: CoreBlock | None) -> str | None:
    return block.model_dump_json() if block is not None else None


def _load(raw: str | None) -> CoreBlock | None:
    return CoreBlock.model_validate_json(raw) if raw is not None else None


class BlockStore:
    """The core-block methods of `SQLStore` (a mixin over its plumbing)."""

    def blocks(self: _SQL, agent: str) -> list[CoreBlock]:
        """The agent's own blocks, then the shared blocks attached to it (in the order attached)."""
        rows = self._query(
            f"SELECT {BLOCK_COLUMNS} FROM core_blocks WHERE agent = ? ORDER BY {self.BLOCK_ORDER}", (agent,)
        )
        shared = self._query(
            f"SELECT {SHARED_BLOCK_COLUMNS} FROM block_attachments a JOIN core_blocks b "
            "ON b.agent = a.owner AND b.label = a.label WHERE a.agent = ? "
            "ORDER BY a.attached_at, a.owner",
            (agent,),
        )
        return [block_of_row(r) for r in [*rows, *shared]]

    def own_blocks(self: _SQL, label: str | None = None) -> list[tuple[str, CoreBlock]]:
        """Every agent's own blocks (not the shared ones), by agent then position; one label's when given."""
        where, params = ("agent NOT LIKE ? AND label = ?", ("~%", label)) if label else ("agent NOT LIKE ?", ("~%",))
        rows = self._query(
            f"SELECT agent, {BLOCK_COLUMNS} FROM core_blocks WHERE {where} ORDER BY agent, {self.BLOCK_ORDER}", params
        )
        return [(str(r["agent"]), block_of_row(r)) for r in rows]

    def put_block(self: _SQL, agent: str, block: CoreBlock, *, actor: str = "python", op: str = "put") -> None:
        """Create a block or replace it whole."""
        with self._write() as db:
            old = _current(self._run, db, agent, block.label)
            _apply(self._run, db, agent, block.label, block)
            _record(
                self._run, db, agent, block.label, actor, "create" if old is None and op == "put" else op, old, block
            )

    def compare_and_set_block(
        self: _SQL, agent: str, label: str, expected: str, value: str, *, actor: str = "python", op: str = "edit"
    ) -> bool:
        """Set a block's value only if it still is `expected` (no lost update between editors)."""
        with self._write() as db:
            old = _current(self._run, db, agent, label)
            if old is None or old.value != expected:
                return False
            new = old.model_copy(update={"value": value})
            _apply(self._run, db, agent, label, new)
            _record(self._run, db, agent, label, actor, op, old, new)
            return True

    def delete_block(self: _SQL, agent: str, label: str, *, actor: str = "python") -> bool:
        with self._write() as db:
            old = _current(self._run, db, agent, label)
            if old is None:
                return False
            _apply(self._run, db, agent, label, None)
            _record(self._run, db, agent, label, actor, "delete", old, None)
            return True

    def block_history(self: _SQL, agent: str, label: str | None = None) -> list[BlockChange]:
        """Every change of the agent's blocks (or one label's), oldest first."""
        where, params = ("agent = ? AND label = ?", (agent, label)) if label else ("agent = ?", (agent,))
        rows = self._query(
            f"SELECT seq, label, changed_at, actor, op, old_block, new_block, undone_by "
            f"FROM block_history WHERE {where} ORDER BY seq",
            params,
        )
        return [
            BlockChange(
                seq=r["seq"],
                label=r["label"],
                changed_at=parse_time(r["changed_at"]),
                actor=r["actor"],
                op=r["op"],
                old=_load(r["old_block"]),
                new=_load(r["new_block"]),
                undone_by=r["undone_by"],
            )
            for r in rows
        ]

    def restore_blocks(
        self: _SQL, agent: str, blocks: Sequence[CoreBlock], history: Sequence[BlockChange]
    ) -> dict[int, int]:
        """Write an imported agent's blocks as they are and their history as it was (its times, actors
        and ops; `undone_by` pointing at the new seq of its undo), in the caller's transaction, so undo
        goes back through the same changes as in the home it came from. Returns old seq -> new seq."""
        with self._write() as db:
            for block in blocks:
                _apply(self._run, db, agent, block.label, block)
            new_seq: dict[int, int] = {}
            for change in sorted(history, key=lambda c: c.seq):
                rows = self._run(
                    db,
                    HISTORY_INSERT,
                    (
                        agent,
                        change.label,
                        format_time(change.changed_at),
                        change.actor,
                        change.op,
                        _dump(change.old),
                        _dump(change.new),
                    ),
                ).fetchall()
                new_seq[change.seq] = int(rows[0]["seq"])
            for change in history:
                if change.undone_by is not None and change.undone_by in new_seq:
                    self._run(
                        db,
                        "UPDATE block_history SET undone_by = ? WHERE seq = ?",
                        (new_seq[change.undone_by], new_seq[change.seq]),
                    )
        return new_seq

    def forget_block_history(self: _SQL, agent: str, label: str | None = None) -> int:
        """Delete every past change of the agent's blocks (or one label's); the blocks keep their values."""
        where, params = ("agent = ? AND label = ?", (agent, label)) if label else ("agent = ?", (agent,))
        with self._write() as db:
            self.note_forgotten([Tombstone(at=datetime.now(UTC), kind="block_history", agent=agent, ref=label or "")])
            return int(self._run(db, f"DELETE FROM block_history WHERE {where}", params).rowcount)

    def undo_block(self: _SQL, agent: str, label: str, *, actor: str = "python") -> CoreBlock | None:
        """Put the block back as it was before its latest change not yet undone; returns it (None:
        the undone change created it, so it is gone again)."""
        with self._write() as db:
            last = self._run(
                db,
                "SELECT seq, new_block, old_block FROM block_history WHERE agent = ? AND label = ? "
                "AND op <> 'undo' AND undone_by IS NULL ORDER BY seq DESC LIMIT 1",
                (agent, label),
            ).fetchone()
            if last is None:
                raise NotFoundError(f"block {label!r} of agent {agent!r} has no change to undo")
            current, before = _current(self._run, db, agent, label), _load(last["old_block"])
            if before is None and agent.startswith(SHARED_OWNER_PREFIX):
                raise CoreMemoryError(
                    f"undoing this change would delete shared block {agent.removeprefix(SHARED_OWNER_PREFIX)!r} "
                    "for every agent holding it; delete it as a shared block (DELETE /v1/blocks/{id}, which "
                    "needs an unscoped key) or detach it from this agent"
                )
            if current != _load(last["new_block"]):
                raise CoreMemoryError(
                    f"block {label!r} changed after the edit to undo (an undo of an earlier "
                    "edit undoes the later ones first)"
                )
            _apply(self._run, db, agent, label, before)
            undo = _record(self._run, db, agent, label, actor, "undo", current, before)
            self._run(db, "UPDATE block_history SET undone_by = ? WHERE seq = ?", (undo, last["seq"]))
            return before


def _current(run: Run, db: Any, agent: str, label: str) -> CoreBlock | None:
    row = run(db, f"SELECT {BLOCK_COLUMNS} FROM core_blocks WHERE agent = ? AND label = ?", (agent, label)).fetchone()
    return block_of_row(row) if row is not None else None


def _apply(run: Run, db: Any, agent: str, label: str, block: CoreBlock | None) -> None:
    if block is None:
        run(db, "DELETE FROM core_blocks WHERE agent = ? AND label = ?", (agent, label))
        return
    run(
        db,
        BLOCK_UPSERT,
        (
            agent,
            label,
            block.value,
            block.limit,
            block.read_only,
            block.description,
            json.dumps(block.metadata),
            format_time(datetime.now(UTC)),
        ),
    )


def _record(
    run: Run, db: Any, agent: str, label: str, actor: str, op: str, old: CoreBlock | None, new: CoreBlock | None
) -> int:
    """The history row of a change (in the caller's transaction); returns its seq."""
    # fetchall, not fetchone: SQLite finishes a RETURNING statement only once its rows are read
    rows = run(
        db, HISTORY_INSERT, (agent, label, format_time(datetime.now(UTC)), actor, op, _dump(old), _dump(new))
    ).fetchall()
    return int(rows[0]["seq"])
