"""Letta's runs: one send to an agent (answered, streamed, or run in the background), and how it ended."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

RunStatus = Literal["created", "running", "completed", "failed", "cancelled"]


class AgentRun(BaseModel):
    id: str = Field(max_length=64, description="run-<uuid>: every message the send wrote carries it")
    agent: str
    status: RunStatus
    background: bool = Field(description="sent with messages/async: the caller did not wait for it")
    created_at: datetime
    completed_at: datetime | None = None
    stop_reason: str | None = Field(default=None, description="Letta's stop reason, once it ended")
    usage: dict[str, int] = Field(default_factory=dict, description="step_count and tokens, once it ended")
    error: str | None = Field(default=None, description="why it failed")
    message_types: list[str] | None = Field(
        default=None, description="the message types its messages are shown as (Letta's include_return_message_types)"
    )
