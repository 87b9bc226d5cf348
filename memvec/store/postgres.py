"""PostgreSQL store, for memory homes shared by several servers: `--store postgresql://...`.

Same schema and semantics as the SQLite store; each memvec process keeps its own index files
under its home and catches up from the shared change log. Connections come from a pool
(`psycopg_pool`) that checks each one before handing it out and reconnects in the background, so
a database restart or failover heals by itself. While the database cannot be reached every
operation fails within `timeout` seconds with `StoreUnavailableError` (HTTP 503), never hangs.
A read cut off mid-way is retried once on a fresh connection; a write is not (its transaction
either committed or not), except inserts, which the dedup key makes safe to repeat.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from memvec.errors import StoreError, StoreUnavailableError
from memvec.store.base import PreparedRecord
from memvec.store.sql import SQLStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS memvec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, tier TEXT NOT NULL CHECK (tier IN ('archival', 'recall')),
    text TEXT NOT NULL, dedup_key TEXT NOT NULL, role TEXT, session_id TEXT, turn_id TEXT, source_url TEXT,
    tags TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, embedding BYTEA, embedding_model TEXT,
    untrusted BOOLEAN NOT NULL DEFAULT FALSE, context TEXT, UNIQUE (agent, tier, dedup_key));
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
ALTER TABLE core_blocks ADD COLUMN IF NOT EXISTS metadata TEXT NOT NULL DEFAULT '{}';
CREATE TABLE IF NOT EXISTS agents (
    name TEXT PRIMARY KEY, settings TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '',
    in_context TEXT NOT NULL DEFAULT '[]', turn INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS block_history (
    seq BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, label TEXT NOT NULL, changed_at TEXT NOT NULL,
    actor TEXT NOT NULL, op TEXT NOT NULL, old_block TEXT, new_block TEXT, undone_by BIGINT);
CREATE INDEX IF NOT EXISTS block_history_by_label ON block_history (agent, label, seq);
ALTER TABLE records ADD COLUMN IF NOT EXISTS expires_at TEXT;
CREATE INDEX IF NOT EXISTS records_by_expiry ON records (agent, tier, expires_at);
ALTER TABLE records ADD COLUMN IF NOT EXISTS valid_from TEXT;
ALTER TABLE records ADD COLUMN IF NOT EXISTS valid_to TEXT;
ALTER TABLE records ADD COLUMN IF NOT EXISTS supersedes BIGINT;
ALTER TABLE records ADD COLUMN IF NOT EXISTS superseded_by BIGINT;
CREATE INDEX IF NOT EXISTS records_by_validity ON records (agent, tier, valid_to);
CREATE INDEX IF NOT EXISTS records_by_time_and_validity ON records (agent, tier, created_at)
    INCLUDE (valid_to, superseded_by, id);
DROP INDEX IF EXISTS records_by_time;
CREATE TABLE IF NOT EXISTS consolidation_runs (
    id BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, model TEXT NOT NULL, started_at TEXT NOT NULL,
    through_message BIGINT, diff TEXT NOT NULL DEFAULT '{}', undone_at TEXT);
CREATE INDEX IF NOT EXISTS consolidation_runs_by_agent ON consolidation_runs (agent, id);
CREATE TABLE IF NOT EXISTS agent_leases (agent TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at TEXT NOT NULL);
ALTER TABLE records ADD COLUMN IF NOT EXISTS near_key TEXT;
CREATE INDEX IF NOT EXISTS records_by_near_key ON records (agent, tier, near_key);
CREATE TABLE IF NOT EXISTS revoked_sessions (nonce TEXT PRIMARY KEY, expires_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS block_attachments (
    agent TEXT NOT NULL, label TEXT NOT NULL, owner TEXT NOT NULL, attached_at TEXT NOT NULL,
    PRIMARY KEY (agent, label));
CREATE INDEX IF NOT EXISTS block_attachments_by_owner ON block_attachments (owner, agent);
CREATE TABLE IF NOT EXISTS documents (
    id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, content_hash TEXT NOT NULL,
    media_type TEXT NOT NULL, size_bytes BIGINT NOT NULL, text TEXT NOT NULL, pages INTEGER, title TEXT,
    chunks INTEGER NOT NULL, blocks TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, replaced_at TEXT,
    replaced_by BIGINT);
CREATE INDEX IF NOT EXISTS documents_by_owner ON documents (owner, name, id);
CREATE INDEX IF NOT EXISTS documents_by_hash ON documents (owner, content_hash);
CREATE TABLE IF NOT EXISTS folders (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT, instructions TEXT,
    metadata TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS folder_attachments (
    folder_id TEXT NOT NULL, agent TEXT NOT NULL, attached_at TEXT NOT NULL, PRIMARY KEY (folder_id, agent));
CREATE INDEX IF NOT EXISTS folder_attachments_by_agent ON folder_attachments (agent, folder_id);
ALTER TABLE records ADD COLUMN IF NOT EXISTS document_id BIGINT;
ALTER TABLE records ADD COLUMN IF NOT EXISTS document TEXT;
CREATE INDEX IF NOT EXISTS records_by_document ON records (document_id);
CREATE TABLE IF NOT EXISTS message_requests (
    key TEXT PRIMARY KEY, agent TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('running', 'done')),
    response TEXT, started_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS message_requests_by_agent ON message_requests (agent);
CREATE INDEX IF NOT EXISTS message_requests_by_start ON message_requests (started_at);
ALTER TABLE records ADD COLUMN IF NOT EXISTS written_by TEXT;
ALTER TABLE agents ADD COLUMN IF NOT EXISTS pending_calls TEXT NOT NULL DEFAULT '[]';
CREATE TABLE IF NOT EXISTS tools (
    id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_files (
    agent TEXT NOT NULL, document_id BIGINT NOT NULL, is_open INTEGER NOT NULL, start_line INTEGER,
    end_line INTEGER, accessed_at TEXT NOT NULL, PRIMARY KEY (agent, document_id));
CREATE INDEX IF NOT EXISTS agent_files_by_document ON agent_files (document_id);
ALTER TABLE documents ADD COLUMN IF NOT EXISTS original_name TEXT;
CREATE TABLE IF NOT EXISTS message_meta (
    record_id BIGINT PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE, run_id TEXT, meta TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS message_meta_by_run ON message_meta (run_id);
CREATE TABLE IF NOT EXISTS agent_runs (
    id TEXT PRIMARY KEY, agent TEXT NOT NULL, status TEXT NOT NULL, background INTEGER NOT NULL,
    created_at TEXT NOT NULL, completed_at TEXT, stop_reason TEXT, usage TEXT, error TEXT, message_types TEXT);
CREATE INDEX IF NOT EXISTS agent_runs_by_agent ON agent_runs (agent, created_at);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, agent TEXT NOT NULL, summary TEXT, model TEXT, state TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, last_message_at TEXT);
CREATE INDEX IF NOT EXISTS conversations_by_agent ON conversations (agent, created_at);
CREATE TABLE IF NOT EXISTS agent_identities (handle TEXT PRIMARY KEY, id TEXT NOT NULL UNIQUE, name TEXT NOT NULL);
INSERT INTO agent_identities (handle, id, name)
SELECT handle,
    CASE WHEN handle ~ '^agent-[0-9a-f-]{36}$' THEN handle ELSE 'agent-' || gen_random_uuid()::text END, handle
FROM (SELECT name AS handle FROM agents UNION SELECT agent FROM records
      UNION SELECT agent FROM core_blocks WHERE agent NOT LIKE '~%') AS handles
WHERE NOT EXISTS (SELECT 1 FROM agent_identities)
ON CONFLICT DO NOTHING
"""

MIGRATION_LOCK, WRITE_LOCK = 7406153, 7406154  # advisory lock keys
SCHEMA_DIGEST = hashlib.sha256(SCHEMA.encode()).hexdigest()
SCHEMA_DIGEST_KEY = "schema_sha256"  # in memvec_meta: what the last migration applied
POOL_SIZE = 8
log = logging.getLogger("memvec.store")
T = TypeVar("T")


class _Broken(Exception):
    """A connection died under an operation (as opposed to: none could be had)."""


class PostgresStore(SQLStore):
    PLACEHOLDER = "%s"
    DB_SYSTEM = "postgresql"
    META_TABLE = "memvec_meta"

    def __init__(self, url: str, *, timeout: float = 3.0, pool_size: int = POOL_SIZE) -> None:
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self.url, self.timeout = url, timeout
        self._local = threading.local()
        connect_timeout = max(1, round(timeout))
        # min_size 1: a connection kept warm; the pool refills in the background after a restart
        self.pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=timeout,
            name="memvec",
            check=ConnectionPool.check_connection,
            reconnect_timeout=24 * 3600,
            kwargs={"autocommit": True, "row_factory": dict_row, "connect_timeout": connect_timeout},
        )
        self.pool.open(wait=False)
        try:
            self._migrate()
        except BaseException:
            self.pool.close()
            raise

    def connection_stats(self) -> dict[str, int]:
        stats = self.pool.get_stats()
        return {
            "opened": stats.get("connections_num", 0),
            "failed": stats.get("connections_errors", 0),
            "lost": stats.get("connections_lost", 0),
        }

    def _migrate(self) -> None:
        """Brings the schema up to this release's once. A server starting on a current schema runs no DDL:
        `ALTER TABLE ... IF NOT EXISTS` takes the table's exclusive lock even when it changes nothing, and
        a running server's write waiting behind it (a foreign-key check on `records`) while holding a lock
        the next ALTER wants made PostgreSQL break a deadlock by failing that write, in a rolling restart."""
        if self._schema_digest() == SCHEMA_DIGEST:
            return
        with self._connection() as db, db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))  # one migrator at a time
            # writers wait for the write lock before they touch a table, so none holds a lock the DDL needs
            db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            db.execute(
                f"INSERT INTO {self.META_TABLE} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (SCHEMA_DIGEST_KEY, SCHEMA_DIGEST),
            )

    def _schema_digest(self) -> str | None:
        """The digest of the schema text the last migration applied (None on a new database)."""
        with self._connection() as db:
            if db.execute("SELECT to_regclass(%s) AS t", (self.META_TABLE,)).fetchone()["t"] is None:
                return None
            row = db.execute(f"SELECT value FROM {self.META_TABLE} WHERE key = %s", (SCHEMA_DIGEST_KEY,)).fetchone()
            return None if row is None else str(row["value"])

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A checked connection from the pool (or this thread's open write transaction, so a read inside
        it sees its writes); every database failure comes out as a memvec error."""
        import psycopg
        from psycopg_pool import PoolTimeout

        current = getattr(self._local, "db", None)
        if current is not None:
            yield current
            return
        try:
            with self.pool.connection() as db:
                yield db
        except PoolTimeout as exc:
            raise StoreUnavailableError(
                f"PostgreSQL is unavailable: no connection within {self.timeout:g} s ({_reason(self.pool)})"
            ) from exc
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(f"PostgreSQL connection lost: {str(exc).strip()}") from _Broken(exc)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL error: {str(exc).strip()}") from exc

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One transaction holding the store's write lock until it ends: change numbers come from a
        sequence when a writer starts, so without the lock a later number could commit first and a
        reader that caught up in between would skip the earlier change for good."""
        outer = getattr(self._local, "db", None)
        with self._connection() as db, db.transaction():  # nested: a savepoint in the same transaction
            if outer is None:
                db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            self._local.db = db
            try:
                yield db
            finally:
                self._local.db = outer

    def in_transaction(self) -> bool:
        """Whether this thread is inside a `transaction()` (its writes are not committed yet)."""
        return getattr(self._local, "db", None) is not None

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        def read() -> list[dict[str, Any]]:
            with self._connection() as db:
                rows: list[dict[str, Any]] = db.execute(sql, params).fetchall()
                return rows

        return _retry_if_broken(read)

    def _values(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        from psycopg.rows import tuple_row

        def read() -> list[Any]:
            with self._connection() as db, db.cursor(row_factory=tuple_row) as cursor:
                return [row[0] for row in cursor.execute(sql, params).fetchall()]

        return _retry_if_broken(read)

    def insert(self, rows: Sequence[PreparedRecord]) -> list[tuple[int, bool]]:
        """Retried once when the connection dies mid-way: if the first attempt did commit, the second
        finds every row by its dedup key and returns the same ids (created False), never a copy."""
        return _retry_if_broken(lambda: super(PostgresStore, self).insert(rows))

    def checkpoint(self) -> None:
        """PostgreSQL's own WAL and VACUUM decide when deleted rows leave its files (docs/deployment.md)."""

    def close(self) -> None:
        self.pool.close()

    def storage_bytes(self) -> int:
        rows = self._query(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind = 'r'"
        )
        return int(rows[0]["n"])


def _retry_if_broken(operation: Callable[[], T]) -> T:
    try:
        return operation()
    except StoreUnavailableError as exc:
        if not isinstance(exc.__cause__, _Broken):
            raise  # the database is down: fail fast, the caller may retry later
        log.warning("retrying after a lost PostgreSQL connection: %s", exc)
        return operation()


def _reason(pool: Any) -> str:
    stats = pool.get_stats()
    return f"{stats.get('connections_errors', 0)} connection errors so far, {stats.get('pool_size', 0)} open"
