"""What a client is shown of a reply, in order (Letta's message types map onto these kinds)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field


class Event(BaseModel):
    """One step of a reply as a client shows it. A streamed reply also sends `partial` chunks: pieces
    of one message's text that share its `stream_id`, before (or instead of) the whole event."""

    kind: Literal["reasoning", "tool_call", "tool_return", "assistant", "approval_request"]
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    text: str = ""
    name: str | None = None
    arguments: str | None = None
    tool_call_id: str | None = None
    ok: bool = True
    record_id: int | None = Field(default=None, description="the recall record that stores it, if one does")
    stream_id: str | None = Field(default=None, description="the id every chunk of one streamed message shares")
    partial: bool = Field(default=False, description="a chunk of a streamed message, not a whole event")
    sent_by_tool: bool = Field(default=False, description="an assistant message the model sent with send_message")
    stdout: str = Field(default="", description="a custom tool's printing")
    stderr: str = Field(default="", description="a custom tool's error output (its traceback when it failed)")
    # Letta's identity of the message (memvec.agent.identity)
    otid: str | None = Field(default=None, description="ends in the message's index within its step")
    run_id: str | None = Field(default=None, description="the reply it is part of")
    step_id: str | None = Field(default=None, description="the model call it is part of")
