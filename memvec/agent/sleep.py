"""Opt-in scheduled consolidation for `memvec serve --consolidate-every MINUTES`: a background thread
that, every period, consolidates each agent that has a model and messages since its last run. A run
that fails (the model is down, answers garbage) is logged and changes nothing; the next period
tries again."""

from __future__ import annotations

import logging
import threading
import uuid

from memvec.agent.consolidate import consolidate
from memvec.errors import MemvecError
from memvec.memory import Memory
from memvec.telemetry.logs import REQUEST_ID

log = logging.getLogger("memvec.consolidate")


class SleepSchedule:
    def __init__(self, memory: Memory, every_s: float) -> None:
        if every_s <= 0:
            raise ValueError("the consolidation period must be positive")
        self.memory = memory
        self.every_s = every_s
        self.runs = 0  # runs written (for /health-style reporting and tests)
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memvec-consolidate", daemon=True)

    def start(self) -> SleepSchedule:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the run in progress (if any) finishes: a run is never cut in half."""
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            REQUEST_ID.set(f"consolidation-{uuid.uuid4().hex[:12]}")  # this thread's lines, per round
            self.consolidate_all()

    def consolidate_all(self) -> None:
        for agent in self.memory.agents():
            if self._stop.is_set():
                return
            try:
                settings, _ = self.memory.get_agent(agent)
                if settings.model and consolidate(self.memory, agent) is not None:
                    self.runs += 1
            except MemvecError as exc:
                self.failures += 1
                log.warning("consolidating %s failed, nothing written: %s", agent, exc)
