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
        """Completed, unless it was cancelled meanwhile (then it stays cancelled, with its usage)."""
        now = self._engine.store.clock()
        if self.get(run_id).status == "cancelled":
            return self._update(run_id, completed_at=now, stop_reason="cancelled", usage=usage)
        return self._update(run_id, status="completed", completed_at=now, stop_reason=stop_reason, usage=usage)

    def cancel(self, agent: str, run_ids: Sequence[str] = ()) -> builtins.list[str]:
        """Cancel the agent's runs still going (those of `run_ids` only, when given): each stops at its
        next step; what it wrote stays. Returns the ids cancelled."""
        going = [r for r in self.list([agent], limit=1000) if r.status in ("created", "running")]
        chosen = [r for r in going if not run_ids or r.id in run_ids]
        for run in chosen:
            self._update(run.id, status="cancelled", stop_reason="cancelled")
        return [r.id for r in chosen]

    def cancelled(self, run_id: str) -> bool:
        run = self._engine.store.agent_run(run_id)
        return run is not None and run.status == "cancelled"

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
