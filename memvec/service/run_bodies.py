"""Letta's Run as the routes show it (memvec.types.runs.AgentRun, with the agent's Letta id)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from memvec.types.runs import AgentRun, RunStatus


class RunOut(BaseModel):
    id: str
    agent_id: str
    status: RunStatus
    background: bool
    created_at: datetime
    completed_at: datetime | None = None
    stop_reason: str | None = None
    total_duration_ns: int | None = Field(default=None, description="from its start to its end")
    metadata: dict[str, Any] = Field(default_factory=dict, description="`error`: why it failed")

    @classmethod
    def of(cls, run: AgentRun, agent_id: str) -> RunOut:
        took = (run.completed_at - run.created_at).total_seconds() if run.completed_at else None
        return cls(
            id=run.id,
            agent_id=agent_id,
            status=run.status,
            background=run.background,
            created_at=run.created_at,
            completed_at=run.completed_at,
            stop_reason=run.stop_reason,
            total_duration_ns=int(took * 1e9) if took is not None else None,
            metadata={"error": run.error} if run.error else {},
        )


class RunUsageOut(BaseModel):
    step_count: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
