"""The query string of a search route as one typed object, and how it becomes a SearchRequest.

One model per route (FastAPI lists each field as a query parameter in the OpenAPI document), so a
search's parameters are read and validated in one pass instead of one dependency per parameter.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memvec.types import MAX_K, Fusion, SearchFilters, SearchMode, SearchRequest, Tier

AS_OF = "memvec only: the versions that held at this event time, superseded ones included (default: current versions)"


class SearchParams(BaseModel):
    """What every search route takes; None: the server's default."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    query: str = Field(min_length=1, max_length=4096)
    top_k: int = Field(default=10, ge=1, le=MAX_K)
    mode: SearchMode = SearchMode.HYBRID
    start_datetime: datetime | None = None
    end_datetime: datetime | None = None
    fusion: Fusion | None = Field(default=None, description="hybrid fusion: convex (default) or rrf")
    vector_weight: float | None = Field(
        default=None, ge=0.0, le=1.0, description="convex fusion weight of the vector side (default 0.5)"
    )
    session_weight: float | None = Field(
        default=None,
        ge=0.0,
        le=10.0,
        description="weight of the session-level score; 0 turns it off (default: 2.0 with the learned ranker, "
        "else 1.0)",
    )
    rerank: bool | None = Field(
        default=None,
        description="re-order the best candidates with the learned ranker (default: when it was fitted for the "
        "home's model and the fusion, convex); false: fusion alone",
    )
    dates_in_query: bool = Field(
        default=False,
        description="keep only records from the period a time expression in the query names ('yesterday', "
        "'two weeks ago', 'last May', 'in 2023'), within start/end",
    )
    boost_dates_in_query: bool = Field(
        default=True,
        description="hybrid: when dates_in_query is off, records from the period the query names rise (a second "
        "ranking over that period, fused by reciprocal rank); false: the period is ignored",
    )
    reference_time: datetime | None = Field(
        default=None, description="what relative time expressions are resolved against (default: now)"
    )
    per_document: bool = Field(default=False, description="the best chunk of each document only (top_k documents)")
    spread_sessions: bool | None = Field(
        default=None,
        description="the first 5 hits spread over sessions, for a question about several conversations (default: "
        "when the query asks for a count or a total, 'how many', 'how much', 'in total')",
    )
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="only hits whose relevance (a probability of relevance, comparable across queries) is at "
        "least this; none may come back: the memory holds nothing relevant (hybrid and vector modes)",
    )

    def filters(self, **more: object) -> SearchFilters:
        """The filters this route's parameters set: the time range, and `more` of the route's own."""
        return SearchFilters.model_validate({"start": self.start_datetime, "end": self.end_datetime, **more})

    def request(self, agent: str, tier: Tier) -> SearchRequest:
        """The engine's request (a ValidationError, answered 422, for options that do not go together)."""
        return SearchRequest.model_validate(
            {
                "agent": agent,
                "tier": tier,
                "query": self.query,
                "k": self.top_k,
                "mode": self.mode,
                "filters": self.filters(),
                **self.model_dump(include=RANKING_FIELDS),
            }
        )


# every field the engine takes as it is: the rest become its query, k, mode and filters
RANKING_FIELDS = set(SearchParams.model_fields) - {"query", "top_k", "mode", "start_datetime", "end_datetime"}


class PassageSearchParams(SearchParams):
    tags: list[str] | None = Field(default=None, max_length=32)
    tag_match_mode: Literal["any", "all"] = "any"
    as_of: datetime | None = Field(default=None, description=AS_OF)

    def filters(self, **more: object) -> SearchFilters:
        return super().filters(tags=self.tags or [], tag_match=self.tag_match_mode, as_of=self.as_of, **more)


class MessageSearchParams(SearchParams):
    roles: list[str] | None = Field(default=None, max_length=16)
    session_id: str | None = Field(default=None, min_length=1, max_length=2048)

    def filters(self, **more: object) -> SearchFilters:
        return SearchFilters.model_validate(
            {
                "roles": self.roles or [],
                "session_id": self.session_id,
                "start": self.start_datetime,
                "end": self.end_datetime,
            }
        )
