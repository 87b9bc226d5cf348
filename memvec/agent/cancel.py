"""Whether a client cancelled the run an agent's reply belongs to (Letta's `messages/cancel`).

The loop asks before and after each model call; while a model's answer streams it asks for every
chunk it would relay, so a cancelled answer stops going out mid-stream. Those asks read the store at
most every `every_s`: a token stream must not cost a store read per token. Once seen, a cancel stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from memvec.memory import Memory


class CancelWatch:
    def __init__(
        self,
        memory: Memory,
        run_id: str | None,
        *,
        every_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._memory, self._run_id, self._every_s, self._clock = memory, run_id, every_s, clock
        self._seen = False
        self._read_at: float | None = None

    def cancelled(self, *, fresh: bool = False) -> bool:
        """`fresh`: read the store now (around a model call); else at most every `every_s`."""
        if self._seen or self._run_id is None:
            return self._seen
        now = self._clock()
        if fresh or self._read_at is None or now - self._read_at >= self._every_s:
            self._seen = self._memory.runs().cancelled(self._run_id)
            # after a fresh read (before a model call) the call's first chunk reads again
            self._read_at = None if fresh else now
        return self._seen
