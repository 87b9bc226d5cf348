"""The reply's own messages to the model (its tool traffic, kept for the reply that made it): how
a step's calls are written back, and how they are thinned when the window is full."""

from __future__ import annotations

import json
from typing import Any

from memvec.agent.context import MainContext, Message


def elide_tool_results(context: MainContext, scratch: list[Message], window: int) -> int:
    """When evicting messages was not enough, blank this reply's oldest tool results (the model can
    search again). Returns the token count."""
    tokens = context.tokens(scratch)
    for message in scratch:
        if tokens <= window:
            break
        if message["role"] == "tool" and not message["content"].startswith("[elided"):
            message["content"] = "[elided to fit the context window; call the tool again if needed]"
            tokens = context.tokens(scratch)
    return tokens


def assistant_message(content: Any, calls: list[Any]) -> Message:
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"},
            }
            for c in calls
        ],
    }


def parsed_arguments(raw: str | None) -> dict[str, Any] | None:
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None
