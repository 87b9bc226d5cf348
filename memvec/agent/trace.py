"""What one reply did, as its caller sees it: the steps (model calls, tool calls, pressure,
evictions), the token counts, why it stopped, and the messages it sent."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from memvec.agent.events import Event

# "text": the model answered in text with no send_message to answer with (Letta's letta_v1_agent way);
# "no_tool_call": it answered in text though it was offered send_message
StopReason = Literal[
    "send_message",
    "text",
    "max_steps",
    "no_tool_call",
    "no_heartbeat",
    "tool_rule",
    "requires_approval",
    "cancelled",
]


class Step(BaseModel):
    kind: Literal["model_call", "tool", "pressure_warning", "eviction", "budget_spent"]
    tokens_in_context: int
    name: str | None = None
    arguments: dict[str, Any] | None = None
    ok: bool = True
    detail: str | None = None


class Trace(BaseModel):
    steps: list[Step] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = Field(default=0, description="as the provider counted them, over the reply's steps")
    completion_tokens: int = 0
    tool_calls: int = 0
    page_ins: int = 0
    evicted_messages: int = 0
    pressure_warnings: int = 0
    max_tokens_in_context: int = 0
    stopped_by: StopReason | None = None

    def count_tokens(self, prompt: int, completion: int) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    def add(self, step: Step) -> None:
        self.steps.append(step)
        self.max_tokens_in_context = max(self.max_tokens_in_context, step.tokens_in_context)


class Reply(BaseModel):
    message: str | None = Field(description="the last message sent to the user, if any")
    messages: list[str] = Field(default_factory=list)
    session_id: str
    turn: int
    trace: Trace
    recorded: list[int] = Field(
        default_factory=list, exclude=True, description="ids of the recall records this reply created, in order"
    )
