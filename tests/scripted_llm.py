"""A scripted model behind litellm's own custom-provider interface (no network, no patching).

The agent calls `litellm.completion(model="scripted/...")` exactly as it would call a real
provider; litellm routes the call here, and each call answers with the next step of a script.
A step is a reply (`say`, `call`, `text`) or a function of the messages that returns one, so a
script can read tool results the way a model would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
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
        self.offered: list[list[str]] = []  # per step, the names of the tools the model was offered
        self.summarizer: Callable[[list[dict[str, Any]]], str] | None = None
        self.streamed = 0  # replies given as a stream
        self.stream_pause_s = 0.0
        self.fail_stream_after: int | None = None  # chunks before the stream breaks (None: never)

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("optional_params", {}).get("tools"):
            return self._summary(messages)
        self.offered.append([t["function"]["name"] for t in kwargs["optional_params"]["tools"]])
        turn, tool_calls = self._next(messages)
        message = {"role": "assistant", "content": turn.content, "tool_calls": tool_calls or None}
        return litellm.ModelResponse(
            model=model,
            choices=[{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        )

    def _next(self, messages: list[dict[str, Any]]) -> tuple[Turn, list[dict[str, Any]]]:
        self.requests.append(messages)
        step = self.script.pop(0) if self.script else say("(script exhausted)")
        turn = step(messages) if callable(step) else step
        tool_calls = [
            {
                "id": f"call_{len(self.requests)}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for i, c in enumerate(turn.calls)
        ]
        return turn, tool_calls

    def streaming(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Iterator[Any]:
        """The same step as `completion`, as a provider streams it: the text, then each tool call's
        arguments, in pieces of `STREAM_PIECE` characters (`stream_pause_s` between pieces)."""
        if not kwargs.get("optional_params", {}).get("tools"):
            raise RuntimeError("this scripted model streams only replies with tools")
        turn, tool_calls = self._next(messages)
        self.streamed += 1
        for piece in _pieces(turn.content or ""):
            yield self._chunk(text=piece)
        for index, call in enumerate(tool_calls):
            function = call["function"]
            yield self._chunk(
                tool_use={
                    "id": call["id"],
                    "type": "function",
                    "index": index,
                    "function": {"name": function["name"], "arguments": ""},
                }
            )
            for piece in _pieces(function["arguments"]):
                yield self._chunk(
                    tool_use={
                        "id": None,
                        "type": "function",
                        "index": index,
                        "function": {"name": None, "arguments": piece},
                    }
                )
        yield self._chunk(
            finished="tool_calls" if tool_calls else "stop",
            usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        )

    def _chunk(
        self,
        *,
        text: str = "",
        tool_use: dict[str, Any] | None = None,
        finished: str = "",
        usage: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        if self.stream_pause_s and not finished:
            time.sleep(self.stream_pause_s)
        if self.fail_stream_after is not None:
            if self.fail_stream_after <= 0:
                raise RuntimeError("the scripted provider dropped the stream")
            self.fail_stream_after -= 1
        return {
            "text": text,
            "tool_use": tool_use,
            "is_finished": bool(finished),
            "finish_reason": finished,
            "usage": usage,
            "index": 0,
        }

    def _summary(self, messages: list[dict[str, Any]]) -> Any:
        self.summaries.append(messages)
        if self.summarizer is None:
            raise RuntimeError("this scripted model cannot summarize")
        return litellm.ModelResponse(
            model="scripted",
            choices=[
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.summarizer(messages)},
                }
            ],
        )


STREAM_PIECE = 4


def _pieces(text: str) -> list[str]:
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]


SCRIPTED = ScriptedLLM()
litellm.custom_provider_map = [{"provider": "scripted", "custom_handler": SCRIPTED}]
