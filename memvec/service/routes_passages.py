"""`POST /v1/passages/search` (Letta's passages.search): one agent's archival passages, or those of
every agent the caller can see, by memvec's hybrid search."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from memvec.errors import InvalidInputError
from memvec.service.across_agents import MinScore, search_each, searched_agents
from memvec.service.deps import Caller, Service, api_router
from memvec.service.schemas import Lenient, PassageOut
from memvec.types import MAX_TAGS, SearchFilters, SearchRequest, Tag, Tier

router = api_router()


class PassageSearchIn(Lenient):
    """Letta's passage search. Letta's archives are not served here: name the agent, or none."""

    query: str = Field(min_length=1, max_length=4096, pattern=r"\S")
    agent_id: str | None = Field(default=None, max_length=64, description="only this agent's passages")
    archive_id: str | None = Field(default=None, max_length=64, description="not served: archives are Letta's")
    tags: list[Tag] | None = Field(default=None, max_length=MAX_TAGS)
    tag_match_mode: Literal["any", "all"] = "any"
    start_date: datetime | None = None
    end_date: datetime | None = None
    limit: int = Field(default=50, ge=1, le=100)
    min_score: MinScore = None


class PassageHitOut(BaseModel):
    """Letta's PassageSearchResponseItem: the passage (with memvec's citation), its score, and the
    agent it belongs to (`metadata.agent_id`)."""

    passage: PassageOut
    score: float
    metadata: dict[str, Any]
    relevance: float | None = Field(
        default=None, description="memvec: the probability that the passage is relevant (comparable across agents)"
    )


def _searched_agents(body: PassageSearchIn, principal: Caller, service: Service) -> dict[str, str]:
    if body.archive_id is not None and body.agent_id is None:
        raise InvalidInputError("memvec serves no archives: search by agent_id, or across every agent")
    return searched_agents(body.agent_id, principal, service)


@router.post("/v1/passages/search", response_model=list[PassageHitOut], tags=["archival memory"])
def search_all_passages(body: PassageSearchIn, principal: Caller, service: Service) -> list[PassageHitOut]:
    """The best `limit` passages for `query`, of the agent named or of every agent the key may see.
    Across agents, each agent's search ranks its own passages and the lists are merged by relevance,
    which no other hit moves (by score where the home's model has no relevance calibration)."""
    filters = SearchFilters(
        tags=body.tags or [], tag_match=body.tag_match_mode, start=body.start_date, end=body.end_date
    )
    requests = {
        agent_id: SearchRequest(
            agent=handle, tier=Tier.ARCHIVAL, query=body.query, k=body.limit, filters=filters, min_score=body.min_score
        )
        for handle, agent_id in _searched_agents(body, principal, service).items()
    }
    return [
        PassageHitOut(
            passage=PassageOut.of(hit), score=hit.score, metadata={"agent_id": agent_id}, relevance=hit.relevance
        )
        for hit, agent_id in search_each(requests, service, body.limit)
    ]
