"""What a Letta client is shown of a recall message beyond its text (Letta's message fields)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ToolCallMeta(BaseModel):
    """The tool call a recall message records (its text is the call and its return)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=64)
    arguments: str = Field(max_length=200_000)
    id: str = Field(max_length=256, description="the model's id for the call")
    status: Literal["success", "error"] = "success"


class MessageMeta(BaseModel):
    """Letta's identity of a message: `otid` (the client's, for what it sent; made by the agent loop
    for its own, ending in the message's index within its step), the run (one send) and step (one
    model call) it belongs to, and the tool call it records."""

    model_config = ConfigDict(extra="forbid")

    otid: str | None = Field(default=None, max_length=256)
    run_id: str | None = Field(default=None, max_length=64)
    step_id: str | None = Field(default=None, max_length=64)
    tool_call: ToolCallMeta | None = None


def tool_row(name: str, arguments: str, content: str) -> str:
    """How a tool call and its return are stored in the recall tier (one record, cut to 8,000 chars)."""
    return f"{name}({arguments}) -> {content}"[:8000]


def tool_return_of(text: str, call: ToolCallMeta) -> str:
    """The return part of a stored tool call (memvec.types.messages.tool_row); the whole text when it
    does not start with the call (cut, or written before calls were kept apart)."""
    head = f"{call.name}({call.arguments}) -> "
    return text[len(head) :] if text.startswith(head) else text
