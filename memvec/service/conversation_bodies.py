"""Letta's conversation shapes at the door: create, update, the conversation shown, and a send to it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from memvec.service.schemas import Lenient, MessagesIn
from memvec.types import AGENT_PATTERN
from memvec.types.conversations import Conversation
from memvec.types.values import MAX_META_CHARS

_MODEL = Field(default=None, max_length=200, description="a litellm model handle (provider/model) for its replies")


def _handle(model: str | None) -> str | None:
    if model and not all(model.partition("/")[::2]):
        raise ValueError("the model handle should read provider/model-name")
    return model


class ConversationIn(Lenient):
    """Letta's CreateConversation (`model_settings` accepted and not used)."""

    summary: str | None = Field(default=None, max_length=MAX_META_CHARS, description="what it is about")
    model: str | None = _MODEL
    isolated_block_labels: list[str] | None = Field(
        default=None, max_length=64, description="not served: every conversation shares the agent's blocks"
    )

    _model = field_validator("model")(_handle)

    @field_validator("isolated_block_labels")
    @classmethod
    def _shared_blocks_only(cls, labels: list[str] | None) -> list[str] | None:
        if labels:
            raise ValueError("isolated blocks are not served: every conversation shares its agent's blocks")
        return labels


class ConversationPatch(Lenient):
    """Letta's UpdateConversation: the fields given replace its own (null clears)."""

    summary: str | None = Field(default=None, max_length=MAX_META_CHARS)
    model: str | None = _MODEL

    _model = field_validator("model")(_handle)


class ConversationOut(BaseModel):
    """Letta's Conversation."""

    id: str
    agent_id: str = Field(description="its agent's Letta id")
    summary: str | None = None
    model: str | None = None
    model_settings: dict[str, Any] | None = None
    in_context_message_ids: list[str] = Field(description="the ids of the messages in its context")
    isolated_block_ids: list[str] = Field(default_factory=list, description="always empty: its blocks are the agent's")
    created_at: datetime
    updated_at: datetime
    last_message_at: datetime | None = None

    @classmethod
    def of(cls, conversation: Conversation, agent_id: str) -> ConversationOut:
        return cls(
            id=conversation.id,
            agent_id=agent_id,
            summary=conversation.summary,
            model=conversation.model,
            in_context_message_ids=[str(i) for i in conversation.state.in_context],
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
            last_message_at=conversation.last_message_at,
        )


class ConversationMessagesIn(MessagesIn):
    """A send to a conversation: as to its agent, but streamed unless `streaming` is false (Letta's
    default here), and always in the conversation's session."""

    streaming: bool = Field(default=True, description="Server-Sent Events (the default); false: one LettaResponse")
    agent_id: str | None = Field(
        default=None, pattern=AGENT_PATTERN, description="with conversation_id `default`: the agent to send to"
    )


class CompactIn(Lenient):
    """Letta's compaction request: `compaction_settings` is accepted and not used (memvec folds all
    but the agent's `keep_last` messages with its own model, as its eviction does)."""

    compaction_settings: dict[str, Any] | None = None
    agent_id: str | None = Field(
        default=None, pattern=AGENT_PATTERN, description="with conversation_id `default`: the agent to compact"
    )


class CompactionOut(BaseModel):
    """Letta's CompactionResponse."""

    num_messages_before: int = Field(description="messages in context before")
    num_messages_after: int
    summary: str = Field(description="the recursive summary the folded messages went into")
