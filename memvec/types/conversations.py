"""Letta's conversations: threads of one agent, each with a message history and context of its own
over the agent's shared memory (its core blocks and archival tier)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from memvec.types.agents import AgentState
from memvec.types.values import MAX_META_CHARS

CONVERSATION_ID_PATTERN = r"^conv-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


class Conversation(BaseModel):
    id: str = Field(pattern=CONVERSATION_ID_PATTERN, description="conv-<uuid>: its messages' session id too")
    agent: str = Field(description="the handle of the agent it belongs to")
    summary: str | None = Field(default=None, max_length=MAX_META_CHARS, description="what it is about (Letta's)")
    model: str | None = Field(default=None, max_length=200, description="a model for its replies, over the agent's")
    created_at: datetime
    updated_at: datetime
    last_message_at: datetime | None = Field(default=None, description="when a message was last sent to it")
    state: AgentState = Field(
        default_factory=AgentState, description="its own context: messages in it, recursive summary, turns"
    )
