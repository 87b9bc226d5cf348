"""Records and what cites them: a record as written and as stored, its citation (a document's
position included), documents, folders, and what an insert returns."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from memvec.types.values import (
    MAX_ID,
    MAX_META_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    AgentName,
    IdText,
    Metadata,
    MetaText,
    Tag,
    Tier,
    UtcDatetime,
    Utf8Text,
    checked_utf8,
    normalize_text,
)

WrittenBy = Literal["agent"]  # who wrote a record, when it was the agent loop itself


class DocumentCitation(BaseModel):
    """Where in a file a chunk comes from (a document added with `add_document`): `start`/`end` slice
    the document's text (`Memory.document_text`) to the chunk."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    document_id: int = Field(ge=1, le=MAX_ID, description="the document version the chunk belongs to")
    file_name: MetaText
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the file's bytes")
    media_type: MetaText
    folder: MetaText | None = Field(default=None, description="the folder's name, for a file of a folder")
    page: int | None = Field(default=None, ge=1, le=MAX_ID, description="1-based page, for PDFs")
    start: int = Field(ge=0, le=MAX_ID, description="offset of the chunk's first character in the text")
    end: int = Field(ge=0, le=MAX_ID, description="offset just past its last character")
    headings: list[MetaText] = Field(default_factory=list, max_length=16, description="the heading path above it")
    chunk: int = Field(ge=0, le=MAX_ID, description="its position among the document's chunks, from 0")
    metadata: Metadata = Field(
        default_factory=dict,
        description="the source's own metadata, kept as given (a LangChain Document's, a LlamaIndex node's)",
    )

    def path(self) -> str:
        """The file as people name it: folder/file for a folder's file, else its name."""
        return f"{self.folder}/{self.file_name}" if self.folder else self.file_name


class Citation(BaseModel):
    """Where a memory came from; every field optional, every field returned with every hit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: IdText | None = None
    turn_id: IdText | None = None
    source_url: MetaText | None = None
    document: DocumentCitation | None = Field(default=None, description="the file, page and offsets of a chunk")

    def one_line(self) -> str:
        """The citation for people, on one line: a chunk's file (folder, page, heading path, characters),
        a message's session and turn, the source URL; '' for a record cited by nothing."""
        parts = []
        if (cited := self.document) is not None:
            where = cited.path()
            where += f", p. {cited.page}" if cited.page is not None else ""
            where += f", § {' > '.join(cited.headings)}" if cited.headings else ""
            parts.append(f"{where}, chars {cited.start}-{cited.end}")
        turn = [f"session {self.session_id}"] * bool(self.session_id) + [f"turn {self.turn_id}"] * bool(self.turn_id)
        parts += [", ".join(turn)] if turn else []
        parts += [self.source_url] if self.source_url else []
        return " · ".join(parts)

    def for_model(self) -> dict[str, Any]:
        """What a model reads of the citation: where the memory came from, without the file's hash, media
        type or offsets (context spent on nothing it can use)."""
        shown = self.model_dump(exclude_none=True, exclude={"document"})
        if (cited := self.document) is not None:
            shown["document"] = cited.model_dump(
                exclude_none=True,
                exclude_defaults=True,  # no empty heading path
                include={"document_id", "file_name", "folder", "page", "headings", "chunk"},
            )
        return shown


class NewRecord(BaseModel):
    """A record to insert: an archival passage or a recall message."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    tier: Tier
    text: str
    role: MetaText | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: UtcDatetime | None = None
    expires_at: UtcDatetime | None = Field(
        default=None, description="after this time the record is never returned and is purged (None: kept)"
    )
    valid_from: UtcDatetime | None = Field(
        default=None, description="event time: since when the fact holds (None: its record time, created_at)"
    )
    valid_to: UtcDatetime | None = Field(
        default=None, description="event time: until when the fact holds (None: open; set when superseded)"
    )
    supersedes: int | None = Field(
        default=None, ge=1, le=MAX_ID, description="id of the current version this one replaces (it is closed)"
    )
    context: Utf8Text | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        description="index-only text that situates the record (e.g. the previous message); never returned. "
        "Recall messages with a session id get the previous message of that session when unset.",
    )

    @field_validator("text")
    @classmethod
    def _text_in_limits(cls, text: str) -> str:
        text = text.strip()
        if not text:
            raise ValueError("text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"text has {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
        if "\x00" in text:
            raise ValueError("text contains a NUL character")
        return checked_utf8(text)

    @field_validator("tags")
    @classmethod
    def _unique_tags(cls, tags: list[str]) -> list[str]:
        return list(dict.fromkeys(tags))

    @model_validator(mode="after")
    def _ordered_validity(self) -> NewRecord:
        start = self.valid_from or self.created_at
        if self.valid_to is not None and start is not None and self.valid_to < start:
            raise ValueError("valid_to must not be before valid_from")
        return self

    def dedup_key(self) -> str:
        """Archival: the normalized text. Recall: also who said it, in which session and turn,
        since the same words said twice in a conversation are two messages."""
        parts = [normalize_text(self.text)]
        if (document := self.citation.document) is not None:  # a chunk is its file's, wherever else the words are
            parts += [f"document {document.document_id}", str(document.start)]
        if self.tier is Tier.RECALL:
            parts += [self.role or "", self.citation.session_id or "", self.citation.turn_id or ""]
        return "\x1f".join(parts)


class Record(BaseModel):
    """A stored record, as returned by get/list."""

    id: int
    agent: str
    tier: Tier
    text: str
    role: str | None = None
    tags: list[str] = Field(default_factory=list)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime
    untrusted: bool = Field(default=False, description="the text reads like instructions to a model (memvec.guard)")
    expires_at: datetime | None = None
    valid_from: datetime | None = Field(default=None, description="event time: since when the fact holds")
    valid_to: datetime | None = Field(default=None, description="event time: until when it held (None: still holds)")
    supersedes: int | None = Field(default=None, description="the version this one replaced")
    superseded_by: int | None = Field(default=None, description="the version that replaced this one (None: current)")
    written_by: WrittenBy | None = Field(
        default=None,
        description="'agent': written by the agent loop itself (its messages, tool calls and returns), "
        "trusted by who wrote it; None: from outside, checked by its text",
    )


class Document(BaseModel):
    """A file added to archival memory: its chunks are archival records citing it."""

    id: int
    owner: str = Field(description="the agent it was added to, or the folder (`~folder-...`) that holds it")
    name: str
    original_name: str = Field(description="the name it was uploaded as (`name` differs for a renamed duplicate)")
    content_hash: str = Field(description="SHA-256 of the file's bytes: the same content again adds nothing")
    media_type: str
    size_bytes: int
    pages: int | None = None
    title: str | None = None
    chunks: int
    status: Literal["completed"] = Field(
        default="completed", description="files are parsed and embedded when added: a stored document is complete"
    )
    created_at: datetime
    replaced_at: datetime | None = Field(default=None, description="when a changed file replaced it")
    replaced_by: int | None = None


FOLDER_ID_PATTERN = r"^source-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # Letta's folder ids


class Folder(BaseModel):
    """A named set of documents (Letta's folder), attached to agents: each attached agent's archival
    tier holds the folder's chunks."""

    id: str = Field(pattern=FOLDER_ID_PATTERN)
    name: MetaText
    description: Utf8Text | None = Field(default=None, max_length=MAX_META_CHARS)
    instructions: Utf8Text | None = Field(default=None, max_length=MAX_META_CHARS)
    metadata: Metadata = Field(default_factory=dict)
    created_at: datetime
    updated_at: datetime
    agents: list[str] = Field(default_factory=list, description="the agents it is attached to")


class DocumentReport(BaseModel):
    """What `add_document` did."""

    document: Document
    created: bool = Field(description="False: the same content was there already, and nothing was added")
    replaced: int | None = Field(default=None, description="the document version this one replaced")
    chunk_ids: list[int] = Field(default_factory=list, description="the chunks' record ids, in text order")


class InsertResult(BaseModel):
    record: Record
    created: bool = Field(description="False when the record already existed (an exact or near duplicate)")
    duplicate_of: int | None = Field(
        default=None,
        description="not created: the id of the record it repeats (its tags and missing "
        "citation fields were merged into it)",
    )
