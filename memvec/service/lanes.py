"""The search lane: a server's searches run on a few threads of their own, one search per core.

A sync FastAPI route runs on the shared worker pool (40 threads): eight concurrent searches there are
eight threads taking turns at the interpreter's lock, each search's model, FAISS and SQLite calls a
point where another thread wakes, runs a little and is put back: CPU spent on taking turns, not on
searching (benchmarks/ceiling.py measures a served search beside the same one in process). Here
concurrent searches queue and
each lane thread runs one to its end; as many threads as the cores this process may use
(``MEMVEC_THREADS``, memvec.embed.threads), so a lone search still gets the whole machine's model
threads and a busy server runs as many searches at once as it has cores for. Each search keeps the
caller's context (OpenTelemetry's current span, the request id of the log lines).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from memvec.embed.threads import thread_count

P = ParamSpec("P")
T = TypeVar("T")


class SearchLane:
    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or thread_count()
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args, **kwargs)` on a lane thread, in the caller's context; the caller waits without a thread."""
        if self._pool is None:  # made by the first search, inside the server's process
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="memvec-search")
        call = functools.partial(contextvars.copy_context().run, work, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
