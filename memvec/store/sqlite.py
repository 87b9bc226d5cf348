"""SQLite store (WAL, synchronous=FULL): one file, `store.sqlite3`, under the memory home.

A write is one IMMEDIATE transaction covering the records, their tags and the change-log rows,
so a crash leaves either all of a batch or none of it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
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
from memvec.store.schema import LATEST_VERSION, MIGRATIONS
from memvec.types import AgentSettings, AgentState, CoreBlock, Record, SearchFilters, Tier


class SQLiteStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
            self._db.execute(f"PRAGMA {pragma}")
        self._migrate()

    # -- plumbing -------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                       "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            applied = {r[0] for r in db.execute("SELECT version FROM schema_migrations")}
            if applied and max(applied) > LATEST_VERSION:
                raise StoreError(f"store {self.path} has schema version {max(applied)}; this memvec "
                                 f"knows up to {LATEST_VERSION}. Upgrade memvec.")
            for version, script in MIGRATIONS:
                if version in applied:
                    continue
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)",
                           (version, format_time(datetime.now(UTC))))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def schema_version(self) -> int:
        return int(self._query("SELECT MAX(version) FROM schema_migrations")[0][0])

    # -- meta -----------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       (key, value))

    # -- records --------------------------------------------------------------------------
    def existing_ids(self, agent: str, tier: Tier, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            rows = self._query(
                f"SELECT dedup_key, id FROM records WHERE agent = ? AND tier = ? "
                f"AND dedup_key IN ({','.join('?' * len(chunk))})", [agent, tier.value, *chunk])
            found.update({r[0]: r[1] for r in rows})
        return found

    def insert(self, rows: Sequence[PreparedRecord]) -> list[tuple[int, bool]]:
        """Insert all rows in one transaction; an exact duplicate returns the existing id."""
        outcome: list[tuple[int, bool]] = []
        with self._write() as db:
            for row in rows:
                outcome.append(self._insert_one(db, row))
        return outcome

    def _insert_one(self, db: sqlite3.Connection, row: PreparedRecord) -> tuple[int, bool]:
        rec = row.record
        cursor = db.execute(
            "INSERT INTO records (agent, tier, text, dedup_key, role, session_id, turn_id, source_url, "
            "tags, created_at, embedding, embedding_model, untrusted, context) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (agent, tier, dedup_key) DO NOTHING",
            (rec.agent, rec.tier.value, rec.text, row.dedup_key, rec.role, rec.citation.session_id,
             rec.citation.turn_id, rec.citation.source_url, json.dumps(rec.tags),
             format_time(row.created_at), np.asarray(row.embedding, dtype=np.float32).tobytes(),
             row.model_id, int(looks_untrusted(rec.text)), row.context))
        if cursor.rowcount == 0:
            existing = db.execute("SELECT id FROM records WHERE agent = ? AND tier = ? AND dedup_key = ?",
                                  (rec.agent, rec.tier.value, row.dedup_key)).fetchone()
            return int(existing[0]), False
        record_id = int(cursor.lastrowid or 0)
        db.executemany("INSERT INTO record_tags VALUES (?, ?)", [(record_id, t) for t in rec.tags])
        db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES (?, ?, ?, 'add')",
                   (rec.agent, rec.tier.value, record_id))
        return record_id, True

    def delete(self, agent: str, record_id: int) -> Record | None:
        with self._write() as db:
            row = db.execute(f"SELECT {RECORD_COLUMNS} FROM records WHERE id = ? AND +agent = ?",
                             (record_id, agent)).fetchone()
            if row is None:
                return None
            db.execute("DELETE FROM records WHERE id = ?", (record_id,))
            db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES (?, ?, ?, 'delete')",
                       (agent, row["tier"], record_id))
        return row_to_record(row)

    def get(self, agent: str, ids: Sequence[int]) -> list[Record]:
        by_id: dict[int, Record] = {}
        for start in range(0, len(ids), 500):
            chunk = [int(i) for i in ids[start:start + 500]]
            # `+agent`: look rows up by primary key, not by scanning the agent's index
            rows = self._query(f"SELECT {RECORD_COLUMNS} FROM records WHERE id IN ({','.join('?' * len(chunk))}) "
                               "AND +agent = ?", [*chunk, agent])
            by_id.update({r["id"]: row_to_record(r) for r in rows})
        return [by_id[int(i)] for i in ids if int(i) in by_id]

    def list_records(self, agent: str, tier: Tier, *, limit: int, offset: int = 0,
             newest_first: bool = False, filters: SearchFilters | None = None) -> list[Record]:
        where, params = filter_sql(filters)
        order = "DESC" if newest_first else "ASC"
        rows = self._query(
            f"SELECT {RECORD_COLUMNS} FROM records WHERE agent = ? AND tier = ?{where} "
            f"ORDER BY created_at {order}, id {order} LIMIT ? OFFSET ?",
            [agent, tier.value, *params, limit, offset])
        return [row_to_record(r) for r in rows]

    def filter_ids(self, agent: str, tier: Tier, filters: SearchFilters) -> Ids:
        where, params = filter_sql(filters)
        rows = self._query(f"SELECT id FROM records WHERE agent = ? AND tier = ?{where}",
                           [agent, tier.value, *params])
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def ids(self, agent: str, tier: Tier) -> Ids:
        return self.filter_ids(agent, tier, SearchFilters())

    def count(self, agent: str, tier: Tier) -> int:
        return int(self._query("SELECT COUNT(*) FROM records WHERE agent = ? AND tier = ?",
                               (agent, tier.value))[0][0])

    def texts(self, agent: str, tier: Tier, filters: SearchFilters | None = None
              ) -> Iterator[tuple[int, str]]:
        where, params = filter_sql(filters)
        rows = self._query(f"SELECT id, text FROM records WHERE agent = ? AND tier = ?{where}",
                           [agent, tier.value, *params])
        return ((int(r[0]), str(r[1])) for r in rows)

    def last_in_session(self, agent: str, tier: Tier, session_id: str) -> str | None:
        """Text of the latest record of a session (the context of the next one)."""
        rows = self._query("SELECT text FROM records WHERE agent = ? AND tier = ? AND session_id = ? "
                           "ORDER BY id DESC LIMIT 1", (agent, tier.value, session_id))
        return str(rows[0][0]) if rows else None

    # -- change log and embeddings --------------------------------------------------------
    def last_change(self, agent: str, tier: Tier) -> int:
        rows = self._query("SELECT MAX(seq) FROM changes WHERE agent = ? AND tier = ?", (agent, tier.value))
        return int(rows[0][0] or 0)

    def changes_since(self, agent: str, tier: Tier, seq: int) -> list[Change]:
        rows = self._query("SELECT seq, record_id, op FROM changes WHERE agent = ? AND tier = ? "
                           "AND seq > ? ORDER BY seq", (agent, tier.value, seq))
        return [Change(int(r[0]), int(r[1]), r[2]) for r in rows]

    def embeddings(self, agent: str, tier: Tier, ids: Sequence[int] | None = None,
                   *, batch: int = 4096) -> Iterator[EmbeddingBatch]:
        """Stored embeddings (with text, for re-embedding), in id order, `batch` rows at a time."""
        if ids is None:
            last = 0
            while True:
                rows = self._query(f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE agent = ? "
                                   "AND tier = ? AND id > ? ORDER BY id LIMIT ?", (agent, tier.value, last, batch))
                if not rows:
                    return
                last = int(rows[-1][0])
                yield embedding_batch(rows)
            return
        wanted = sorted(int(i) for i in ids)
        for start in range(0, len(wanted), min(batch, 500)):
            chunk = wanted[start:start + min(batch, 500)]
            rows = self._query(f"SELECT {EMBEDDING_COLUMNS} FROM records WHERE "
                               f"id IN ({','.join('?' * len(chunk))}) AND +agent = ? AND +tier = ? ORDER BY id",
                               [*chunk, agent, tier.value])
            if rows:
                yield embedding_batch(rows)

    def set_embeddings(self, ids: Sequence[int], vectors: npt.NDArray[np.float32], model_id: str) -> None:
        with self._write() as db:
            db.executemany("UPDATE records SET embedding = ?, embedding_model = ? WHERE id = ?",
                           [(np.asarray(v, dtype=np.float32).tobytes(), model_id, int(i))
                            for i, v in zip(ids, vectors, strict=True)])

    def partitions(self) -> list[tuple[str, Tier]]:
        rows = self._query("SELECT DISTINCT agent, tier FROM changes ORDER BY agent, tier")
        return [(r[0], Tier(r[1])) for r in rows]

    def agents(self) -> list[str]:
        rows = self._query("SELECT DISTINCT agent FROM records UNION SELECT agent FROM core_blocks "
                           "UNION SELECT name FROM agents ORDER BY 1")
        return [r[0] for r in rows]

    # -- agents (settings and conversation state) -----------------------------------------
    def get_agent(self, name: str) -> tuple[AgentSettings, AgentState] | None:
        rows = self._query("SELECT settings, summary, in_context, turn, created_at FROM agents WHERE name = ?", (name,))
        if not rows:
            return None
        row = rows[0]
        state = AgentState(summary=row[1], in_context=json.loads(row[2]), turn=row[3], created_at=parse_time(row[4]))
        return AgentSettings.model_validate_json(row[0]), state

    def put_agent(self, settings: AgentSettings, state: AgentState | None = None) -> None:
        """Create or update an agent's settings (and its state, when given)."""
        now = format_time(datetime.now(UTC))
        with self._write() as db:
            db.execute("INSERT INTO agents (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, "
                       "updated_at = excluded.updated_at",
                       (settings.name, settings.model_dump_json(), now, now))
            if state is not None:
                db.execute("UPDATE agents SET summary = ?, in_context = ?, turn = ?, updated_at = ? WHERE name = ?",
                           (state.summary, json.dumps(state.in_context), state.turn, now, settings.name))

    def agent_names(self) -> list[str]:
        return [r[0] for r in self._query("SELECT name FROM agents ORDER BY name")]

    def delete_agent(self, name: str) -> list[tuple[int, str]]:
        """Delete an agent with all its records and blocks; returns the (id, tier) of deleted records."""
        with self._write() as db:
            rows = db.execute("SELECT id, tier FROM records WHERE agent = ?", (name,)).fetchall()
            db.execute("DELETE FROM records WHERE agent = ?", (name,))
            db.executemany("INSERT INTO changes (agent, tier, record_id, op) VALUES (?, ?, ?, 'delete')",
                           [(name, r[1], r[0]) for r in rows])
            db.execute("DELETE FROM core_blocks WHERE agent = ?", (name,))
            db.execute("DELETE FROM agents WHERE name = ?", (name,))
        return [(int(r[0]), str(r[1])) for r in rows]

    def storage_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())

    # -- core memory blocks ---------------------------------------------------------------
    def blocks(self, agent: str) -> list[CoreBlock]:
        rows = self._query("SELECT label, value, char_limit, read_only, description FROM core_blocks "
                           "WHERE agent = ? ORDER BY rowid", (agent,))
        return [CoreBlock(label=r[0], value=r[1], limit=r[2], read_only=bool(r[3]), description=r[4])
                for r in rows]

    def put_block(self, agent: str, block: CoreBlock) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO core_blocks VALUES (?,?,?,?,?,?,?) ON CONFLICT (agent, label) DO UPDATE SET "
                "value = excluded.value, char_limit = excluded.char_limit, read_only = excluded.read_only, "
                "description = excluded.description, updated_at = excluded.updated_at",
                (agent, block.label, block.value, block.limit, int(block.read_only), block.description,
                 format_time(datetime.now(UTC))))

    def compare_and_set_block(self, agent: str, label: str, expected: str, value: str) -> bool:
        """Set a block's value only if it still is `expected` (no lost update between editors)."""
        with self._write() as db:
            cursor = db.execute("UPDATE core_blocks SET value = ?, updated_at = ? WHERE agent = ? AND label = ? "
                                "AND value = ?", (value, format_time(datetime.now(UTC)), agent, label, expected))
            return cursor.rowcount == 1

    def delete_block(self, agent: str, label: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM core_blocks WHERE agent = ? AND label = ?",
                              (agent, label)).rowcount == 1
