"""Request and response bodies of the HTTP API (validated by FastAPI with pydantic)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvec.types import (
    MAX_META_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    AgentName,
    Citation,
    CoreBlock,
    Hit,
    Record,
    Tag,
)

MAX_BATCH = 1_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlockIn(Strict):
    label: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
    value: str = Field(default="", max_length=MAX_TEXT_CHARS)
    limit: int = Field(default=2_000, ge=1, le=MAX_TEXT_CHARS)
    description: str = Field(default="", max_length=MAX_META_CHARS)
    read_only: bool = False


class AgentCreate(Strict):
    name: AgentName
    memory_blocks: list[BlockIn] = Field(default_factory=list, max_length=32)
    model: str | None = Field(default=None, max_length=256, description="litellm model; None: a memory-only agent")
    context_window: int = Field(default=8_192, ge=256, le=2_000_000)


class AgentPatch(Strict):
    model: str | None = Field(default=None, max_length=256)
    context_window: int | None = Field(default=None, ge=256, le=2_000_000)


class AgentOut(BaseModel):
    id: str = Field(description="agent ids are their names")
    name: str
    model: str | None
    context_window: int
    memory_blocks: list[CoreBlock]
    created_at: datetime | None


class BlockPatch(Strict):
    value: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    limit: int | None = Field(default=None, ge=1, le=MAX_TEXT_CHARS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    read_only: bool | None = None


class PassageIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime | None = None


class PassageBatch(Strict):
    passages: list[PassageIn] = Field(min_length=1, max_length=MAX_BATCH)


class PassageOut(Record):
    created: bool = Field(default=True, description="false when an exact duplicate already existed")


class MessageIn(Strict):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    name: str | None = Field(default=None, max_length=MAX_META_CHARS, description="speaker name, kept as the role")


class MessagesIn(Strict):
    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_BATCH)
    session_id: str | None = Field(default=None, min_length=1, max_length=MAX_META_CHARS)


class MessagesOut(BaseModel):
    recorded: list[Record] = Field(description="messages stored in the recall tier by this request")
    replies: list[str] = Field(default_factory=list, description="what the agent said (agents with a model)")
    traces: list[dict[str, object]] = Field(default_factory=list, description="one trace per agent reply")


class HitsOut(BaseModel):
    query: str
    hits: list[Hit]


class Page(BaseModel):
    items: list[Record]
    limit: int
    offset: int
    total: int


class ErrorOut(BaseModel):
    """Every error answer: a short kind and the detail (a message, or a list of validation problems)."""

    error: str = Field(description="e.g. not_found, unauthorized, invalid_request, store_unavailable")
    detail: Any


class Health(BaseModel):
    status: Literal["ok", "unavailable"] = Field(description="unavailable: the store cannot be reached (HTTP 503)")
    store: str = Field(description="the store's file or URL (no password)")
    store_ok: bool
    model: str
    agents: int | None = Field(default=None, description="None while the store is unavailable")
    records: int | None = None
    auth: bool
