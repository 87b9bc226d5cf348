"""Data that crosses memvec's boundaries, validated with pydantic.

Limits are part of the contract (README, "Limits"): a record's text is 1..MAX_TEXT_CHARS
characters after stripping, at most MAX_TAGS tags of 1..MAX_TAG_CHARS characters each.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import unicodedata
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from memvec.limits import MAX_METADATA_DEPTH, json_depth_exceeds

MAX_TEXT_CHARS = 32_768
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_META_CHARS = 2_048
MAX_ID = 2**62  # record ids and counters: well inside SQLite's and PostgreSQL's signed 64-bit integers
MAX_K = 1_000

# FAISS index kinds (memvec.index.vector); a home's setting may also be "auto" (by tier size)
IndexKind = Literal["flat", "hnsw", "flat-fp16", "hnsw-fp16", "flat-sq8", "hnsw-sq8"]
IndexKindSetting = Literal["auto"] | IndexKind
INDEX_KIND_SETTINGS: tuple[str, ...] = ("auto", *get_args(IndexKind))
AGENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
LABEL_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"  # a core block's label
SHARED_BLOCK_ID_PATTERN = r"^block-[0-9a-f]{32}$"  # a shared block's id (memvec.tiers.shared)


def _installed_version() -> str:
    """The version pip installed (pyproject.toml's, the one place it is written)."""
    try:
        return importlib.metadata.version("memvec")
    except importlib.metadata.PackageNotFoundError:  # a source tree run without installing
        return "0+source"


VERSION = _installed_version()


class Tier(StrEnum):
    ARCHIVAL = "archival"
    RECALL = "recall"


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    VECTOR = "vector"
    BM25 = "bm25"
    TOKEN = "token"


class Fusion(StrEnum):
    CONVEX = "convex"
    RRF = "rrf"


EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def _utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; everything is stored and returned in UTC, years 1000-9999."""
    try:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("datetime out of range") from exc
    if not EARLIEST <= value <= LATEST:
        raise ValueError("datetime must be between years 1000 and 9999")
    return value


def _utf8(value: str) -> str:
    """Refuse lone surrogates (valid in a Python str and in JSON escapes, not in UTF-8 storage) and NUL
    (SQLite would store it, PostgreSQL cannot: a home must export from one and import into the other)."""
    if "\x00" in value:
        raise ValueError("text contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text is not valid Unicode (lone surrogate code point)") from exc
    return value


def _id_text(value: object) -> object:
    # Turn ids are often integers (a turn index); they are stored as text like every id.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


AgentName = Annotated[str, StringConstraints(pattern=AGENT_PATTERN)]
Utf8Text = Annotated[str, AfterValidator(_utf8)]
MetaText = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_META_CHARS), AfterValidator(_utf8)
]
IdText = Annotated[MetaText, BeforeValidator(_id_text)]
Tag = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TAG_CHARS, pattern=r"^[^\x00-\x1f]+$"),
    AfterValidator(_utf8),
]
UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
MAX_METADATA_BYTES = 16_384


def _small_json(value: dict[str, Any]) -> dict[str, Any]:
    if json_depth_exceeds(value, MAX_METADATA_DEPTH):  # deeper cannot be read back by pydantic (255 levels)
        raise ValueError(f"metadata nests more than {MAX_METADATA_DEPTH} levels deep")
    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES}")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_small_json)]


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, `field: message`, without pydantic's documentation links."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def normalize_text(text: str) -> str:
    """The form used to detect exact duplicates: NFKC, whitespace collapsed, case folded."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()


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


class Citation(BaseModel):
    """Where a memory came from; every field optional, every field returned with every hit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: IdText | None = None
    turn_id: IdText | None = None
    source_url: MetaText | None = None
    document: DocumentCitation | None = Field(default=None, description="the file, page and offsets of a chunk")


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
        return _utf8(text)

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


class Document(BaseModel):
    """A file added to archival memory: its chunks are archival records citing it."""

    id: int
    owner: str = Field(description="the agent it was added to, or the folder (`~folder-...`) that holds it")
    name: str
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


class CoreBlock(BaseModel):
    """A core-memory block: always rendered into the prompt, edited in place."""

    model_config = ConfigDict(extra="forbid")

    label: Annotated[str, StringConstraints(pattern=LABEL_PATTERN)]
    value: Utf8Text = Field(default="", max_length=MAX_TEXT_CHARS)
    limit: int = Field(default=2_000, ge=1, le=MAX_TEXT_CHARS)
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


class InsertResult(BaseModel):
    record: Record
    created: bool = Field(description="False when the record already existed (an exact or near duplicate)")
    duplicate_of: int | None = Field(
        default=None,
        description="not created: the id of the record it repeats (its tags and missing "
        "citation fields were merged into it)",
    )


class MethodScores(BaseModel):
    """Raw per-method scores of a hit (None where the mode did not compute that method)."""

    vector: float | None = None
    bm25: float | None = None
    token: float | None = None
    fused: float | None = Field(
        default=None,
        description="hybrid: the fused score (set when the ranker re-ordered or a period lifted: the hit's score "
        "is then another)",
    )
    ranker: float | None = Field(default=None, description="hybrid: the learned ranker's score (the hit's score)")
    session_vector: float | None = Field(
        default=None, description="hybrid: the mean cosine of the record's session (added to its vector side)"
    )
    session_bm25: float | None = Field(
        default=None, description="hybrid: the mean BM25 of the record's session (added to its BM25 side)"
    )
    period: float | None = Field(
        default=None,
        description="hybrid, a query naming a period: the reciprocal rank the period's own ranking added "
        "(the hit's score is then both rankings fused)",
    )


class Hit(Record):
    score: float
    scores: MethodScores = Field(default_factory=MethodScores)


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    tag_match: Literal["any", "all"] = "any"
    start: UtcDatetime | None = None
    end: UtcDatetime | None = None
    session_id: IdText | None = None
    roles: list[MetaText] = Field(default_factory=list)
    as_of: UtcDatetime | None = Field(
        default=None,
        description="event time: the versions that held then, superseded ones included "
        "(None: current versions only). start/end filter record time, created_at",
    )

    @model_validator(mode="after")
    def _ordered_range(self) -> SearchFilters:
        if self.start and self.end and self.start > self.end:
            raise ValueError("start must not be after end")
        return self

    def is_empty(self) -> bool:
        """No condition but the default one (current versions only)."""
        return not (self.tags or self.start or self.end or self.session_id or self.roles or self.as_of)


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    tier: Tier
    query: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS), AfterValidator(_utf8)
    ]
    k: int = Field(default=10, ge=1, le=MAX_K)
    mode: SearchMode = SearchMode.HYBRID
    fusion: Fusion | None = None
    vector_weight: float | None = Field(default=None, ge=0.0, le=1.0)
    session_weight: float | None = Field(
        default=None, ge=0.0, le=10.0, description="hybrid: weight of the session-level score (None: the default)"
    )
    rerank: bool | None = Field(
        default=None,
        description="hybrid: re-order the best candidates with the learned "
        "ranker (None: when it was fitted for the home's model "
        "and this fusion, convex)",
    )
    filters: SearchFilters = Field(default_factory=SearchFilters)
    dates_in_query: bool = Field(
        default=False,
        description="keep only records from the period a time expression "
        "in the query names ('yesterday', 'two weeks ago', 'last May', 'in 2023'; "
        "memvec.search.when), within start/end; a query naming none is not filtered",
    )
    boost_dates_in_query: bool = Field(
        default=True,
        description="hybrid: when the query names a period and dates_in_query is off, rank the search again "
        "over that period's records and fuse both rankings by reciprocal rank (memvec.search.period): the "
        "period's records rise, none is dropped",
    )
    reference_time: UtcDatetime | None = Field(
        default=None, description="what relative time expressions are resolved against (None: now)"
    )
    per_document: bool = Field(
        default=False,
        description="the best chunk of each document only (a record that is no document's chunk stands for itself)",
    )
    spread_sessions: bool = Field(
        default=False,
        description="hybrid: the first 5 hits spread over sessions (each further turn of a session picked there "
        "scores session_spread less), for a question about several conversations; past them, score order",
    )


class AgentSettings(BaseModel):
    """An agent's configuration: its LLM (any litellm `provider/model`) and its context budget."""

    model_config = ConfigDict(extra="forbid")

    name: AgentName
    model: Utf8Text | None = Field(default=None, max_length=256, description="litellm model, e.g. openai/gpt-4o-mini")
    context_window: int = Field(default=8_192, ge=256, le=2_000_000)
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


class AgentState(BaseModel):
    """What survives between replies: the recursive summary and which messages are in context."""

    # bounded so that an imported state fits the store's 64-bit columns (schemathesis found the gap)
    summary: Utf8Text = ""
    in_context: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(default_factory=list, max_length=100_000)
    turn: int = Field(default=0, ge=0, le=MAX_ID)
    created_at: datetime | None = None
