"""The SQLite default under faults: another writer holding the lock past the timeout, and a full
disk (SQLite's SQLITE_FULL, produced with max_page_count), give clear errors and lose nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.errors import StoreError, StoreUnavailableError
from memvec.store import STORE_FILE
from memvec.types import NewRecord, Tier
from tests.conftest import CLEAN_VERIFY


def test_a_locked_store_is_unavailable_and_nothing_is_lost(home: Path) -> None:
    with Memory.open(home, embedder=HashingEmbedder(32), store_timeout=0.3) as mem:
        kept = mem.archival("a").insert("written before the lock").record.id
        other = sqlite3.connect(home / STORE_FILE, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(StoreUnavailableError, match="locked by another writer"):
            mem.archival("a").insert("refused while locked")
        other.execute("ROLLBACK")
        other.close()
        assert mem.archival("a").insert("written after the lock").created
        assert [h.id for h in mem.archival("a").search("written before the lock", k=1, mode="bm25")] == [kept]
        assert mem.archival("a").count() == 2
        assert mem.verify().model_dump() == CLEAN_VERIFY


def test_a_full_disk_refuses_the_batch_whole_and_keeps_the_rest(home: Path) -> None:
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        for i in range(20):
            mem.archival("a").insert(f"kept note {i}")
        pages = mem._store._db.execute("PRAGMA page_count").fetchone()[0]  # type: ignore[attr-defined]
        mem._store._db.execute(f"PRAGMA max_page_count = {pages + 1}")  # type: ignore[attr-defined]
        big = [f"{'x' * 3000} overflow {i}" for i in range(50)]
        with pytest.raises(StoreError, match="disk is full"):
            mem.archival("a").insert_many([_record(text) for text in big])
        assert mem.archival("a").count() == 20, "the failed batch left nothing behind"
        mem._store._db.execute("PRAGMA max_page_count = 1073741823")  # type: ignore[attr-defined]
        assert mem.archival("a").insert("space again").created
        assert mem.archival("a").count() == 21
        assert mem.verify().model_dump() == CLEAN_VERIFY


def _record(text: str) -> NewRecord:
    return NewRecord(agent="a", tier=Tier.ARCHIVAL, text=text)
