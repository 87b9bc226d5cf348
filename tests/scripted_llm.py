"""A scripted model behind litellm's own custom-provider interface (no network, no patching).

The agent calls `litellm.completion(model="scripted/...")` exactly as it would call a real
provider; litellm routes the call here, and each call answers with the next step of a script.
A step is a reply (`say`, `call`, `text`) or a function of the messages that returns one, so a
script can read tool results the way a model would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memvec.agent.llm import litellm_module

litellm = litellm_module()


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class Turn:
    content: str | None = None
    calls: list[ToolCall] = field(default_factory=list)


Step = Turn | Callable[[list[dict[str, Any]]], Turn]


def call(name: str, **arguments: Any) -> Turn:
    return Turn(calls=[ToolCall(name, arguments)])


def say(message: str) -> Turn:
    return call("send_message", message=message)


def last_tool_result(messages: list[dict[str, Any]]) -> dict[str, Any]:
    content = next(m["content"] for m in reversed(messages) if m["role"] == "tool")
    result: dict[str, Any] = json.loads(content)
    return result


class ScriptedLLM(litellm.CustomLLM):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.reset()

    def reset(self) -> None:
        self.script: list[Step] = []
        self.requests: list[list[dict[str, Any]]] = []
        self.summaries: list[list[dict[str, Any]]] = []
        self.summarizer: Callable[[list[dict[str, Any]]], str] | None = None

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("optional_params", {}).get("tools"):
            return self._summary(messages)
        self.requests.append(messages)
        step = self.script.pop(0) if self.script else say("(script exhausted)")
        turn = step(messages) if callable(step) else step
        tool_calls = [{"id": f"call_{len(self.requests)}_{i}", "type": "function",
                       "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                      for i, c in enumerate(turn.calls)]
        message = {"role": "assistant", "content": turn.content, "tool_calls": tool_calls or None}
        return litellm.ModelResponse(model=model, choices=[{"index": 0, "message": message,
                                                            "finish_reason": "tool_calls" if tool_calls else "stop"}])

    def _summary(self, messages: list[dict[str, Any]]) -> Any:
        self.summaries.append(messages)
        if self.summarizer is None:
            raise RuntimeError("this scripted model cannot summarize")
        return litellm.ModelResponse(model="scripted", choices=[{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": self.summarizer(messages)}}])


SCRIPTED = ScriptedLLM()
litellm.custom_provider_map = [{"provider": "scripted", "custom_handler": SCRIPTED}]
