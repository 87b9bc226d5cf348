"""Index files on disk: atomic writes, checksums and the manifest that ties them to the store.

Layout under the memory home:
``index/<agent>/<tier>/{vector.npz, lexical.npz, sessions.npz, facts.npz, manifest.json}``.
Each file is written to a temporary name, fsynced and renamed over the old one; the manifest is
renamed last and records the SHA-256 of the files it describes, so a crash between renames is
seen as a checksum mismatch on the next load (and the index is rebuilt), never trusted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel, ValidationError

from memvec.errors import IndexFileError, OldIndexFormatError

FORMAT_VERSION = 4  # 4: facts.npz (the ranker's per-record facts)
VECTOR_FILE = "vector.npz"
LEXICAL_FILE = "lexical.npz"
SESSIONS_FILE = "sessions.npz"
FACTS_FILE = "facts.npz"
MANIFEST_FILE = "manifest.json"


class Manifest(BaseModel):
    format_version: int = FORMAT_VERSION
    agent: str
    tier: str
    model_id: str
    dim: int
    index_kind: str
    record_count: int
    last_change: int
    checksums: dict[str, str]
    bm25_k1: float
    bm25_b: float
    context_weight: float
    index_dates: bool
    vector_context: bool


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` then fsync and rename `tmp` over `path`."""
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def directory_lock(directory: Path, *, shared: bool = False) -> Iterator[None]:
    """An advisory lock so two writers never interleave their renames (exclusive), and a reader
    never sees one save's files with another's manifest (shared). Per open file, so it holds
    between threads of one process as between processes."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def write_manifest(directory: Path, manifest: Manifest) -> None:
    text = manifest.model_dump_json(indent=2)
    write_atomically(directory / MANIFEST_FILE, lambda tmp: tmp.write_text(text))


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_FILE
    try:
        manifest = Manifest.model_validate(json.loads(path.read_text()))
    except FileNotFoundError as exc:
        raise IndexFileError(f"no manifest at {path}") from exc
    except (OSError, ValueError, ValidationError) as exc:
        raise IndexFileError(f"unreadable manifest {path}: {exc}") from exc
    if manifest.format_version < FORMAT_VERSION:
        raise OldIndexFormatError(f"index format {manifest.format_version} (this memvec writes {FORMAT_VERSION})")
    if manifest.format_version != FORMAT_VERSION:
        raise IndexFileError(f"manifest {path} has format {manifest.format_version}, expected {FORMAT_VERSION}")
    return manifest


def check_files(directory: Path, manifest: Manifest) -> None:
    """Raise IndexFileError unless every file exists with the checksum the manifest recorded."""
    for name, expected in manifest.checksums.items():
        path = directory / name
        if not path.exists():
            raise IndexFileError(f"index file {path} is missing")
        actual = sha256_file(path)
        if actual != expected:
            raise IndexFileError(f"index file {path} is corrupt (checksum {actual[:12]} != {expected[:12]})")
