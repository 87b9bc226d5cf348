"""Letta's runs (memvec.types.runs): a send's run is written when it starts, and again when it ends
with its stop reason and usage, or its error."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Sequence
from typing import Any

from memvec.engine.engine import Engine
from memvec.errors import NotFoundError
from memvec.types.runs import AgentRun, RunStatus


class AgentRuns:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def start(
        self,
        agent: str,
        *,
        background: bool,
        status: RunStatus = "running",
        message_types: builtins.list[str] | None = None,
    ) -> AgentRun:
        now = self._engine.store.clock()
        run = AgentRun(
            id=f"run-{uuid.uuid4()}",
            agent=agent,
            status=status,
            background=background,
            created_at=now,
            message_types=message_types,
        )
        self._engine.store.put_agent_run(run)
        return run

    def _update(self, run_id: str, **changes: Any) -> AgentRun:
        run = self.get(run_id).model_copy(update=changes)
        self._engine.store.put_agent_run(run)
        return run

    def running(self, run_id: str) -> AgentRun:
        return self._update(run_id, status="running")

    def finish(self, run_id: str, *, stop_reason: str, usage: dict[str, int]) -> AgentRun:
        now = self._engine.store.clock()
        return self._update(run_id, status="completed", completed_at=now, stop_reason=stop_reason, usage=usage)

    def fail(self, run_id: str, error: str) -> AgentRun:
        now = self._engine.store.clock()
        return self._update(run_id, status="failed", completed_at=now, stop_reason="error", error=error[:2000])

    def get(self, run_id: str) -> AgentRun:
        run = self._engine.store.agent_run(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id!r}")
        return run

    def list(self, agents: Sequence[str], *, limit: int = 100, newest_first: bool = True) -> builtins.list[AgentRun]:
        return self._engine.store.agent_runs(agents, limit=limit, newest_first=newest_first)

    def message_ids(self, run_id: str) -> builtins.list[int]:
        """The recall messages the run wrote, in the order written."""
        return self._engine.store.run_message_ids(run_id)
