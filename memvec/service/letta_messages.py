"""Records and reply events as Letta messages: what listing an agent's messages and answering a
send show (Letta's message types, with memvec's citation alongside a stored one)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from memvec.agent.events import Event
from memvec.types import Record

SYSTEM_MESSAGE_ID = 0  # the system message's id in a listing: record ids start at 1, so it comes first


def shown(event: Event, *, use_assistant_message: bool) -> bool:
    """Whether a client sees the event: a send_message call shows as the assistant message it sent
    (Letta's default) or, without `use_assistant_message`, as the tool call and its return."""
    if event.name == "send_message" and event.kind in ("tool_call", "tool_return"):
        return not use_assistant_message
    if event.kind == "assistant" and event.sent_by_tool:
        return use_assistant_message
    return True


def record_message(record: Record) -> dict[str, Any]:
    """A recall record as the Letta message of its role, with memvec's citation alongside."""
    base: dict[str, Any] = {
        "id": str(record.id),
        "date": record.created_at.isoformat(),
        "role": record.role,
        "citation": record.citation.model_dump(),
        "untrusted": record.untrusted,
    }
    if record.role == "assistant":
        return {**base, "message_type": "assistant_message", "content": record.text}
    if record.role == "system":
        return {**base, "message_type": "system_message", "content": record.text}
    if record.role == "tool":
        return {
            **base,
            "message_type": "tool_return_message",
            "tool_return": record.text,
            "status": "success",
            "tool_call_id": f"record-{record.id}",
        }
    named = {} if record.role == "user" else {"name": record.role}
    return {**base, "message_type": "user_message", "content": record.text, **named}


def event_message(event: Event) -> dict[str, Any]:
    """One step of a reply as a Letta message (ids of stored steps are their record ids; the chunks of
    one streamed message share its stream id)."""
    identity = str(event.record_id) if event.record_id else event.stream_id or f"{event.kind}-{uuid.uuid4()}"
    base = {"id": identity, "date": event.at.isoformat()}
    if event.kind == "reasoning":
        return {**base, "message_type": "reasoning_message", "reasoning": event.text}
    if event.kind == "tool_call":
        return {
            **base,
            "message_type": "tool_call_message",
            "tool_call": {"name": event.name, "arguments": event.arguments, "tool_call_id": event.tool_call_id},
        }
    if event.kind == "tool_return":
        return {
            **base,
            "message_type": "tool_return_message",
            "tool_return": event.text,
            "name": event.name,
            "status": "success" if event.ok else "error",
            "tool_call_id": event.tool_call_id,
            "stdout": [event.stdout] if event.stdout else None,
            "stderr": [event.stderr] if event.stderr else None,
        }
    if event.kind == "approval_request":
        call = {"name": event.name, "arguments": event.arguments, "tool_call_id": event.tool_call_id}
        return {**base, "message_type": "approval_request_message", "tool_call": call}
    return {**base, "message_type": "assistant_message", "content": event.text}


def system_message(prompt: str, created_at: datetime | None) -> dict[str, Any]:
    """The agent's system prompt as the first message of a listing (Letta lists its system message)."""
    return {
        "id": str(SYSTEM_MESSAGE_ID),
        "date": (created_at or datetime.now(UTC)).isoformat(),
        "message_type": "system_message",
        "role": "system",
        "content": prompt,
    }
