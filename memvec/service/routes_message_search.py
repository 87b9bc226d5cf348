"""`POST /v1/messages/search` (Letta's messages.search): the messages of one agent, one conversation,
or every agent the caller can see, by memvec's hybrid search."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from memvec.service.across_agents import MinScore, search_each, searched_agents
from memvec.service.auth import Principal
from memvec.service.deps import Caller, Service, ServiceState, api_router, visible_conversation
from memvec.service.schemas import Lenient
from memvec.types import Citation, Hit, MetaText, SearchFilters, SearchMode, SearchRequest, Tier
from memvec.types.conversations import CONVERSATION_ID_PATTERN

router = api_router()
LETTA_ROLES = ["user", "assistant", "system"]  # what Letta's search returns: not the agent loop's tool records
_MODES = {"hybrid": SearchMode.HYBRID, "vector": SearchMode.VECTOR, "fts": SearchMode.BM25}
_TYPES = {"assistant": "assistant_message", "system": "system_message"}


class MessageSearchIn(Lenient):
    """Letta's message search, with memvec's `roles` and `min_score`."""

    query: str = Field(min_length=1, max_length=4096, pattern=r"\S")
    agent_id: str | None = Field(default=None, max_length=64, description="only this agent's messages")
    conversation_id: str | None = Field(
        default=None, pattern=CONVERSATION_ID_PATTERN, description="only this conversation's messages"
    )
    search_mode: Literal["hybrid", "vector", "fts"] = Field(
        default="hybrid", description="hybrid: BM25 and vectors fused, then the learned ranker; fts: BM25 alone"
    )
    start_date: datetime | None = Field(default=None, description="only messages created at or after this time")
    end_date: datetime | None = Field(default=None, description="only messages created at or before this time")
    limit: int = Field(default=50, ge=1, le=100)
    roles: list[MetaText] | None = Field(
        default=None,
        max_length=20,
        description="memvec: only messages of these roles (default user, assistant and system: not tool returns); "
        "a speaker's name finds an imported conversation's turns of that speaker",
    )
    min_score: MinScore = None


class MessageHitOut(BaseModel):
    """Letta's message search result (its agent and conversation named), with memvec's score,
    relevance and citation."""

    message_type: Literal["user_message", "assistant_message", "system_message"]
    message_id: str = Field(description="the record id, as the agent's message listing gives it")
    agent_id: str
    conversation_id: str | None = Field(description="the conversation it was sent in (None: the agent's own)")
    content: str
    created_at: datetime
    name: str | None = Field(default=None, description="a user message's speaker, when not `user`")
    score: float
    relevance: float | None = Field(
        default=None, description="memvec: the probability that the message is relevant (comparable across agents)"
    )
    citation: Citation
    untrusted: bool

    @classmethod
    def of(cls, hit: Hit, agent_id: str) -> MessageHitOut:
        role = hit.role or "user"
        session = hit.citation.session_id
        return cls(
            message_type=_TYPES.get(role, "user_message"),
            message_id=str(hit.id),
            agent_id=agent_id,
            conversation_id=session if session and re.fullmatch(CONVERSATION_ID_PATTERN, session) else None,
            content=hit.text,
            created_at=hit.created_at,
            name=None if role in ("user", *_TYPES) else role,
            score=hit.score,
            relevance=hit.relevance,
            citation=hit.citation,
            untrusted=hit.untrusted,
        )


def _searched(body: MessageSearchIn, principal: Principal, service: ServiceState) -> dict[str, str]:
    """{handle: id} of the agents searched: the conversation's agent, the agent named, or every one
    the key may see. A conversation of another agent than the one named leaves none."""
    if body.conversation_id is None:
        return searched_agents(body.agent_id, principal, service)
    owner = visible_conversation(body.conversation_id, principal, service).agent
    if body.agent_id is None:
        return searched_agents(owner, principal, service)
    return {h: i for h, i in searched_agents(body.agent_id, principal, service).items() if h == owner}


@router.post("/v1/messages/search", response_model=list[MessageHitOut], tags=["messages"])
def search_all_messages(body: MessageSearchIn, principal: Caller, service: Service) -> list[MessageHitOut]:
    """The best `limit` messages for `query`, of the conversation or agent named or of every agent
    the key may see. Each agent's search ranks its own messages and the lists are merged by
    relevance (by score where the home's model has no relevance calibration)."""
    filters = SearchFilters(
        start=body.start_date, end=body.end_date, session_id=body.conversation_id, roles=body.roles or LETTA_ROLES
    )
    requests = {
        agent_id: SearchRequest(
            agent=handle,
            tier=Tier.RECALL,
            query=body.query,
            k=body.limit,
            mode=_MODES[body.search_mode],
            filters=filters,
            min_score=body.min_score,
        )
        for handle, agent_id in _searched(body, principal, service).items()
    }
    return [MessageHitOut.of(hit, agent_id) for hit, agent_id in search_each(requests, service, body.limit)]
