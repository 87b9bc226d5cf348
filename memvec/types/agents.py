"""Agents: their settings and conversation state, their core blocks and each block's history."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from memvec.types.tools import ToolRule, unique_rules
from memvec.types.values import (
    LABEL_PATTERN,
    MAX_BLOCK_CHARS,
    MAX_ID,
    MAX_META_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    AgentName,
    DisplayName,
    Metadata,
    Tag,
    Utf8Text,
)


class CoreBlock(BaseModel):
    """A core-memory block: always rendered into the prompt, edited in place."""

    model_config = ConfigDict(extra="forbid")

    label: Annotated[str, StringConstraints(pattern=LABEL_PATTERN)]
    value: Utf8Text = Field(default="", max_length=MAX_BLOCK_CHARS)
    limit: int = Field(default=MAX_BLOCK_CHARS, ge=1, le=MAX_BLOCK_CHARS, description="characters (Letta's default)")
    read_only: bool = False
    description: Utf8Text = Field(default="", max_length=MAX_META_CHARS)
    metadata: Metadata = Field(default_factory=dict, description="free-form JSON kept with the block")

    @model_validator(mode="after")
    def _value_within_limit(self) -> CoreBlock:
        if len(self.value) > self.limit:
            raise ValueError(f"value has {len(self.value)} characters; the block limit is {self.limit}")
        return self


class BlockChange(BaseModel):
    """One change of a core block: the whole block before and after it (None: absent), who made it."""

    seq: int
    label: str
    changed_at: datetime
    actor: str = Field(
        description="who or what made it: a tool call (tool:NAME), an API key (http:KEY-ID), cli, import, python"
    )
    op: str = Field(description="create/put, append, replace, rewrite, insert, delete, undo")
    old: CoreBlock | None
    new: CoreBlock | None
    undone_by: int | None = Field(default=None, description="seq of the undo that reverted this change")


MAX_AGENT_TOOLS = 256


MAX_RESPONSE_FORMAT_CHARS = 65_536
MAX_CONTEXT_WINDOW = 2_000_000


class AgentSettings(BaseModel):
    """An agent's configuration: its LLM (any litellm `provider/model`) and its context budget."""

    model_config = ConfigDict(extra="forbid")

    name: AgentName
    model: Utf8Text | None = Field(default=None, max_length=256, description="litellm model, e.g. openai/gpt-4o-mini")
    context_window: int = Field(default=8_192, ge=256, le=MAX_CONTEXT_WINDOW)
    pressure: float = Field(default=0.75, gt=0.0, lt=1.0, description="fraction of the window that triggers a warning")
    keep_last: int = Field(default=4, ge=1, le=100, description="messages never evicted")
    max_steps: int = Field(default=8, ge=1, le=50, description="model calls per reply")
    page_in_budget: int = Field(default=3, ge=0, le=50, description="memory searches per reply")
    system: Utf8Text | None = Field(
        default=None, max_length=MAX_TEXT_CHARS, description="replaces the default instructions"
    )
    # what Letta clients set and read back; memvec keeps them, the agent loop does not use them
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    description: Utf8Text | None = Field(default=None, max_length=MAX_META_CHARS)
    metadata: Metadata = Field(default_factory=dict)
    agent_type: Annotated[str, StringConstraints(max_length=64)] = "memgpt_agent"
    embedding: Utf8Text | None = Field(
        default=None, max_length=256, description="the embedding a client asked for (the home's model is used)"
    )
    tool_ids: list[Annotated[str, StringConstraints(max_length=64)]] | None = Field(
        default=None,
        max_length=MAX_AGENT_TOOLS,
        description="the tools the agent is offered, built-in and custom (None: the built-in memory tools)",
    )
    tool_rules: list[ToolRule] = Field(default_factory=list, max_length=MAX_AGENT_TOOLS)
    response_format: dict[str, Any] | None = Field(
        default=None,
        description="the shape its answers must have, passed to the model as given (OpenAI's, e.g. "
        '{"type": "json_schema", "json_schema": {...}}; Letta\'s model_settings.response_format)',
    )
    max_files_open: int | None = Field(
        default=None, ge=1, le=100, description="files of its folders open at once (None: by the context window)"
    )
    per_file_view_window_char_limit: int | None = Field(
        default=None, ge=100, le=1_000_000, description="characters of an open file shown (None: by the context window)"
    )

    def file_limits(self) -> tuple[int, int]:
        """(files open at once, characters shown of each): as set, else about a third of the context
        window (at ~4 characters a token) shared by the open files."""
        max_open = self.max_files_open or (
            3 if self.context_window <= 8_192 else 5 if self.context_window <= 32_768 else 10
        )
        share = self.context_window * 4 // 3 // max_open
        return max_open, self.per_file_view_window_char_limit or min(40_000, max(1_000, share))

    @field_validator("response_format")
    @classmethod
    def _response_format(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None or value.get("type") == "text":
            return None
        if value.get("type") not in ("json_object", "json_schema"):
            raise ValueError("response_format is a json_schema, a json_object or text")
        if len(json.dumps(value)) > MAX_RESPONSE_FORMAT_CHARS:
            raise ValueError(f"response_format is at most {MAX_RESPONSE_FORMAT_CHARS:,} characters of JSON")
        return value

    @field_validator("tool_rules")
    @classmethod
    def _rules_once(cls, rules: list[ToolRule]) -> list[ToolRule]:
        return unique_rules(rules)


class AgentIdentity(BaseModel):
    """How HTTP clients know an agent: Letta's `agent-<uuid>` id, fixed at creation, and a display
    name that may change, hold spaces and be shared by several agents. The agent's handle (its
    AgentSettings.name, what its data is keyed by and what the CLI, the Python API and scoped keys
    name) never changes; an agent created over HTTP gets its name as handle when that is a free
    handle, else its id."""

    model_config = ConfigDict(frozen=True)

    handle: AgentName
    id: str
    name: DisplayName


class PendingToolCall(BaseModel):
    """A tool call of the model's that waits for the client: its return (a tool the client runs) or
    an approval (a tool that needs one). The reply that made it stopped with `requires_approval`."""

    id: str = Field(max_length=256)
    name: str = Field(max_length=64)
    arguments: str = Field(max_length=MAX_TEXT_CHARS)
    run_by: Literal["client", "server"] = Field(description="who runs it once approved")


class ToolAnswer(BaseModel):
    """The client's answer to a pending tool call: the tool's return (it ran the tool) or whether it
    approves the call (the server runs it) or not (`reason` goes to the model)."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = Field(max_length=256)
    tool_return: Utf8Text | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    status: Literal["success", "error"] = "success"
    approve: bool | None = None
    reason: Utf8Text | None = Field(default=None, max_length=MAX_META_CHARS)

    @model_validator(mode="after")
    def _one_answer(self) -> ToolAnswer:
        if (self.tool_return is None) == (self.approve is None):
            raise ValueError("an answer gives the tool's return or an approval (approve true or false)")
        return self


class AgentState(BaseModel):
    """What survives between replies: the recursive summary and which messages are in context."""

    # bounded so that an imported state fits the store's 64-bit columns (schemathesis found the gap)
    summary: Utf8Text = ""
    in_context: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(default_factory=list, max_length=100_000)
    turn: int = Field(default=0, ge=0, le=MAX_ID)
    created_at: datetime | None = None
    pending_calls: list[PendingToolCall] = Field(default_factory=list, max_length=MAX_AGENT_TOOLS)
