"""A model's streamed deltas as partial reply events, the way Letta streams tokens.

The model's own text in a step is its reasoning (or, in a step without tool calls, its reply): it is
relayed as `reasoning` chunks. What the user reads is the `message` argument of `send_message`, which
arrives as JSON argument fragments: it is decoded as it grows and relayed as `assistant` chunks. Every
chunk of one message shares a `stream_id`; a client joins them in order.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from memvec.agent.events import Event

_MESSAGE_KEY = re.compile(r'"message"\s*:\s*"')


def decoded_prefix(fragment: str) -> tuple[str, bool]:
    """The JSON string body `fragment` (after its opening quote) decoded as far as it is complete,
    and whether its closing quote has arrived."""
    end, escaped = len(fragment), False
    for index, char in enumerate(fragment):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            end = index
            break
    closed = end < len(fragment)
    body = fragment[:end]
    while body:  # a fragment may stop inside an escape (\\ or \\u12): decode what is whole
        try:
            return json.loads(f'"{body}"'), closed
        except json.JSONDecodeError:
            body = body[:-1]
    return "", closed


class TokenRelay:
    """Turns one step's deltas into partial events for `emit` (see the module)."""

    def __init__(self, emit: Callable[[Event], None], *, text_is_answer: bool = False) -> None:
        """`text_is_answer`: the model's text is its answer (it has no send_message to answer with), so
        it streams as the assistant message, not as reasoning."""
        self.emit, self.text_is_answer = emit, text_is_answer
        self.reasoning_id = f"reasoning-{uuid.uuid4()}"
        self.text_id = f"assistant-{uuid.uuid4()}"
        self.relayed_text = False
        self.arguments: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.relayed: dict[int, str] = {}  # per tool call: the message text relayed so far
        self.assistant_ids: dict[int, str] = {}

    @property
    def relayed_message(self) -> bool:
        """Whether a `send_message` text went out in chunks (its whole event then need not)."""
        return bool(self.relayed)

    def feed(self, delta: Any) -> None:
        content = getattr(delta, "content", None)
        if content and self.text_is_answer:
            self.emit(Event(kind="assistant", text=content, stream_id=self.text_id, partial=True))
            self.relayed_text = True
        elif content:
            self.emit(Event(kind="reasoning", text=content, stream_id=self.reasoning_id, partial=True))
        for call in getattr(delta, "tool_calls", None) or []:
            self._feed_call(call)

    def _feed_call(self, call: Any) -> None:
        index = int(getattr(call, "index", 0) or 0)
        function = getattr(call, "function", None)
        if function is None:
            return
        if getattr(function, "name", None):
            self.names[index] = function.name
        self.arguments[index] = self.arguments.get(index, "") + (getattr(function, "arguments", None) or "")
        if self.names.get(index) != "send_message":
            return
        found = _MESSAGE_KEY.search(self.arguments[index])
        if found is None:
            return
        text, _ = decoded_prefix(self.arguments[index][found.end() :])
        sent = self.relayed.get(index, "")
        if len(text) > len(sent):
            stream_id = self.assistant_ids.setdefault(index, f"assistant-{uuid.uuid4()}")
            chunk = Event(
                kind="assistant", text=text[len(sent) :], stream_id=stream_id, partial=True, sent_by_tool=True
            )
            self.emit(chunk)
            self.relayed[index] = text
