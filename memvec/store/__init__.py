"""The transactional store: SQLite under the memory home by default, PostgreSQL for shared homes."""

from __future__ import annotations

from pathlib import Path

from memvec.errors import InvalidInputError
from memvec.store.base import Change, EmbeddingBatch, PreparedRecord, Store
from memvec.store.sqlite import SQLiteStore

STORE_FILE = "store.sqlite3"


def open_store(home: Path, url: str | None = None, *, timeout: float = 3.0) -> Store:
    """`url` None: SQLite in `home`; `postgresql://...`: a shared PostgreSQL database. `timeout`:
    seconds an operation may wait for the database before `StoreUnavailableError`."""
    if url is None:
        return SQLiteStore(home / STORE_FILE, timeout=timeout)
    if url.startswith(("postgresql://", "postgres://")):
        from memvec.store.postgres import PostgresStore

        return PostgresStore(url, timeout=timeout)
    raise InvalidInputError(f"unsupported store URL {url!r}: use postgresql://... or none for SQLite")


__all__ = ["STORE_FILE", "Change", "EmbeddingBatch", "PreparedRecord", "SQLiteStore", "Store", "open_store"]
