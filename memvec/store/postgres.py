"""PostgreSQL store, for memory homes shared by several servers: `--store postgresql://...`.

Same schema and semantics as the SQLite store; each memvec process keeps its own index files
under its home and catches up from the shared change log. One connection per store, used under a
lock (the service runs requests on threads); writes are single transactions.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.errors import StoreError
from memvec.guard import looks_untrusted
from memvec.store.base import Change, EmbeddingBatch, Ids, PreparedRecord
from memvec.store.rows import (
    EMBEDDING_COLUMNS,
    RECORD_COLUMNS,
    embedding_batch,
    filter_sql,
    format_time,
    parse_time,
    row_to_record,
)
from memvec.types import AgentSettings, AgentState, CoreBlock, Record, SearchFilters, Tier

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


class PostgresStore:
    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.rows import dict_row

        self.url = url
        self._lock = threading.RLock()
        try:
            self._db = psycopg.connect(url, autocommit=True, row_factory=dict_row)
            with self._db.transaction():
                self._db.execute("SELECT pg_advisory_xact_lock(7406153)")  # one migrator at a time
                for statement in filter(str.strip, SCHEMA.split(";")):
                    self._db.execute(statement)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open PostgreSQL store: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._lock, self._db.transaction():
            yield self._db

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            rows: list[dict[str, Any]] = self._db.execute(sql, params).fetchall()
            return rows

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM memvec_meta WHERE key = %s", (key,))
        return str(rows[0]["value"]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT INTO memvec_meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       (key, value))

    def existing_ids(self, agent: str, tier: Tier, keys: Sequence[str]) -> dict[str, int]:
        rows = self._query("SELECT dedup_key, id FROM records WHERE agent = %s AND tier = %s AND dedup_key = ANY(%s)",
                           (agent, tier.value, list(keys)))
        return {r["dedup_key"]: int(r["id"]) for r in rows}

    def insert(self, rows: Sequence[PreparedRecord]) -> list[tuple[int, bool]]:
        with self._write() as db:
            return [self._insert_one(db, row) for row in rows]

    def _insert_one(self, db: Any, row: PreparedRecord) -> tuple[int, bool]:
        rec = row.record
        found = db.execute(
            "INSERT INTO records (agent, tier, text, dedup_key, role, session_id, turn_id, source_url, tags, "
            "created_at, embedding, embedding_model, untrusted, context) VALUES "
            "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (agent, tier, dedup_key) DO NOTHING RETURNING id",
            (rec.agent, rec.tier.value, rec.text, row.dedup_key, rec.role, rec.citation.session_id,
             rec.citation.turn_id, rec.citation.source_url, json.dumps(rec.tags), format_time(row.created_at),
             np.asarray(row.embedding, dtype=np.float32).tobytes(), row.model_id, looks_untrusted(rec.text),
             row.context)).fetchone()
        if found is None:
            existing = db.execute("SELECT id FROM records WHERE agent = %s AND tier = %s AND dedup_key = %s",
                                  (rec.agent, rec.tier.value, row.dedup_key)).fetchone()
            return int(existing["id"]), False
        record_id = int(found["id"])
        for tag in rec.tags:
            db.execute("INSERT INTO record_tags VALUES (%s, %s)", (record_id, tag))
        db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES (%s, %s, %s, 'add')",
                   (rec.agent, rec.tier.value, record_id))
        return record_id, True

    def delete(self, agent: str, record_id: int) -> Record | None:
        with self._write() as db:
            row = db.execute(f"SELECT {RECORD_COLUMNS} FROM records WHERE id = %s AND agent = %s",
                             (record_id, agent)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM records WHERE id = %s", (record_id,))
            db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES (%s, %s, %s, 'delete')",
                       (agent, row["tier"], record_id))
        return row_to_record(row)

    def get(self, agent: str, ids: Sequence[int]) -> list[Record]:
        rows = self._query(f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ANY(%s) AND agent = %s",
                           ([int(i) for i in ids], agent))
        by_id = {int(r["id"]): row_to_record(r) for r in rows}
        return [by_id[int(i)] for i in ids if int(i) in by_id]

    def list_records(self, agent: str, tier: Tier, *, limit: int, offset: int = 0,
                     newest_first: bool = False, filters: SearchFilters | None = None) -> list[Record]:
        where, params = filter_sql(filters, "%s")
        order = "DESC" if newest_first else "ASC"
        rows = self._query(f"SELECT {RECORD_COLUMNS} FROM records WHERE agent = %s AND tier = %s{where} "
                           f"ORDER BY created_at {order}, id {order} LIMIT %s OFFSET %s",
                           [agent, tier.value, *params, limit, offset])
        return [row_to_record(r) for r in rows]

    def filter_ids(self, agent: str, tier: Tier, filters: SearchFilters) -> Ids:
        where, params = filter_sql(filters, "%s")
        rows = self._query(f"SELECT id FROM records WHERE agent = %s AND tier = %s{where}",
                           [agent, tier.value, *params])
        return np.array([r["id"] for r in rows], dtype=np.int64)

    def ids(self, agent: str, tier: Tier) -> Ids:
        return self.filter_ids(agent, tier, SearchFilters())

    def count(self, agent: str, tier: Tier) -> int:
        rows = self._query("SELECT COUNT(*) AS n FROM records WHERE agent = %s AND tier = %s", (agent, tier.value))
        return int(rows[0]["n"])

    def texts(self, agent: str, tier: Tier, filters: SearchFilters | None = None) -> Iterator[tuple[int, str]]:
        where, params = filter_sql(filters, "%s")
        rows = self._query(f"SELECT id, text FROM records WHERE agent = %s AND tier = %s{where}",
                           [agent, tier.value, *params])
        return ((int(r["id"]), str(r["text"])) for r in rows)

    def last_in_session(self, agent: str, tier: Tier, session_id: str) -> str | None:
        rows = self._query("SELECT text FROM records WHERE agent = %s AND tier = %s AND session_id = %s "
                           "ORDER BY id DESC LIMIT 1", (agent, tier.value, session_id))
        return str(rows[0]["text"]) if rows else None

    def last_change(self, agent: str, tier: Tier) -> int:
        rows = self._query("SELECT MAX(seq) AS seq FROM changes WHERE agent = %s AND tier = %s", (agent, tier.value))
        return int(rows[0]["seq"] or 0)

    def changes_since(self, agent: str, tier: Tier, seq: int) -> list[Change]:
        rows = self._query("SELECT seq, record_id, op FROM changes WHERE agent = %s AND tier = %s AND seq > %s "
                           "ORDER BY seq", (agent, tier.value, seq))
        return [Change(int(r["seq"]), int(r["record_id"]), r["op"]) for r in rows]

    def embeddings(self, agent: str, tier: Tier, ids: Sequence[int] | None = None,
                   *, batch: int = 4096) -> Iterator[EmbeddingBatch]:
        if ids is not None:
            wanted = sorted(int(i) for i in ids)
            for start in range(0, len(wanted), batch):
                rows = self._query(f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE id = ANY(%s) AND agent = %s "
                                   "AND tier = %s ORDER BY id", (wanted[start:start + batch], agent, tier.value))
                if rows:
                    yield embedding_batch(rows)
            return
        last = 0
        while rows := self._query(f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE agent = %s AND tier = %s "
                                  "AND id > %s ORDER BY id LIMIT %s", (agent, tier.value, last, batch)):
            last = int(rows[-1]["id"])
            yield embedding_batch(rows)

    def set_embeddings(self, ids: Sequence[int], vectors: npt.NDArray[np.float32], model_id: str) -> None:
        with self._write() as db:
            for record_id, vector in zip(ids, vectors, strict=True):
                db.execute("UPDATE records SET embedding = %s, embedding_model = %s WHERE id = %s",
                           (np.asarray(vector, dtype=np.float32).tobytes(), model_id, int(record_id)))

    def partitions(self) -> list[tuple[str, Tier]]:
        rows = self._query("SELECT DISTINCT agent, tier FROM changes ORDER BY agent, tier")
        return [(r["agent"], Tier(r["tier"])) for r in rows]

    def agents(self) -> list[str]:
        rows = self._query("SELECT DISTINCT agent AS name FROM records UNION SELECT agent FROM core_blocks "
                           "UNION SELECT name FROM agents ORDER BY 1")
        return [r["name"] for r in rows]

    def storage_bytes(self) -> int:
        rows = self._query("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
                           "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
                           "AND c.relkind = 'r'")
        return int(rows[0]["n"])

    def blocks(self, agent: str) -> list[CoreBlock]:
        rows = self._query("SELECT label, value, char_limit, read_only, description FROM core_blocks "
                           "WHERE agent = %s ORDER BY position", (agent,))
        return [CoreBlock(label=r["label"], value=r["value"], limit=r["char_limit"], read_only=r["read_only"],
                          description=r["description"]) for r in rows]

    def put_block(self, agent: str, block: CoreBlock) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO core_blocks (agent, label, value, char_limit, read_only, description, updated_at) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (agent, label) DO UPDATE SET value = excluded.value, "
                "char_limit = excluded.char_limit, read_only = excluded.read_only, "
                "description = excluded.description, updated_at = excluded.updated_at",
                (agent, block.label, block.value, block.limit, block.read_only, block.description,
                 format_time(datetime.now(UTC))))

    def compare_and_set_block(self, agent: str, label: str, expected: str, value: str) -> bool:
        with self._write() as db:
            cursor = db.execute("UPDATE core_blocks SET value = %s, updated_at = %s WHERE agent = %s AND label = %s "
                                "AND value = %s", (value, format_time(datetime.now(UTC)), agent, label, expected))
            return bool(cursor.rowcount == 1)

    def delete_block(self, agent: str, label: str) -> bool:
        with self._write() as db:
            cursor = db.execute("DELETE FROM core_blocks WHERE agent = %s AND label = %s", (agent, label))
            return bool(cursor.rowcount == 1)

    def get_agent(self, name: str) -> tuple[AgentSettings, AgentState] | None:
        rows = self._query("SELECT settings, summary, in_context, turn, created_at FROM agents WHERE name = %s",
                           (name,))
        if not rows:
            return None
        r = rows[0]
        state = AgentState(summary=r["summary"], in_context=json.loads(r["in_context"]), turn=r["turn"],
                           created_at=parse_time(r["created_at"]))
        return AgentSettings.model_validate_json(r["settings"]), state

    def put_agent(self, settings: AgentSettings, state: AgentState | None = None) -> None:
        now = format_time(datetime.now(UTC))
        with self._write() as db:
            db.execute("INSERT INTO agents (name, settings, created_at, updated_at) VALUES (%s, %s, %s, %s) "
                       "ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, "
                       "updated_at = excluded.updated_at", (settings.name, settings.model_dump_json(), now, now))
            if state is not None:
                db.execute("UPDATE agents SET summary = %s, in_context = %s, turn = %s, updated_at = %s "
                           "WHERE name = %s", (state.summary, json.dumps(state.in_context), state.turn, now,
                                               settings.name))

    def agent_names(self) -> list[str]:
        return [r["name"] for r in self._query("SELECT name FROM agents ORDER BY name")]

    def delete_agent(self, name: str) -> list[tuple[int, str]]:
        with self._write() as db:
            rows = db.execute("DELETE FROM records WHERE agent = %s RETURNING id, tier", (name,)).fetchall()
            for r in rows:
                db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES (%s, %s, %s, 'delete')",
                           (name, r["tier"], r["id"]))
            db.execute("DELETE FROM core_blocks WHERE agent = %s", (name,))
            db.execute("DELETE FROM agents WHERE name = %s", (name,))
        return [(int(r["id"]), str(r["tier"])) for r in rows]
