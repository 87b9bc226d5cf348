"""SQLite store (WAL, synchronous=FULL): one file, `store.sqlite3`, under the memory home.

A write is one IMMEDIATE transaction covering the records, their tags and the change-log rows,
so a crash leaves either all of a batch or none of it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memvec.errors import StoreError, StoreUnavailableError
from memvec.store import forget_log
from memvec.store.rows import format_time
from memvec.store.schema import LATEST_VERSION, MIGRATIONS
from memvec.store.sql import SQLStore

log = logging.getLogger("memvec.store")


class SQLiteStore(SQLStore):
    ROW_HINT = "+"  # `+agent`: look rows up by primary key, not by scanning the agent's index
    BLOCK_ORDER = "rowid"

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        self._depth = 0  # nesting of _write in the thread holding the lock
        self._mine = threading.local()  # .open: this thread is inside a transaction
        self._forgotten: list[forget_log.Tombstone] = []  # logged once the transaction commits
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout)
            self._db.row_factory = sqlite3.Row
            # secure_delete: freed pages are zeroed, so deleted or forgotten text leaves no trace in the
            # file (some builds default to it, not all)
            for pragma in (
                "journal_mode=WAL",
                "synchronous=FULL",
                "foreign_keys=ON",
                "secure_delete=ON",
                f"busy_timeout={int(timeout * 1000)}",
            ):
                self._db.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {path}: {exc}") from exc
        self._migrate()

    # -- plumbing -------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction; a write inside another one of this thread (`transaction()`)
        joins it, and the outermost commits or rolls back the lot."""
        with self._lock, self._errors():
            if self._depth:
                self._depth += 1
                try:
                    yield self._db
                finally:
                    self._depth -= 1
                return
            self._db.execute("BEGIN IMMEDIATE")
            self._depth, self._mine.open = 1, True
            try:
                yield self._db
            except BaseException:
                self._forgotten = []
                if self._db.in_transaction:  # SQLite may have rolled back already (e.g. disk full)
                    self._db.execute("ROLLBACK")
                raise
            finally:
                self._depth, self._mine.open = 0, False
            self._db.execute("COMMIT")
            forgotten, self._forgotten = self._forgotten, []
            forget_log.append(self.path.parent / forget_log.FORGET_LOG, forgotten)

    def note_forgotten(self, tombstones: Sequence[forget_log.Tombstone]) -> None:
        """Log what the current transaction deletes on purpose, in the home's forget log, once it
        commits (memvec.store.forget_log)."""
        with self._write():
            self._forgotten += tombstones

    def in_transaction(self) -> bool:
        """Whether this thread is inside a `transaction()` (its writes are not committed yet)."""
        return bool(getattr(self._mine, "open", False))

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock, self._errors():
            return self._db.execute(sql, params).fetchall()

    def _values(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock, self._errors():
            cursor = self._db.cursor()
            cursor.row_factory = None
            return [row[0] for row in cursor.execute(sql, params).fetchall()]

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite failures as memvec errors: another process holding the write lock past the timeout
        is "unavailable" (try again); a full disk or a broken file is a store error. Either way the
        transaction rolled back whole."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            message = str(exc)
            if "locked" in message or "busy" in message:
                raise StoreUnavailableError(f"store {self.path} is locked by another writer: {message}") from exc
            if "full" in message:
                raise StoreError(f"store {self.path}: the disk is full ({message}); nothing was written") from exc
            raise StoreError(f"store {self.path}: {message}") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path}: {exc}") from exc

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            applied = {r[0] for r in db.execute("SELECT version FROM schema_migrations")}
            if applied and max(applied) > LATEST_VERSION:
                raise StoreError(
                    f"store {self.path} has schema version {max(applied)}; this memvec "
                    f"knows up to {LATEST_VERSION}. Upgrade memvec."
                )
            if applied and max(applied) < LATEST_VERSION:  # an older memvec's home: say what changes
                log.warning(
                    "store %s: upgrading its schema from version %d to %d (CHANGELOG.md); a memvec "
                    "older than this one cannot open it afterwards",
                    self.path,
                    max(applied),
                    LATEST_VERSION,
                )
            for version, script in MIGRATIONS:
                if version in applied:
                    continue
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, format_time(datetime.now(UTC))))

    def close(self) -> None:
        with self._lock:
            self.checkpoint()
            self._db.close()

    def checkpoint(self) -> None:
        """TRUNCATE the WAL after copying it into the file: with secure_delete, a deleted record's
        text then survives in neither. Not inside a transaction (it would wait for itself); another
        process reading at that moment makes it partial, and the next one or the last close finishes."""
        if self.in_transaction():
            return
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                log.warning("checkpointing %s failed (the next delete or close tries again): %s", self.path, exc)

    def copy_to(self, path: Path) -> None:
        """SQLite's online backup: the committed state, WAL included, as one snapshot in a new file."""
        with self._lock, self._errors():
            target = sqlite3.connect(path)
            try:
                self._db.backup(target)
            finally:
                target.close()
        with open(path, "rb+") as copy:
            os.fsync(copy.fileno())

    def schema_version(self) -> int:
        return int(self._query("SELECT MAX(version) AS version FROM schema_migrations")[0]["version"])

    def storage_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())


def applied_migrations(path: Path) -> set[int]:
    """The schema versions a SQLite store file has, read without changing it (empty: no store yet)."""
    if not path.exists():
        return set()
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {int(row[0]) for row in db.execute("SELECT version FROM schema_migrations")}
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the schema of {path}: {exc}") from exc
