"""The agent loop's tools: the memory tools of `memvec.tools` (those the loop offers) and
send_message, as OpenAI/litellm tool schemas, and their execution.

Every failure (unknown tool, bad arguments, unknown block, over the limit, budget spent) comes back
to the model as a readable tool error; nothing here raises into the loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memvec.errors import MemvecError
from memvec.memory import Memory
from memvec.tools import TOOLS, ToolContext, unknown_arguments
from memvec.types import describe_validation_error

SEARCH_TOOLS = frozenset(name for name, tool in TOOLS.items() if tool.page_in)
LOOP_TOOLS = {name: tool for name, tool in TOOLS.items() if tool.in_agent_loop}
DEFAULT_ROLES = ("user", "assistant")  # conversation_search without roles: not the loop's own tool records
HEARTBEAT = {"type": "boolean", "default": True, "description": "Continue thinking after this tool returns."}


class SendMessageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, description="The message shown to the user.")


SEND_MESSAGE = "Send a message to the user. Ends your turn."


def _schema(name: str, description: str, arguments: type[BaseModel], *, heartbeat: bool) -> dict[str, Any]:
    parameters = arguments.model_json_schema()
    parameters.pop("title", None)
    if heartbeat:  # MemGPT's chaining flag: a loop concern, not part of the tool's arguments
        parameters.setdefault("properties", {})["request_heartbeat"] = HEARTBEAT
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def tool_schemas() -> list[dict[str, Any]]:
    """The loop's memory tools (from `memvec.tools`) and send_message, as litellm tool schemas."""
    memory = [_schema(name, tool.description, tool.arguments, heartbeat=True) for name, tool in LOOP_TOOLS.items()]
    return [*memory, _schema("send_message", SEND_MESSAGE, SendMessageArgs, heartbeat=False)]


@dataclass
class ToolOutcome:
    content: str
    ok: bool = True
    heartbeat: bool = True
    sent_message: str | None = None
    page_in: bool = False


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(content=json.dumps({"error": message}), ok=False)


class ToolBox:
    def __init__(
        self,
        memory: Memory,
        agent: str,
        *,
        session_id: str | None,
        turn: int,
        in_context: list[int] | None = None,
        result_chars: int = 8_000,
    ) -> None:
        # messages already in the main context are not paged in again (the list grows during a reply)
        self.context = ToolContext(
            memory,
            agent,
            session_id=session_id,
            turn=turn,
            in_context=in_context if in_context is not None else [],
            default_roles=DEFAULT_ROLES,
            result_chars=result_chars,
        )

    def run(self, name: str, raw_arguments: str | None) -> ToolOutcome:
        if name not in LOOP_TOOLS and name != "send_message":
            return _error(f"unknown tool {name!r}; available: {', '.join([*LOOP_TOOLS, 'send_message'])}")
        try:
            raw = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            return _error(f"arguments of {name} are not valid JSON: {exc}")
        heartbeat = bool(raw.pop("request_heartbeat", True)) if isinstance(raw, dict) else True
        try:
            if name == "send_message":
                message = SendMessageArgs.model_validate(raw).message
                return ToolOutcome(json.dumps({"ok": True}), heartbeat=False, sent_message=message)
            tool = LOOP_TOOLS[name]
            if isinstance(raw, dict) and (problem := unknown_arguments(tool, raw)) is not None:
                return _error(problem)
            args = tool.arguments.model_validate(raw)
        except ValidationError as exc:
            return _error(f"bad arguments for {name}: {describe_validation_error(exc)}")
        try:
            content = tool.run(self.context, args)
        except (MemvecError, ValidationError, ValueError) as exc:
            text = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            return _error(f"{name} failed: {text}")
        return ToolOutcome(content, heartbeat=heartbeat, page_in=tool.page_in)
