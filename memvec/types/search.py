"""Searches: the request, its filters, and the hits with their score parts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from memvec.types.records import Record
from memvec.types.values import (
    MAX_K,
    MAX_TAGS,
    MAX_TEXT_CHARS,
    AgentName,
    Fusion,
    IdText,
    MetaText,
    SearchMode,
    Tag,
    Tier,
    UtcDatetime,
    checked_utf8,
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
    coverage: float | None = Field(
        default=None,
        description="the hit's BM25 score over the most any record could score for the query's words: how much "
        "of the query it covers, weighted by each word's rarity (0-1, whatever the other hits score)",
    )


class Hit(Record):
    score: float = Field(description="orders this result list (its scale depends on the other hits)")
    scores: MethodScores = Field(default_factory=MethodScores)
    relevance: float | None = Field(
        default=None,
        description="the probability that the hit is relevant to the query, from its own cosine and BM25 coverage "
        "only (memvec.search.relevance): comparable across queries, what min_score cuts at; None in bm25 and "
        "token modes and for a model without a fitted calibration",
    )


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
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS),
        AfterValidator(checked_utf8),
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
    min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="only hits whose relevance (a probability of relevance, whatever the other hits score) is at "
        "least this; none may come back, which says the memory holds nothing relevant. The memory tools use "
        "the calibrated default (`Memory.default_min_score`). hybrid and vector modes",
    )
    spread_sessions: bool | None = Field(
        default=None,
        description="hybrid: the first 5 hits spread over sessions (each further turn of a session picked there "
        "scores session_spread less), for a question about several conversations; past them, score order. "
        "None: when the query asks for a count or a total ('how many', 'how much', 'in total')",
    )

    @model_validator(mode="after")
    def _relevance_needs_vectors(self) -> SearchRequest:
        if self.min_score is not None and self.mode not in (SearchMode.HYBRID, SearchMode.VECTOR):
            raise ValueError(
                f"min_score needs mode hybrid or vector (relevance is read from each hit's cosine), "
                f"not {self.mode.value}"
            )
        return self
