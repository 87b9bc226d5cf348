"""Consolidation runs in the SQL stores: one row per run with what it changed (JSON), and the two
record edits an undo needs (a superseded version reopened, the run's row marked undone). Also the
agent leases that keep an agent's reply loop on one server at a time (memvec.engine.lease)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from memvec.errors import VersionConflictError
from memvec.exchange.consolidation import ConsolidationRun
from memvec.store.rows import format_time, parse_time


class _SQL(Protocol):
    ROW_HINT: str

    def _write(self) -> AbstractContextManager[Any]: ...

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any: ...

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...


def _run_row(row: Any) -> ConsolidationRun:
    diff = json.loads(row["diff"])
    return ConsolidationRun(
        id=row["id"],
        agent=row["agent"],
        model=row["model"],
        started_at=parse_time(row["started_at"]),
        through_message=row["through_message"],
        facts=diff.get("facts", []),
        blocks=diff.get("blocks", []),
        undone_at=parse_time(row["undone_at"]) if row["undone_at"] else None,
    )


def _diff(run: ConsolidationRun) -> str:
    return json.dumps(
        {
            "facts": [f.model_dump(mode="json") for f in run.facts],
            "blocks": [b.model_dump(mode="json") for b in run.blocks],
        }
    )


class RunStore:
    """The consolidation-run methods of `SQLStore` (a mixin over its plumbing)."""

    def start_run(self: _SQL, agent: str, model: str, through_message: int | None, started_at: datetime) -> int:
        """A new run's row (its diff is written by `finish_run` in the same transaction); returns its id."""
        with self._write() as db:
            rows = self._run(
                db,
                "INSERT INTO consolidation_runs (agent, model, started_at, through_message) "
                "VALUES (?, ?, ?, ?) RETURNING id",
                (agent, model, format_time(started_at), through_message),
            ).fetchall()
            return int(rows[0]["id"])

    def finish_run(self: _SQL, run: ConsolidationRun) -> None:
        with self._write() as db:
            self._run(db, "UPDATE consolidation_runs SET diff = ? WHERE id = ?", (_diff(run), run.id))

    def restore_run(self: _SQL, agent: str, run: ConsolidationRun) -> None:
        """An imported run as it was (its ids already those of this home), undone or not."""
        with self._write() as db:
            self._run(
                db,
                "INSERT INTO consolidation_runs (agent, model, started_at, through_message, diff, undone_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    agent,
                    run.model,
                    format_time(run.started_at),
                    run.through_message,
                    _diff(run),
                    format_time(run.undone_at) if run.undone_at else None,
                ),
            )

    def runs(self: _SQL, agent: str) -> list[ConsolidationRun]:
        """The agent's runs, oldest first."""
        rows = self._query(
            "SELECT id, agent, model, started_at, through_message, diff, undone_at "
            "FROM consolidation_runs WHERE agent = ? ORDER BY id",
            (agent,),
        )
        return [_run_row(r) for r in rows]

    def forget_in_runs(self: _SQL, agent: str, record_ids: Sequence[int]) -> None:
        """Blank the text of forgotten facts in the runs' diffs (a diff must not keep what was forgotten)."""
        gone = set(record_ids)
        with self._write() as db:
            rows = self._run(db, "SELECT id, diff FROM consolidation_runs WHERE agent = ?", (agent,)).fetchall()
            for row in rows:
                diff = json.loads(row["diff"])
                facts = diff.get("facts", [])
                if not any(fact["id"] in gone for fact in facts):
                    continue
                for fact in facts:
                    if fact["id"] in gone:
                        fact["text"] = "[forgotten]"
                self._run(db, "UPDATE consolidation_runs SET diff = ? WHERE id = ?", (json.dumps(diff), row["id"]))

    def mark_run_undone(self: _SQL, run_id: int) -> None:
        with self._write() as db:
            self._run(
                db, "UPDATE consolidation_runs SET undone_at = ? WHERE id = ?", (format_time(datetime.now(UTC)), run_id)
            )

    def reopen_version(self: _SQL, agent: str, record_id: int, superseded_by: int, valid_to: datetime | None) -> None:
        """Make a superseded version current again (its successor is gone): the links, `valid_to` and
        the dedup key set aside at supersession come back. VersionConflictError when it is no longer
        superseded by `superseded_by`, or a current passage has its text now."""
        with self._write() as db:
            row = self._run(
                db,
                f"SELECT tier, dedup_key, superseded_by FROM records WHERE id = ? AND {self.ROW_HINT}agent = ?",
                (record_id, agent),
            ).fetchone()
            if row is None or row["superseded_by"] != superseded_by:
                raise VersionConflictError(f"record {record_id} is not superseded by {superseded_by} any more")
            key = str(row["dedup_key"]).removesuffix(f"\x1f#{record_id}")
            taken = self._run(
                db, "SELECT id FROM records WHERE agent = ? AND tier = ? AND dedup_key = ?", (agent, row["tier"], key)
            ).fetchone()
            if taken is not None:
                raise VersionConflictError(f"record {taken['id']} is current with the text of {record_id} now")
            self._run(
                db,
                "UPDATE records SET superseded_by = NULL, valid_to = ?, dedup_key = ? WHERE id = ?",
                (format_time(valid_to) if valid_to else None, key, record_id),
            )

    # -- agent leases ---------------------------------------------------------------------
    def acquire_lease(self: _SQL, agent: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Take the agent's lease for `holder` when it is free, expired or already `holder`'s."""
        until = format_time(now + timedelta(seconds=ttl_s))
        with self._write() as db:
            row = self._run(db, "SELECT holder, expires_at FROM agent_leases WHERE agent = ?", (agent,)).fetchone()
            if row is None:
                self._run(db, "INSERT INTO agent_leases VALUES (?, ?, ?)", (agent, holder, until))
                return True
            if row["holder"] != holder and row["expires_at"] > format_time(now):
                return False
            self._run(db, "UPDATE agent_leases SET holder = ?, expires_at = ? WHERE agent = ?", (holder, until, agent))
            return True

    def renew_lease(self: _SQL, agent: str, holder: str, now: datetime, ttl_s: float) -> bool:
        """Extend `holder`'s lease; False when it is not theirs any more (it expired and was taken)."""
        with self._write() as db:
            cursor = self._run(
                db,
                "UPDATE agent_leases SET expires_at = ? WHERE agent = ? AND holder = ?",
                (format_time(now + timedelta(seconds=ttl_s)), agent, holder),
            )
            return bool(cursor.rowcount)

    def release_lease(self: _SQL, agent: str, holder: str) -> None:
        with self._write() as db:
            self._run(db, "DELETE FROM agent_leases WHERE agent = ? AND holder = ?", (agent, holder))
