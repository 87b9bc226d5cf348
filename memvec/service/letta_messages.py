"""Records and reply events as Letta messages: what listing an agent's messages and answering a
send show (Letta's message types, with memvec's citation alongside a stored one)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from memvec.agent.events import Event
from memvec.agent.identity import return_otid
from memvec.types import Record
from memvec.types.messages import MessageMeta, tool_return_of

SYSTEM_MESSAGE_ID = 0  # the system message's id in a listing: record ids start at 1, so it comes first


def shown(event: Event, *, use_assistant_message: bool) -> bool:
    """Whether a client sees the event: a send_message call shows as the assistant message it sent
    (Letta's default) or, without `use_assistant_message`, as the tool call and its return."""
    if event.name == "send_message" and event.kind in ("tool_call", "tool_return"):
        return not use_assistant_message
    if event.kind == "assistant" and event.sent_by_tool:
        return use_assistant_message
    return True


SENT = '{"ok": true}'  # what send_message returns to the model


def record_messages(
    record: Record, meta: MessageMeta | None, *, use_assistant_message: bool = True
) -> list[dict[str, Any]]:
    """A recall record as Letta lists it: a tool call as its call and its return, a message the agent
    sent with send_message as its assistant message (or, without `use_assistant_message`, as that
    call and its return), anything else as the one message of its role."""
    call = meta.tool_call if meta is not None else None
    if call is None or (record.role == "assistant" and use_assistant_message):
        return [record_message(record, meta)]
    base = _base(record, meta)
    made = {"name": call.name, "arguments": call.arguments, "tool_call_id": call.id}
    returned = SENT if call.name == "send_message" else tool_return_of(record.text, call)
    return [
        {**base, "message_type": "tool_call_message", "tool_call": made},
        {
            **base,
            "otid": return_otid(base["otid"]) if base.get("otid") else None,
            "message_type": "tool_return_message",
            "tool_return": returned,
            "name": call.name,
            "status": call.status,
            "tool_call_id": call.id,
        },
    ]


def records_as_messages(
    records: list[Record], metas: dict[int, MessageMeta], *, use_assistant_message: bool = True
) -> list[dict[str, Any]]:
    """Recall records (in time order) as Letta lists them: each as its messages, a step's calls grouped."""
    shown_as = {"use_assistant_message": use_assistant_message}
    return grouped_by_step([m for r in records for m in record_messages(r, metas.get(r.id), **shown_as)])


def grouped_by_step(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls one model call made together as Letta lists parallel calls: one tool_call_message
    with every call (`tool_calls`), then one tool_return_message with every return (`tool_returns`);
    the first call and return stay in `tool_call` and `tool_return` for older clients."""
    out: list[dict[str, Any]] = []
    for message in messages:
        kind, step = message.get("message_type"), message.get("step_id")
        calls = out[-2] if len(out) >= 2 else {}
        if kind == "tool_call_message" and step and calls.get("message_type") == kind and calls.get("step_id") == step:
            calls["tool_calls"].append(message["tool_call"])
            continue
        if (
            kind == "tool_return_message"
            and step
            and out
            and out[-1].get("step_id") == step
            and "tool_returns" in out[-1]
        ):
            out[-1]["tool_returns"].append(_tool_return(message))
            continue
        if kind == "tool_call_message":
            message = {**message, "tool_calls": [message["tool_call"]]}
        elif kind == "tool_return_message":
            message = {**message, "tool_returns": [_tool_return(message)]}
        out.append(message)
    return out


def _tool_return(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool_call_id": message["tool_call_id"],
        "status": message["status"],
        "tool_return": message["tool_return"],
        "stdout": message.get("stdout"),
        "stderr": message.get("stderr"),
    }


def _base(record: Record, meta: MessageMeta | None) -> dict[str, Any]:
    identity = meta.model_dump(include={"otid", "run_id", "step_id"}) if meta is not None else {}
    return {
        "id": str(record.id),
        "date": record.created_at.isoformat(),
        "role": record.role,
        "citation": record.citation.model_dump(),
        "untrusted": record.untrusted,
        **identity,
    }


def record_message(record: Record, meta: MessageMeta | None = None) -> dict[str, Any]:
    """A recall record as the Letta message of its role, with memvec's citation alongside."""
    base = _base(record, meta)
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
    base = {"id": identity, "date": event.at.isoformat(), "otid": event.otid, "run_id": event.run_id}
    base["step_id"] = event.step_id
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


def stop_message(reason: str) -> dict[str, Any]:
    return {"message_type": "stop_reason", "stop_reason": reason}


def usage_message(model_calls: int, prompt_tokens: int = 0, completion_tokens: int = 0) -> dict[str, Any]:
    """Letta's usage statistics: steps, and the tokens the provider counted for the reply's steps."""
    return {
        "message_type": "usage_statistics",
        "step_count": model_calls,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
