"""PostgreSQL store, for memory homes shared by several servers: `--store postgresql://...`.

Same schema and semantics as the SQLite store; each memvec process keeps its own index files
under its home and catches up from the shared change log. One connection per store, used under a
lock (the service runs requests on threads); writes are single transactions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memvec.errors import StoreError
from memvec.store.sql import SQLStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS memvec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, tier TEXT NOT NULL CHECK (tier IN ('archival', 'recall')),
    text TEXT NOT NULL, dedup_key TEXT NOT NULL, role TEXT, session_id TEXT, turn_id TEXT, source_url TEXT,
    tags TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, embedding BYTEA, embedding_model TEXT,
    untrusted BOOLEAN NOT NULL DEFAULT FALSE, context TEXT, UNIQUE (agent, tier, dedup_key));
CREATE INDEX IF NOT EXISTS records_by_time ON records (agent, tier, created_at);
CREATE INDEX IF NOT EXISTS records_by_session ON records (agent, tier, session_id);
CREATE TABLE IF NOT EXISTS record_tags (
    record_id BIGINT NOT NULL REFERENCES records (id) ON DELETE CASCADE, tag TEXT NOT NULL,
    PRIMARY KEY (record_id, tag));
CREATE INDEX IF NOT EXISTS record_tags_by_tag ON record_tags (tag, record_id);
CREATE TABLE IF NOT EXISTS changes (
    seq BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, tier TEXT NOT NULL, record_id BIGINT NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('add', 'delete')));
CREATE INDEX IF NOT EXISTS changes_by_partition ON changes (agent, tier, seq);
CREATE TABLE IF NOT EXISTS core_blocks (
    agent TEXT NOT NULL, label TEXT NOT NULL, value TEXT NOT NULL, char_limit INTEGER NOT NULL,
    read_only BOOLEAN NOT NULL DEFAULT FALSE, description TEXT NOT NULL DEFAULT '', updated_at TEXT NOT NULL,
    position BIGSERIAL, PRIMARY KEY (agent, label));
CREATE TABLE IF NOT EXISTS agents (
    name TEXT PRIMARY KEY, settings TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',
    in_context TEXT NOT NULL DEFAULT '[]', turn INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL)
"""


MIGRATION_LOCK, WRITE_LOCK = 7406153, 7406154  # advisory lock keys


class PostgresStore(SQLStore):
    PLACEHOLDER = "%s"
    META_TABLE = "memvec_meta"

    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.rows import dict_row

        self.url = url
        self._lock = threading.RLock()
        try:
            self._db = psycopg.connect(url, autocommit=True, row_factory=dict_row)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))  # one migrator at a time
                for statement in filter(str.strip, SCHEMA.split(";")):
                    self._db.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One transaction, holding the store's write lock until it ends: change numbers come from a
        sequence when a writer starts, so without the lock a later number could commit first and a
        reader that caught up in between would skip the earlier change for good."""
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield self._db

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            rows: list[dict[str, Any]] = self._db.execute(sql, params).fetchall()
            return rows

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def storage_bytes(self) -> int:
        rows = self._query("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
                           "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                           "AND c.relkind = 'r'")
        return int(rows[0]["n"])
