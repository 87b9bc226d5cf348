"""The record, change-log, agent and core-block logic shared by the SQL stores.

Statements are written once with `?` placeholders; a backend sets `PLACEHOLDER` (psycopg wants
`%s`) and supplies the connection plumbing (`_write`, `_query`, migrations, `storage_bytes`).
Rows are read by column name, which both sqlite3.Row and psycopg's dict rows support.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.errors import InvalidInputError, NotFoundError, StoreError, VersionConflictError
from memvec.store.agent_files import AgentFileStore
from memvec.store.agent_runs import AgentRunStore
from memvec.store.agents import AgentStore
from memvec.store.base import Change, EmbeddingBatch, PreparedRecord
from memvec.store.blocks import BlockStore
from memvec.store.conversations import ConversationStore
from memvec.store.documents import DocumentStore
from memvec.store.folders import FolderStore
from memvec.store.forget_log import Tombstone
from memvec.store.identities import IdentityStore
from memvec.store.message_meta import MessageMetaStore
from memvec.store.requests import RequestStore
from memvec.store.rows import (
    EMBEDDING_COLUMNS,
    LOG_CHANGE,
    RECORD_COLUMNS,
    embedding_batch,
    filter_sql,
    format_time,
    parse_time,
    row_to_record,
)
from memvec.store.runs import RunStore
from memvec.store.scopes import CHUNK, ScopeStore, marks
from memvec.store.shared_blocks import SharedBlockStore
from memvec.store.tools import ToolStore
from memvec.store.versions import VersionStore
from memvec.telemetry.tracing import span
from memvec.types import Citation, Clock, NewRecord, Record, SearchFilters, Tier, utc_now

RECORD_INSERT = (
    "INSERT INTO records (agent, tier, text, dedup_key, role, session_id, turn_id, source_url, tags, created_at, "
    "embedding, embedding_model, untrusted, context, expires_at, valid_from, valid_to, supersedes, near_key, "
    "document_id, document, written_by) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (agent, tier, dedup_key) DO NOTHING RETURNING id"
)


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def _operation(sql: str) -> str:
    """The statement's first word (SELECT, INSERT, ...): a span names the kind, never the values."""
    return sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""


class SQLStore(
    AgentFileStore,
    AgentRunStore,
    AgentStore,
    BlockStore,
    ConversationStore,
    SharedBlockStore,
    DocumentStore,
    FolderStore,
    IdentityStore,
    MessageMetaStore,
    RequestStore,
    RunStore,
    ScopeStore,
    ToolStore,
    VersionStore,
):
    """Everything but the connection. Subclasses set the class attributes and the plumbing."""

    PLACEHOLDER = "?"
    DB_SYSTEM = "sqlite"  # OpenTelemetry's name for the database, on store spans
    META_TABLE = "meta"
    ROW_HINT = ""  # prefix on `agent`/`tier` where the planner must look rows up by primary key
    BLOCK_ORDER = "position"
    # what "now" is for the versions valid now (Memory.open(clock=...) gives a test's)
    clock: Clock = staticmethod(utc_now)

    # -- plumbing (backend) ---------------------------------------------------------------
    def _write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _values(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """The first column of each row, without a row object each (a period's scope reads thousands)."""
        raise NotImplementedError

    def _sql(self, sql: str) -> str:
        return sql if self.PLACEHOLDER == "?" else sql.replace("?", self.PLACEHOLDER)

    def _read_span(self, sql: str) -> AbstractContextManager[Any]:
        return span("memvec.store.read", **{"db.system": self.DB_SYSTEM, "db.operation": _operation(sql)})

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._read_span(sql):
            return self._rows(self._sql(sql), params)

    def _query_values(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._read_span(sql):
            return self._values(self._sql(sql), params)

    def _run(self, db: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        """Execute inside a `_write` transaction; returns the cursor."""
        with span("memvec.store.write", **{"db.system": self.DB_SYSTEM, "db.operation": _operation(sql)}):
            return db.execute(self._sql(sql), params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction around several writes of this thread: every write inside joins it, and
        they all commit together or not at all."""
        with self._write():
            yield

    def connection_stats(self) -> dict[str, int]:
        return {}

    def note_forgotten(self, tombstones: Sequence[Tombstone]) -> None:
        """What a transaction deletes on purpose, for the forget log a restore applies. Only a SQLite
        home keeps one (memvec.store.forget_log): a PostgreSQL store is restored by pg_restore."""

    def healthy(self) -> bool:
        """Whether the database answers right now (down: False, never an exception)."""
        try:
            self._query("SELECT 1")
            return True
        except StoreError:
            return False

    # -- records --------------------------------------------------------------------------
    def existing_ids(self, agent: str, tier: Tier, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(keys), CHUNK):
            chunk = list(keys[start : start + CHUNK])
            rows = self._query(
                f"SELECT dedup_key, id FROM records WHERE agent = ? AND tier = ? "
                f"AND dedup_key IN ({marks(len(chunk))})",
                [agent, tier.value, *chunk],
            )
            found.update({r["dedup_key"]: int(r["id"]) for r in rows})
        return found

    def insert(self, rows: Sequence[PreparedRecord]) -> list[tuple[int, bool]]:
        """Insert all rows in one transaction; an exact duplicate returns the existing id."""
        with self._write() as db:
            return [self._insert_one(db, row) for row in rows]

    def _insert_one(self, db: Any, row: PreparedRecord) -> tuple[int, bool]:
        rec = row.record
        document = rec.citation.document
        valid_from = rec.valid_from or row.created_at
        expires_at = rec.expires_at
        if rec.supersedes is not None:
            inherited = self._close_version(db, rec, valid_from)
            expires_at = expires_at or inherited
        # fetchall, not fetchone: SQLite finishes a RETURNING statement only once its rows are read
        returned = self._run(
            db,
            RECORD_INSERT,
            (
                rec.agent,
                rec.tier.value,
                rec.text,
                row.dedup_key,
                rec.role,
                rec.citation.session_id,
                rec.citation.turn_id,
                rec.citation.source_url,
                json.dumps(rec.tags),
                format_time(row.created_at),
                np.asarray(row.embedding, dtype=np.float32).tobytes(),
                row.model_id,
                row.untrusted,
                row.context,
                _time(expires_at),
                format_time(valid_from),
                _time(rec.valid_to),
                rec.supersedes,
                row.near_key,
                document.document_id if document else None,
                document.model_dump_json() if document else None,
                row.written_by,
            ),
        ).fetchall()
        if not returned:
            existing = self._run(
                db,
                "SELECT id FROM records WHERE agent = ? AND tier = ? AND dedup_key = ?",
                (rec.agent, rec.tier.value, row.dedup_key),
            ).fetchone()
            if rec.supersedes is not None:
                raise VersionConflictError(f"passage {existing['id']} is current and has this text already")
            return int(existing["id"]), False
        record_id = int(returned[0]["id"])
        for tag in rec.tags:
            self._run(db, "INSERT INTO record_tags VALUES (?, ?)", (record_id, tag))
        if rec.supersedes is not None:
            self._run(db, "UPDATE records SET superseded_by = ? WHERE id = ?", (record_id, rec.supersedes))
        self._run(db, LOG_CHANGE, (rec.agent, rec.tier.value, record_id, "add"))
        return record_id, True

    def _close_version(self, db: Any, rec: NewRecord, valid_from: datetime) -> datetime | None:
        """End the version `rec` supersedes where `rec` begins, and return its `expires_at` (a new
        version inherits the deadline unless it sets its own). Its dedup key is set aside (suffixed with
        its id), so the unique key holds among current versions only: the text may come back. A new
        version beginning before the old one did would give the old one an interval that ends before
        it starts: refused."""
        old = self._run(
            db,
            f"SELECT tier, superseded_by, valid_from, created_at, expires_at FROM records "
            f"WHERE id = ? AND {self.ROW_HINT}agent = ?",
            (rec.supersedes, rec.agent),
        ).fetchone()
        if old is None or old["tier"] != rec.tier.value:
            raise NotFoundError(f"agent {rec.agent!r} has no {rec.tier.value} record {rec.supersedes}")
        if old["superseded_by"] is not None:
            raise VersionConflictError(
                f"record {rec.supersedes} was superseded by {old['superseded_by']}; update the current version"
            )
        old_from = parse_time(old["valid_from"] or old["created_at"])
        if valid_from < old_from:
            raise InvalidInputError(
                f"valid_from {valid_from.isoformat()} is before the current version's "
                f"({old_from.isoformat()}): a new version begins when or after the old one did"
            )
        self._run(
            db,
            "UPDATE records SET valid_to = ?, dedup_key = dedup_key || ? WHERE id = ?",
            (format_time(valid_from), f"\x1f#{rec.supersedes}", rec.supersedes),
        )
        return parse_time(old["expires_at"]) if old["expires_at"] else None

    def merge_into(self, agent: str, record_id: int, tags: Sequence[str], citation: Citation) -> None:
        """A repeat of record `record_id` was inserted: add its tags and the citation fields the record lacks."""
        with self._write() as db:
            row = self._run(
                db,
                f"SELECT tags, session_id, turn_id, source_url FROM records WHERE id = ? AND {self.ROW_HINT}agent = ?",
                (record_id, agent),
            ).fetchone()
            if row is None:
                return
            known = json.loads(row["tags"])
            added = [tag for tag in tags if tag not in known]
            fill = {
                field: value
                for field, value in citation.model_dump().items()
                if value is not None and row[field] is None
            }
            if not added and not fill:
                return
            for tag in added:
                self._run(db, "INSERT INTO record_tags VALUES (?, ?)", (record_id, tag))
            columns = "".join(f", {field} = ?" for field in fill)
            self._run(
                db,
                f"UPDATE records SET tags = ?{columns} WHERE id = ?",
                (json.dumps(known + added), *fill.values(), record_id),
            )

    def delete_many(self, agent: str, ids: Sequence[int]) -> int:
        """Delete the agent's records among `ids` in one transaction (each logged); returns how many."""
        deleted = 0
        with self._write() as db:
            for start in range(0, len(ids), CHUNK):
                chunk = [int(i) for i in ids[start : start + CHUNK]]
                rows = self._run(
                    db,
                    f"SELECT id, tier FROM records WHERE id IN ({marks(len(chunk))}) AND {self.ROW_HINT}agent = ?",
                    [*chunk, agent],
                ).fetchall()
                found = [int(r["id"]) for r in rows]
                if found:
                    self._run(db, f"DELETE FROM records WHERE id IN ({marks(len(found))})", found)
                for r in rows:
                    self._run(db, LOG_CHANGE, (agent, r["tier"], r["id"], "delete"))
                deleted += len(found)
        return deleted

    def get(self, agent: str, ids: Sequence[int]) -> list[Record]:
        by_id: dict[int, Record] = {}
        for start in range(0, len(ids), CHUNK):
            chunk = [int(i) for i in ids[start : start + CHUNK]]
            rows = self._query(
                f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN ({marks(len(chunk))}) AND {self.ROW_HINT}agent = ?",
                [*chunk, agent],
            )
            by_id.update({int(r["id"]): row_to_record(r) for r in rows})
        return [by_id[int(i)] for i in ids if int(i) in by_id]

    def list_records(
        self,
        agent: str,
        tier: Tier,
        *,
        limit: int,
        offset: int = 0,
        newest_first: bool = False,
        filters: SearchFilters | None = None,
        after: int | None = None,
        before: int | None = None,
    ) -> list[Record]:
        where, params = filter_sql(filters, now=self.clock())
        order = "DESC" if newest_first else "ASC"
        for cursor, past in ((after, not newest_first), (before, newest_first)):
            if cursor is not None:
                clause, values = self._cursor_clause(agent, cursor, later=past)
                where, params = f"{where} AND {clause}", [*params, *values]
        rows = self._query(
            f"SELECT {RECORD_COLUMNS} FROM records WHERE agent = ? AND tier = ?{where} "
            f"ORDER BY created_at {order}, id {order} LIMIT ? OFFSET ?",
            [agent, tier.value, *params, limit, offset],
        )
        return [row_to_record(r) for r in rows]

    def _cursor_clause(self, agent: str, record_id: int, *, later: bool) -> tuple[str, list[Any]]:
        """Rows after (or before) a record in (created_at, id) order; a cursor record that is gone
        (deleted meanwhile) falls back to its id alone."""
        rows = self._query(
            f"SELECT created_at FROM records WHERE id = ? AND {self.ROW_HINT}agent = ?", (record_id, agent)
        )
        sign = ">" if later else "<"
        if not rows:
            return f"id {sign} ?", [record_id]
        return (
            f"(created_at {sign} ? OR (created_at = ? AND id {sign} ?))",
            [rows[0]["created_at"], rows[0]["created_at"], record_id],
        )

    def last_in_session(self, agent: str, tier: Tier, session_id: str) -> str | None:
        """Text of the latest record of a session (the context of the next one)."""
        rows = self._query(
            "SELECT text FROM records WHERE agent = ? AND tier = ? AND session_id = ? ORDER BY id DESC LIMIT 1",
            (agent, tier.value, session_id),
        )
        return str(rows[0]["text"]) if rows else None

    # -- change log and embeddings --------------------------------------------------------
    def last_change(self, agent: str, tier: Tier) -> int:
        rows = self._query("SELECT MAX(seq) AS seq FROM changes WHERE agent = ? AND tier = ?", (agent, tier.value))
        return int(rows[0]["seq"] or 0)

    def changes_since(self, agent: str, tier: Tier, seq: int) -> list[Change]:
        rows = self._query(
            "SELECT seq, record_id, op FROM changes WHERE agent = ? AND tier = ? AND seq > ? ORDER BY seq",
            (agent, tier.value, seq),
        )
        return [Change(int(r["seq"]), int(r["record_id"]), r["op"]) for r in rows]

    def embeddings(
        self, agent: str, tier: Tier, ids: Sequence[int] | None = None, *, batch: int = 4096
    ) -> Iterator[EmbeddingBatch]:
        """Stored embeddings (with text, for re-embedding), in id order, `batch` rows at a time."""
        if ids is None:
            yield from self._all_embeddings(agent, tier, batch)
            return
        wanted = sorted(int(i) for i in ids)
        step = min(batch, CHUNK)
        for start in range(0, len(wanted), step):
            chunk = wanted[start : start + step]
            rows = self._query(
                f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE id IN ({marks(len(chunk))}) "
                f"AND {self.ROW_HINT}agent = ? AND {self.ROW_HINT}tier = ? ORDER BY id",
                [*chunk, agent, tier.value],
            )
            if rows:
                yield embedding_batch(rows)

    def _all_embeddings(self, agent: str, tier: Tier, batch: int) -> Iterator[EmbeddingBatch]:
        last = 0
        while rows := self._query(
            f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE agent = ? AND tier = ? AND id > ? ORDER BY id LIMIT ?",
            (agent, tier.value, last, batch),
        ):
            last = int(rows[-1]["id"])
            yield embedding_batch(rows)

    def set_embeddings(self, ids: Sequence[int], vectors: npt.NDArray[np.float32], model_id: str) -> None:
        with self._write() as db:
            for record_id, vector in zip(ids, vectors, strict=True):
                self._run(
                    db,
                    "UPDATE records SET embedding = ?, embedding_model = ? WHERE id = ?",
                    (np.asarray(vector, dtype=np.float32).tobytes(), model_id, int(record_id)),
                )

    def partitions(self) -> list[tuple[str, Tier]]:
        rows = self._query("SELECT DISTINCT agent, tier FROM changes ORDER BY agent, tier")
        return [(r["agent"], Tier(r["tier"])) for r in rows]
