"""Tools as Letta has them: a stored custom tool (Python source with the JSON schema a model sees),
the built-in tools' fixed ids, and the rules that constrain which tool an agent may call next.

A custom tool's source is data here. The server reads its schema without running it
(memvec.tools.source_schema) and runs it only where a home turns that on (memvec.tools.sandbox).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from memvec.types.values import MAX_META_CHARS, MAX_TAGS, Metadata, Tag, Utf8Text

TOOL_ID_PATTERN = r"^tool-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"  # what OpenAI-shaped APIs take as a function name
MAX_TOOL_SOURCE_CHARS = 100_000
MAX_SCHEMA_BYTES = 64_000
DEFAULT_RETURN_CHAR_LIMIT = 50_000  # Letta's default: a tool's answer is cut to this many characters
MAX_RETURN_CHAR_LIMIT = 1_000_000
_BUILTIN_NAMESPACE = uuid.UUID("5d0b6c84-7b0e-4c55-9a57-8f9f3b1a6e21")

ToolName = Annotated[str, StringConstraints(pattern=TOOL_NAME_PATTERN)]
ToolKind = Literal["custom", "letta_core", "letta_memory_core", "letta_files_core"]
ToolExecution = Literal["client", "subprocess"]


def builtin_tool_id(name: str) -> str:
    """A built-in tool's id: the same in every home and every release, so agents keep pointing at it."""
    return f"tool-{uuid.uuid5(_BUILTIN_NAMESPACE, name)}"


def new_tool_id() -> str:
    return f"tool-{uuid.uuid4()}"


class ToolDef(BaseModel):
    """A custom tool: Python source defining one function (the last defined), and the OpenAI-shaped
    function schema a model is offered (`json_schema`: name, description, parameters)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: ToolName
    description: Utf8Text = Field(default="", max_length=MAX_META_CHARS)
    source_code: Utf8Text = Field(max_length=MAX_TOOL_SOURCE_CHARS)
    source_type: Literal["python"] = "python"
    json_schema: dict[str, Any]
    args_json_schema: dict[str, Any] | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    return_char_limit: int = Field(default=DEFAULT_RETURN_CHAR_LIMIT, ge=1, le=MAX_RETURN_CHAR_LIMIT)
    default_requires_approval: bool = False
    metadata: Metadata = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


RuleType = Literal[
    "run_first",
    "exit_loop",
    "continue_loop",
    "constrain_child_tools",
    "parent_last_tool",
    "max_count_per_step",
    "required_before_exit",
    "requires_approval",
    "conditional",
]


class ToolRule(BaseModel):
    """One of Letta's tool rules, by its `type`: which tools may follow which, which end a turn,
    which need a person's approval. Fields another type uses are kept as given."""

    model_config = ConfigDict(extra="allow")

    tool_name: ToolName
    type: RuleType
    children: list[ToolName] | None = Field(default=None, max_length=64)
    max_count_limit: int | None = Field(default=None, ge=1, le=1000)
    prompt_template: str | None = Field(default=None, max_length=MAX_META_CHARS)

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> ToolRule:
        if self.type in ("constrain_child_tools", "parent_last_tool") and not self.children:
            raise ValueError(f"a {self.type} rule names its children")
        if self.type == "max_count_per_step" and self.max_count_limit is None:
            raise ValueError("a max_count_per_step rule sets max_count_limit")
        if len(self.model_dump_json()) > MAX_SCHEMA_BYTES:
            raise ValueError("a tool rule is at most 64 kB of JSON")
        return self


def unique_rules(rules: list[ToolRule]) -> list[ToolRule]:
    """The rules in order, each once (Letta keeps one of rules given twice)."""
    seen: set[str] = set()
    kept = []
    for rule in rules:
        key = rule.model_dump_json(exclude_none=True)
        if key not in seen:
            seen.add(key)
            kept.append(rule)
    return kept
