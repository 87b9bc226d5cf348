"""The agent export document: an agent's settings and state, core blocks, and all its passages and
messages with citations (and optionally their embeddings). `memvec.engine.transfer` writes and reads it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memvec.types import MAX_TAGS, AgentSettings, AgentState, Citation, CoreBlock

EXPORT_FORMAT = "memvec-agent-export"


class ExportedRecord(BaseModel):
    id: int
    text: str
    role: str | None = None
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime
    expires_at: datetime | None = None
    valid_from: datetime | None = Field(default=None, description="event time since when it holds (a current "
                                                                  "version; exports carry no superseded ones)")
    valid_to: datetime | None = None
    untrusted: bool = False
    embedding: str | None = Field(default=None, description="base64 of little-endian float32")


class AgentExport(BaseModel):
    format: Literal["memvec-agent-export"] = "memvec-agent-export"
    version: Literal[1] = 1
    exported_at: datetime
    embedding_model: str
    dim: int | None = None
    agent: AgentSettings
    state: AgentState = Field(default_factory=AgentState)
    blocks: list[CoreBlock] = Field(default_factory=list)
    passages: list[ExportedRecord] = Field(default_factory=list)
    messages: list[ExportedRecord] = Field(default_factory=list)


class ImportReport(BaseModel):
    agent: str
    passages: int
    messages: int
    reembedded: bool
