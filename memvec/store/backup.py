"""A consistent copy of a live SQLite store, with a manifest, and its way back into an empty home.

Copying `store.sqlite3` by hand loses what still sits in its write-ahead log (often everything
recent); SQLite's online backup API copies the committed state as one snapshot while servers keep
writing. Indexes are not copied: they are derived, and a restore rebuilds them from the store.
A PostgreSQL store is backed up by PostgreSQL's own tools (`pg_dump`, docs/operations.md)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memvec.errors import InvalidInputError, StoreError
from memvec.store.blocks import SHARED_OWNER_PREFIX
from memvec.store.sqlite import SQLiteStore

MANIFEST_FILE = "backup.json"
# agents as `memvec agent list` counts them: with settings, core blocks or records (Store.agents)
AGENT_COUNT = (
    "SELECT COUNT(*) FROM (SELECT agent FROM records UNION SELECT agent FROM core_blocks "
    "WHERE agent NOT LIKE ? UNION SELECT name FROM agents)"
)
STORE_COPY = "store.sqlite3"


class BackupManifest(BaseModel):
    """What a backup holds, written beside it and checked before a restore."""

    memvec_version: str
    schema_version: int
    model_id: str | None
    created_at: datetime
    agents: int
    records: int
    bytes: int
    sha256: str


def backup_store(store: object, dest: Path, *, memvec_version: str, model_key: str) -> BackupManifest:
    """Copy the store into the folder `dest` (new, or empty) and write its manifest last, so a
    folder with a manifest holds a whole copy."""
    if not isinstance(store, SQLiteStore):
        raise InvalidInputError(
            "memvec backup copies SQLite homes; back a PostgreSQL store up with pg_dump (docs/operations.md)"
        )
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInputError(f"backup destination {dest} must be a new or empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    copy = dest / STORE_COPY
    store.copy_to(copy)
    manifest = BackupManifest(
        memvec_version=memvec_version,
        created_at=datetime.now(UTC),
        bytes=copy.stat().st_size,
        sha256=_sha256(copy),
        **_contents(copy, model_key),
    )
    _write_synced(dest / MANIFEST_FILE, manifest.model_dump_json(indent=1))
    return manifest


def read_backup(src: Path) -> BackupManifest:
    """The backup's manifest, after checking its copy is whole (size and checksum)."""
    try:
        manifest = BackupManifest.model_validate_json((src / MANIFEST_FILE).read_text())
    except FileNotFoundError:
        raise InvalidInputError(f"{src} is not a memvec backup: no {MANIFEST_FILE}") from None
    except ValueError as exc:
        raise InvalidInputError(f"{src / MANIFEST_FILE} is not a backup manifest: {exc}") from None
    copy = src / STORE_COPY
    if not copy.is_file() or copy.stat().st_size != manifest.bytes or _sha256(copy) != manifest.sha256:
        raise InvalidInputError(f"{copy} does not match its manifest (size or sha256): the backup is damaged")
    return manifest


def restore_store(src: Path, store_path: Path) -> BackupManifest:
    """Put a checked backup where a home keeps its store; refuses a home that already holds one."""
    manifest = read_backup(src)
    if any(store_path.parent.glob(store_path.name + "*")):
        raise InvalidInputError(f"{store_path} exists: restore goes into an empty home (move it away first)")
    store_path.parent.mkdir(parents=True, exist_ok=True)
    partial = store_path.with_name(store_path.name + ".restoring")
    source, target = sqlite3.connect(src / STORE_COPY), sqlite3.connect(partial)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    os.replace(partial, store_path)  # a crash leaves no half store where the home looks for one
    return manifest


def _contents(copy: Path, model_key: str) -> dict[str, Any]:
    db = sqlite3.connect(copy)
    try:
        schema = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        model = db.execute("SELECT value FROM meta WHERE key = ?", (model_key,)).fetchone()
        agents = db.execute(AGENT_COUNT, (f"{SHARED_OWNER_PREFIX}%",)).fetchone()[0]
        records = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.Error as exc:
        raise StoreError(f"the copy {copy} cannot be read back: {exc}") from exc
    finally:
        db.close()
    return {"schema_version": schema, "model_id": model[0] if model else None, "agents": agents, "records": records}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_synced(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
