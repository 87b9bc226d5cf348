"""Letta's identity for the messages of one reply: the run (the reply), the step (one model call)
and each message's otid, which ends in its index within its step, as Letta's clients check. A
send_message call and the assistant message it sends are one message (one otid); a tool's return is
a message of its own (index 0)."""

from __future__ import annotations

import uuid

from memvec.agent.events import Event
from memvec.types.messages import MessageMeta, ToolCallMeta


def new_otid() -> str:
    """An otid for a message with nothing before it in its step (a user's message without one)."""
    return f"otid-{uuid.uuid4().hex}-0"


def return_otid(call_otid: str) -> str:
    """The otid of a tool call's return: derived from the call's, index 0 (a message of its own)."""
    return f"{call_otid}-return-0"


def event_key(event: Event) -> str:
    """Which message of its step an event is part of (the chunks of one message share it)."""
    if event.kind == "reasoning":
        return "reasoning"
    if event.kind == "assistant":
        return "send_message" if event.sent_by_tool else "assistant"
    if event.name == "send_message":
        return "send_message"
    return event.tool_call_id or event.name or event.kind


class MessageIds:
    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id or f"run-{uuid.uuid4()}"
        self.step_id: str | None = None
        self._base = uuid.uuid4().hex
        self._parts: dict[str, str] = {}

    def new_step(self) -> None:
        self.step_id, self._base, self._parts = f"step-{uuid.uuid4()}", uuid.uuid4().hex, {}

    def otid(self, key: str) -> str:
        if key not in self._parts:
            self._parts[key] = f"otid-{self._base}-{len(self._parts)}"
        return self._parts[key]

    def stamp(self, event: Event) -> Event:
        otid = self.otid(event_key(event))
        if event.kind == "tool_return":
            otid = return_otid(otid)
        return event.model_copy(update={"otid": otid, "run_id": self.run_id, "step_id": self.step_id})

    def meta(self, key: str, call: ToolCallMeta | None = None) -> MessageMeta:
        """What is stored with a message of this step."""
        return MessageMeta(otid=self.otid(key), run_id=self.run_id, step_id=self.step_id, tool_call=call)
