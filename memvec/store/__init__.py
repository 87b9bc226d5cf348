"""The transactional store; SQLite under the memory home by default."""

from __future__ import annotations

from pathlib import Path

from memvec.store.base import Change, EmbeddingBatch, PreparedRecord, Store
from memvec.store.sqlite import SQLiteStore

STORE_FILE = "store.sqlite3"


def open_store(home: Path) -> Store:
    return SQLiteStore(home / STORE_FILE)


__all__ = ["STORE_FILE", "Change", "EmbeddingBatch", "PreparedRecord", "SQLiteStore", "Store", "open_store"]
