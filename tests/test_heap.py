"""Freed heap memory goes back to the OS after a big index comes or goes (glibc only)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memvec.index.heap import _malloc_trim

SCRIPT = """
import numpy as np
from memvec.index.heap import BIG_INDEX, release_freed_memory

def rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))

blocks = [np.ones(8_000) for _ in range(6_000)]  # ~380 MB in 64 KB heap blocks
held = rss()
kept = blocks[1::2]  # freed blocks between live ones: glibc cannot shrink the heap by itself
del blocks
release_freed_memory(BIG_INDEX - 1)  # a small index: left alone
small = rss()
release_freed_memory(BIG_INDEX)
print(held, small, rss())
"""


@pytest.mark.skipif(_malloc_trim() is None, reason="no glibc malloc_trim here")
@pytest.mark.slow
def test_big_index_changes_return_freed_memory_and_small_ones_do_not() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout
    held, small, trimmed = (int(x) for x in out.split())
    assert small > held - 50 * 2**20  # glibc kept the freed half
    assert trimmed < small - 120 * 2**20  # malloc_trim handed it back
