"""Request and response bodies of the HTTP API (validated by FastAPI with pydantic)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memvec.errors import InvalidInputError
from memvec.service.file_bodies import FileBlockOut
from memvec.types import (
    LABEL_PATTERN,
    MAX_BLOCK_CHARS,
    MAX_ID,
    MAX_META_CHARS,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    Citation,
    CoreBlock,
    DisplayName,
    Hit,
    Metadata,
    MetaText,
    MethodScores,
    NewRecord,
    Record,
    SearchFilters,
    Tag,
    Tier,
    ToolAnswer,
)
from memvec.types.tools import ToolRule

MAX_BATCH = 1_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Lenient(BaseModel):
    """Bodies a Letta client sends: its other fields (tools, sources, identities, ...) are accepted
    and ignored, so `letta-client` calls work unchanged; memvec's own fields are still validated."""

    model_config = ConfigDict(extra="ignore")


class BlockIn(Lenient):
    label: str = Field(pattern=LABEL_PATTERN)
    value: str = Field(default="", max_length=MAX_BLOCK_CHARS)
    limit: int = Field(default=MAX_BLOCK_CHARS, ge=1, le=MAX_BLOCK_CHARS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    read_only: bool = False
    metadata: Metadata | None = None


class TextPart(Lenient):
    type: Literal["text"] = "text"
    text: str = Field(max_length=MAX_TEXT_CHARS)


class MessageIn(Lenient):
    """Letta's MessageCreate: `content` as a string or a list of text parts."""

    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: str | list[TextPart] = Field(min_length=1)
    name: str | None = Field(default=None, max_length=MAX_META_CHARS, description="speaker name, kept as the role")
    otid: str | None = Field(default=None, max_length=256, description="the client's id for the message, kept with it")

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "\n".join(p.text for p in self.content)

    def as_record(self, agent: str, *, session_id: str | None, turn: int) -> NewRecord:
        """The message as the agent's recall record (its speaker name kept as the role)."""
        return NewRecord.model_validate(
            {
                "agent": agent,
                "tier": Tier.RECALL,
                "text": self.text(),
                "role": self.name or self.role,
                "citation": {"session_id": session_id, "turn_id": turn},
            }
        )


class AgentCreate(Lenient):
    """Letta's CreateAgentRequest (quickstart form: `model`, `embedding`, `memory_blocks`)."""

    name: DisplayName | None = Field(
        default=None, description="its display name (default: its id); also its handle when that is free"
    )
    memory_blocks: list[BlockIn] = Field(default_factory=list, max_length=32)
    model: str | None = Field(default=None, max_length=256, description="litellm model; None: a memory-only agent")
    embedding: str | None = Field(
        default=None, max_length=256, description="recorded; the home's embedding model is what embeds"
    )
    context_window_limit: int | None = Field(default=None, ge=256, le=2_000_000)
    context_window: int | None = Field(default=None, ge=256, le=2_000_000, description="memvec's name for the limit")
    system: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    metadata: Metadata | None = None
    agent_type: str | None = Field(default=None, max_length=64)
    llm_config: dict[str, Any] | None = Field(default=None, description="its model and context_window are used")
    embedding_config: dict[str, Any] | None = Field(
        default=None, description="its `handle` (or `embedding_model`) is recorded as `embedding`"
    )
    tool_ids: list[str] | None = Field(default=None, max_length=256, description="tools to offer it, by id")
    tools: list[str] | None = Field(default=None, max_length=256, description="tools to offer it, by name")
    include_base_tools: bool = Field(default=True, description="offer the built-in memory tools and send_message too")
    source_ids: list[str] | None = Field(default=None, max_length=64, description="folders to attach (Letta's sources)")
    block_ids: list[str] | None = Field(default=None, max_length=32, description="shared blocks to attach")
    initial_message_sequence: list[MessageIn] | None = Field(
        default=None, max_length=100, description="the conversation it starts with, recorded in its recall tier"
    )
    folder_ids: list[str] | None = Field(default=None, max_length=64, description="folders to attach")
    tool_rules: list[ToolRule] | None = Field(default=None, max_length=256)
    model_settings: dict[str, Any] | None = Field(
        default=None, description="Letta's model settings: its `response_format` is kept; the rest is not used"
    )
    max_files_open: int | None = Field(default=None, ge=1, le=100, description="files open at once")
    per_file_view_window_char_limit: int | None = Field(
        default=None, ge=100, le=1_000_000, description="characters of an open file its prompt shows"
    )


class GenerateIn(Strict):
    """Letta's GenerateRequest: one prompt for the agent's model, outside its conversation."""

    prompt: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=r"\S")
    system_prompt: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    override_model: str | None = Field(default=None, max_length=256, description="another litellm model to use")


class GenerateOut(BaseModel):
    content: str
    model: str
    usage: dict[str, int] = Field(description="prompt_tokens, completion_tokens, total_tokens as the provider counted")


class ResetMessages(Lenient):
    add_default_initial_messages: bool = Field(
        default=False, description="accepted; memvec starts a conversation with no messages of its own"
    )


class AgentPatch(Lenient):
    name: DisplayName | None = Field(default=None, description="a new display name (the id stays)")
    model: str | None = Field(default=None, max_length=256)
    embedding: str | None = Field(default=None, max_length=256)
    context_window_limit: int | None = Field(default=None, ge=256, le=2_000_000)
    context_window: int | None = Field(default=None, ge=256, le=2_000_000)
    system: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    metadata: Metadata | None = None
    llm_config: dict[str, Any] | None = None
    embedding_config: dict[str, Any] | None = None
    tool_ids: list[str] | None = Field(default=None, max_length=256, description="the tools to offer it, by id")
    tool_rules: list[ToolRule] | None = Field(default=None, max_length=256)
    model_settings: dict[str, Any] | None = Field(
        default=None, description="Letta's model settings: its `response_format` is kept; the rest is not used"
    )
    max_files_open: int | None = Field(default=None, ge=1, le=100, description="files open at once")
    per_file_view_window_char_limit: int | None = Field(
        default=None, ge=100, le=1_000_000, description="characters of an open file its prompt shows"
    )


class BlockOut(BaseModel):
    """Letta's Block (`id` is `<agent>:<label>`, or `block-<hex>` for a shared block; an agent's blocks
    are addressed by label)."""

    id: str
    label: str
    value: str
    limit: int
    description: str | None
    read_only: bool
    metadata: dict[str, Any]

    @classmethod
    def of(cls, agent: str, block: CoreBlock, shared: dict[str, str] | None = None) -> BlockOut:
        """`shared`: the agent's shared blocks' ids by label (their id is theirs, not the agent's)."""
        return cls.with_id((shared or {}).get(block.label) or f"{agent}:{block.label}", block)

    @classmethod
    def with_id(cls, block_id: str, block: CoreBlock) -> BlockOut:
        return cls(
            id=block_id,
            label=block.label,
            value=block.value,
            limit=block.limit,
            description=block.description or None,
            read_only=block.read_only,
            metadata=block.metadata,
        )


class BlockPatch(Lenient):
    value: str | None = Field(default=None, max_length=MAX_BLOCK_CHARS)
    limit: int | None = Field(default=None, ge=1, le=MAX_BLOCK_CHARS)
    description: str | None = Field(default=None, max_length=MAX_META_CHARS)
    read_only: bool | None = None
    metadata: Metadata | None = None
    label: str | None = Field(
        default=None, max_length=64, description="a new label for an agent's own block (a shared block keeps its own)"
    )

    def changes(self, label: str) -> dict[str, Any]:
        """What to change in block `label`: the fields given and not null."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if v is not None}


class LlmConfigOut(BaseModel):
    model: str = Field(description="the litellm model; empty for a memory-only agent")
    model_endpoint_type: str
    context_window: int


class EmbeddingConfigOut(BaseModel):
    embedding_model: str
    embedding_endpoint_type: Literal["hugging-face"] = "hugging-face"
    embedding_dim: int


class FolderOut(BaseModel):
    """Letta's Folder."""

    id: str
    name: str
    description: str | None = None
    instructions: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding_config: EmbeddingConfigOut
    created_at: datetime
    updated_at: datetime


class MemoryOut(BaseModel):
    """Letta's Memory: the agent's blocks and the files of its folders (memvec renders no prompt template)."""

    blocks: list[BlockOut]
    agent_type: str
    file_blocks: list[FileBlockOut] = Field(default_factory=list, description="its folders' files, open or closed")
    prompt_template: str = ""


class AgentOut(BaseModel):
    """Letta's AgentState, filled in, plus memvec's `context_window` and the embedding it really uses."""

    id: str = Field(description="agent-<uuid>, fixed at creation")
    name: str = Field(description="its display name, which may change and repeat")
    agent_type: str
    blocks: list[BlockOut]
    memory: MemoryOut
    llm_config: LlmConfigOut
    embedding_config: EmbeddingConfigOut | None = Field(
        description="the home's embedding model, for an agent given an embedding; null for one created "
        "without (as Letta shows it). memvec embeds every passage with the home's model either way"
    )
    system: str
    tags: list[str]
    tools: list[dict[str, Any]] = Field(default_factory=list, description="the tools it is offered (Letta's Tool)")
    tool_rules: list[dict[str, Any]] = Field(default_factory=list)
    sources: list[FolderOut] = Field(default_factory=list, description="the folders attached to it (Letta's Source)")
    max_files_open: int = Field(description="files of its folders open at once")
    per_file_view_window_char_limit: int = Field(description="characters of an open file its prompt shows")
    model: str | None
    embedding: str | None
    description: str | None
    metadata: dict[str, Any]
    message_ids: list[str] = Field(description="recall records in the agent's context, as strings")
    context_window: int
    created_at: datetime | None


class PassageIn(Strict):
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    citation: Citation = Field(default_factory=Citation)
    created_at: datetime | None = None
    expires_at: datetime | None = Field(
        default=None, description="memvec only: from then on the passage is never returned, and it is purged"
    )
    valid_from: datetime | None = Field(
        default=None, description="memvec only: event time since when it holds (default: created_at)"
    )
    valid_to: datetime | None = Field(default=None, description="memvec only: event time until when it holds")
    supersedes: int | None = Field(
        default=None, ge=1, le=MAX_ID, description="memvec only: id of the current version this passage replaces"
    )


class PassageUpdate(Strict):
    """Letta's passage update (`text`, optional `id` and `tags`) with memvec's citation and event time."""

    id: str | None = Field(default=None, max_length=32, description="ignored when given: the path names the passage")
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS, description="default: the old version's")
    citation: Citation = Field(default_factory=Citation)
    valid_from: datetime | None = Field(
        default=None, description="since when the new text holds (default: now; not before the current version's)"
    )
    expires_at: datetime | None = Field(
        default=None, description="memvec only: the new version's deadline (default: the current version's)"
    )


class PassageBatch(Strict):
    passages: list[PassageIn] = Field(min_length=1, max_length=MAX_BATCH)


class PassageOut(BaseModel):
    """Letta's Passage (string `id`, `text`, `tags`, `created_at`) with memvec's citation and flags."""

    id: str = Field(description="the record id, as a string: the same id works in every path")
    text: str
    agent: str
    tier: str
    role: str | None
    tags: list[str]
    citation: Citation
    created_at: datetime
    expires_at: datetime | None = None
    valid_from: datetime | None = Field(default=None, description="event time since when it holds")
    valid_to: datetime | None = Field(default=None, description="event time until when it held (None: still)")
    supersedes: str | None = Field(default=None, description="the version this one replaced")
    superseded_by: str | None = Field(default=None, description="the version that replaced it (None: current)")
    untrusted: bool
    created: bool = Field(
        default=True,
        description="false when the passage already existed (exact or near duplicate); it is the one returned",
    )
    duplicate_of: str | None = Field(
        default=None,
        description="not created: the passage it repeats (its tags and missing citation fields were merged into it)",
    )
    embedding: list[float] | None = Field(
        default=None,
        description="on insert, for an agent given an embedding: the vector it is stored with (as Letta answers)",
    )

    @classmethod
    def of(cls, record: Record, *, created: bool = True, duplicate_of: int | None = None) -> PassageOut:
        return cls(
            id=str(record.id),
            text=record.text,
            agent=record.agent,
            tier=record.tier.value,
            role=record.role,
            tags=record.tags,
            citation=record.citation,
            created_at=record.created_at,
            expires_at=record.expires_at,
            valid_from=record.valid_from,
            valid_to=record.valid_to,
            supersedes=_id_or_none(record.supersedes),
            superseded_by=_id_or_none(record.superseded_by),
            untrusted=record.untrusted,
            created=created,
            duplicate_of=_id_or_none(duplicate_of),
        )


def _id_or_none(record_id: int | None) -> str | None:
    return None if record_id is None else str(record_id)


class SearchResult(BaseModel):
    """Letta's search result (`id`, `content`, `timestamp`, `tags`) with memvec's citation and scores."""

    id: str
    content: str
    timestamp: str = Field(description="created_at, ISO 8601")
    tags: list[str]
    role: str | None
    citation: Citation
    created_at: datetime
    valid_from: datetime | None = Field(default=None, description="event time since when it holds")
    valid_to: datetime | None = Field(default=None, description="event time until when it held (None: still)")
    untrusted: bool
    score: float = Field(description="orders this result list (its scale depends on the other hits)")
    scores: MethodScores
    relevance: float | None = Field(
        default=None,
        description="the probability that the hit is relevant, from its own scores only: comparable across "
        "queries, what min_score cuts at (None in bm25 and token modes)",
    )

    @classmethod
    def of(cls, hit: Hit) -> SearchResult:
        return cls(
            id=str(hit.id),
            content=hit.text,
            timestamp=hit.created_at.isoformat(),
            tags=hit.tags,
            role=hit.role,
            citation=hit.citation,
            created_at=hit.created_at,
            valid_from=hit.valid_from,
            valid_to=hit.valid_to,
            untrusted=hit.untrusted,
            score=hit.score,
            scores=hit.scores,
            relevance=hit.relevance,
        )


class SearchOut(BaseModel):
    count: int
    results: list[SearchResult]


class ApprovalItem(Lenient):
    """One answer of Letta's ApprovalCreate: a tool's return (`type` tool) or an approval."""

    type: Literal["tool", "approval"] = "approval"
    tool_call_id: str = Field(max_length=256)
    tool_return: str | list[TextPart] | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    status: Literal["success", "error"] = "success"
    approve: bool | None = None
    reason: str | None = Field(default=None, max_length=MAX_META_CHARS)

    def answer(self) -> ToolAnswer:
        text = self.tool_return
        returned = "\n".join(p.text for p in text) if isinstance(text, list) else text
        approve = None if returned is not None else bool(self.approve)
        return ToolAnswer(
            tool_call_id=self.tool_call_id,
            tool_return=returned,
            status=self.status,
            approve=approve,
            reason=self.reason,
        )


class ApprovalIn(Lenient):
    """Letta's ApprovalCreate: answers to the tool calls a reply left waiting (`requires_approval`),
    each by its `tool_call_id`, or one `approve` (with `reason`) for all of them."""

    type: Literal["approval"]
    approvals: list[ApprovalItem] | None = Field(default=None, max_length=256)
    approve: bool | None = None
    approval_request_id: str | None = Field(default=None, max_length=256)
    reason: str | None = Field(default=None, max_length=MAX_META_CHARS)

    def answers(self, waiting: list[str]) -> list[ToolAnswer]:
        if self.approvals:
            return [item.answer() for item in self.approvals]
        if self.approve is None:
            raise InvalidInputError("an approval gives `approvals`, or `approve` for every waiting call")
        return [ToolAnswer(tool_call_id=i, approve=self.approve, reason=self.reason) for i in waiting]


# Letta's MessageType: what a reply's messages can be
LettaMessageType = Literal[
    "system_message",
    "user_message",
    "assistant_message",
    "reasoning_message",
    "hidden_reasoning_message",
    "tool_call_message",
    "tool_return_message",
    "approval_request_message",
    "approval_response_message",
    "summary_message",
    "event_message",
]


class MessagesIn(Lenient):
    messages: list[ApprovalIn | MessageIn] | None = Field(default=None, min_length=1, max_length=MAX_BATCH)
    input: str | list[TextPart] | None = Field(default=None, description="one user message (Letta's shorthand)")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_META_CHARS,
        description="memvec: the session cited on every message of this request",
    )
    streaming: bool = Field(
        default=False, description="answer Server-Sent Events as the reply happens (what /messages/stream always does)"
    )
    stream_tokens: bool = Field(
        default=False, description="with streaming: also the model's text in chunks as the provider streams it"
    )
    include_return_message_types: list[LettaMessageType] | None = Field(
        default=None,
        max_length=len(get_args(LettaMessageType)),
        description="answer (or stream) only messages of these types; stop_reason and usage always come",
    )
    use_assistant_message: bool = Field(
        default=True,
        description="show what the model sent with send_message as an assistant_message (false: as the "
        "send_message tool call and its return, as Letta does)",
    )

    def wanted(self, message: dict[str, Any]) -> bool:
        """Whether `message` is one the client asked to get back."""
        kinds = self.include_return_message_types
        return kinds is None or message.get("message_type") in kinds

    @model_validator(mode="after")
    def _one_form(self) -> MessagesIn:
        if (self.messages is None) == (self.input is None):
            raise ValueError("give `messages` or `input` (exactly one)")
        return self

    def all_messages(self) -> list[ApprovalIn | MessageIn]:
        return self.messages if self.messages is not None else [MessageIn(content=self.input or "")]


class LettaResponseOut(BaseModel):
    """Letta's LettaResponse: the reply's messages by `message_type` (reasoning, tool call, tool
    return, assistant), why it stopped, usage; plus what memvec stored and its traces."""

    messages: list[dict[str, Any]]
    stop_reason: dict[str, Any]
    usage: dict[str, Any]
    recorded: list[PassageOut] = Field(description="memvec: the records this request stored in the recall tier")
    traces: list[dict[str, Any]] = Field(default_factory=list, description="memvec: one trace per agent reply")


class Deleted(BaseModel):
    message: str


class ForgetIn(SearchFilters):
    """What to forget: records matching every criterion given (at least one): the search filters,
    one tier, record ids."""

    tier: Tier | None = Field(default=None, description="one tier; default both")
    ids: list[Annotated[int, Field(ge=1, le=MAX_ID)]] = Field(default_factory=list, max_length=10_000)
    roles: list[MetaText] = Field(default_factory=list, max_length=16)


class Forgotten(BaseModel):
    forgotten: int = Field(description="how many records were deleted")
