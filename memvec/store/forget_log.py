"""The forget log of a SQLite home (`forgotten.jsonl` beside its store): one line per thing deleted or
forgotten on purpose (a passage version, a document, an agent, a block's history), with its id and a
SHA-256 of its content, never the content. It lives outside the store so that it outlives the store: a
backup taken before a forget still holds what was forgotten, and restoring it into this home (or with
`memvec restore --forget-log`) deletes again what the log says was forgotten after the backup was
taken, and says so (memvec.engine.forgetting).

Lines are appended after the deleting transaction commits (a rolled-back delete logs nothing), one
write each, and synced: two servers on one home append whole lines. A torn last line (a crash mid
write) is skipped when read."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from memvec.types import Record

FORGET_LOG = "forgotten.jsonl"
Kind = Literal["record", "document", "agent", "block_history"]


class Tombstone(BaseModel):
    at: datetime
    kind: Kind
    agent: str  # the owner: an agent, or a folder's `~<id>` for a folder's document
    ref: str = ""  # the record or document id, or the block's label ("" for every label / the agent)
    content_hash: str = ""  # SHA-256 of the text (records) or of the file (documents)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def append(path: Path, tombstones: Sequence[Tombstone]) -> None:
    if not tombstones:
        return
    data = "".join(t.model_dump_json() + "\n" for t in tombstones).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read(path: Path) -> list[Tombstone]:
    """The log's tombstones, oldest first; [] when there is none."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(Tombstone.model_validate(json.loads(line)))
        except (ValueError, ValidationError):  # a torn last line
            continue
    return out


def record_tombstones(records: Sequence[Record]) -> list[Tombstone]:
    """Tombstones of record versions deleted on purpose: their ids and a hash of their text."""
    now = datetime.now(UTC)
    return [
        Tombstone(at=now, kind="record", agent=r.agent, ref=str(r.id), content_hash=content_hash(r.text))
        for r in records
    ]
