"""The agent export document: an agent's settings and state, core blocks with their history, and all
its passages and messages with citations (and optionally their embeddings): every version, linked by
`supersedes`, and passages whose validity ended. `memvec.engine.transfer` writes and reads it.
Version 1 (current versions only, no block history) still imports."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memvec.exchange.consolidation import ConsolidationRun
from memvec.limits import MAX_DOCUMENT_CHARS
from memvec.types import (
    MAX_ID,
    MAX_META_CHARS,
    MAX_TAGS,
    SHARED_BLOCK_ID_PATTERN,
    AgentSettings,
    AgentState,
    BlockChange,
    Citation,
    CoreBlock,
    MetaText,
)

EXPORT_FORMAT = "memvec-agent-export"


class ExportedRecord(BaseModel):
    id: int
    text: str
    role: str | None = None
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime
    expires_at: datetime | None = None
    valid_from: datetime | None = Field(default=None, description="event time since when it holds")
    valid_to: datetime | None = Field(
        default=None, description="event time until when it held (a superseded version: when its successor began)"
    )
    supersedes: int | None = Field(default=None, description="the id (in this document) of the version it replaced")
    untrusted: bool = False
    embedding: str | None = Field(default=None, description="base64 of little-endian float32")


class ExportedDocument(BaseModel):
    """A file whose chunks are among the passages (its text and structure, so it can be cut again)."""

    id: int = Field(ge=1, le=MAX_ID)
    name: MetaText
    original_name: MetaText | None = Field(default=None, description="the name it was uploaded as, if not `name`")
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    media_type: MetaText
    size_bytes: int = Field(ge=0, le=MAX_ID)
    text: str = Field(max_length=MAX_DOCUMENT_CHARS)
    pages: int | None = Field(default=None, ge=0, le=MAX_ID)
    title: str | None = Field(default=None, max_length=MAX_META_CHARS)
    chunks: int = Field(ge=0, le=MAX_ID)
    blocks: list[tuple[int, int, int | None, list[str]]] = Field(default_factory=list, max_length=1_000_000)
    created_at: datetime
    replaced_at: datetime | None = None
    replaced_by: int | None = Field(default=None, description="the id (in this export) of the version that replaced it")


class ExportedSharedBlock(CoreBlock):
    """A shared block the agent holds, with the block's own history (every holder's changes)."""

    id: str = Field(pattern=SHARED_BLOCK_ID_PATTERN)
    history: list[BlockChange] = Field(default_factory=list)


class AgentExport(BaseModel):
    format: Literal["memvec-agent-export"] = "memvec-agent-export"
    version: Literal[1, 2] = 2
    exported_at: datetime
    embedding_model: str
    dim: int | None = None
    agent: AgentSettings
    state: AgentState = Field(default_factory=AgentState)
    blocks: list[CoreBlock] = Field(default_factory=list)
    block_history: list[BlockChange] = Field(
        default_factory=list, description="every change of the blocks, oldest first (version 2)"
    )
    shared_blocks: list[ExportedSharedBlock] = Field(
        default_factory=list,
        description="shared blocks it holds: on import attached again, made first where "
        "this home has no block of that id",
    )
    consolidations: list[ConsolidationRun] = Field(
        default_factory=list, description="its consolidation runs, oldest first (version 2)"
    )
    passages: list[ExportedRecord] = Field(default_factory=list)
    messages: list[ExportedRecord] = Field(default_factory=list)
    documents: list[ExportedDocument] = Field(
        default_factory=list, description="the files its passages are chunks of (every version)"
    )


class ImportReport(BaseModel):
    agent: str
    passages: int
    messages: int
    reembedded: bool
