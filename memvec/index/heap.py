"""Give freed heap memory back to the operating system after a big index comes or goes.

Loading an index reads its files into temporary buffers (the npz arrays, FAISS's serialized blob)
that are freed once the index is built, and unloading frees the index itself; glibc keeps such
memory in the process for reuse, so a server loading and unloading indexes under a budget would
show an RSS well above what its loaded indexes hold (~70 bytes per record after loading a 100k
tier, measured). ``malloc_trim`` hands it back. Small indexes are left alone: their few freed
kilobytes are reused at once, and trimming costs a walk over the heap. Without glibc (macOS, musl)
this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache
from typing import Any

BIG_INDEX = 10_000  # records


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def release_freed_memory(records: int) -> None:
    """Return freed heap pages to the OS if an index of `records` records was just loaded or dropped."""
    trim = _malloc_trim()
    if trim is not None and records >= BIG_INDEX:
        trim(0)
