"""Search an agent's memory and see why each hit ranked where it did: the hit's relevance, its score
and its parts as bars (vector, BM25 and its coverage of the query, the session's share, fused, and
the learned ranker when it re-ordered), the citation, and untrusted text fenced as the agent would see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Query, Request
from fastapi.responses import HTMLResponse

from memvec.guard import fence
from memvec.service.deps import Service, api_router
from memvec.service.ui.deps import PageAgent, PageViewer, seen_agent
from memvec.service.ui.render import page
from memvec.types import Hit, SearchMode, SearchRequest, Tier

router = api_router(include_in_schema=False)


@dataclass(frozen=True)
class Bar:
    """One score part of a hit: its raw value and its length in [0, 1] for the meter."""

    name: str
    value: float
    length: float


# (label, MethodScores field, scaled against the best hit shown rather than absolute)
PARTS = (
    ("relevance", "relevance", False),  # a probability: comparable across queries
    ("vector", "vector", False),
    ("BM25 coverage", "coverage", False),
    ("BM25", "bm25", True),
    ("session (vector)", "session_vector", False),
    ("session (BM25)", "session_bm25", True),
    ("fused", "fused", True),
    ("ranker", "ranker", True),
    ("period", "period", True),
    ("token", "token", True),
)


def _length(value: float, low: float, high: float, relative: bool) -> float:
    if not relative:
        return min(max(value, 0.0), 1.0)  # a cosine: its own scale
    if low >= 0:
        return value / high if high > 0 else 0.0
    return (value - low) / (high - low) if high > low else 1.0  # a ranker's margin may be negative


def score_bars(hits: list[Hit]) -> list[list[Bar]]:
    """Each hit's score parts; the fused score is the hit's score when no ranker re-ordered."""
    # a record outside any session is its own session: its "session" parts would repeat its own scores
    values = [
        {
            field: hit.relevance if field == "relevance" else getattr(hit.scores, field)
            for _, field, _ in PARTS
            if hit.citation.session_id or not field.startswith("session")
        }
        for hit in hits
    ]
    for hit, parts in zip(hits, values, strict=True):
        if parts["fused"] is None and parts["ranker"] is None and parts["vector"] is not None:
            parts["fused"] = hit.score
    bars: list[list[Bar]] = [[] for _ in hits]
    for label, field, relative in PARTS:
        present = [value for p in values if (value := p.get(field)) is not None]
        if not present:
            continue
        low, high = min(present), max(present)
        for row, parts in enumerate(values):
            if (value := parts.get(field)) is not None:
                bars[row].append(Bar(label, value, _length(value, low, high, relative)))
    return bars


@router.get("/ui/agents/{agent_id}/search", include_in_schema=False)
def search_page(
    request: Request,
    agent_id: PageAgent,
    viewer: PageViewer,
    service: Service,
    q: Annotated[str, Query(max_length=4096)] = "",
    tier: Tier = Tier.ARCHIVAL,
    mode: SearchMode = SearchMode.HYBRID,
    k: Annotated[int, Query(ge=1, le=100)] = 10,
) -> HTMLResponse:
    seen_agent(agent_id, viewer, service)
    hits: list[Hit] = []
    if q.strip():
        hits = service.memory.search(SearchRequest(agent=agent_id, tier=tier, query=q, k=k, mode=mode))
    fenced = [fence(hit.text, record_id=hit.id) if hit.untrusted else None for hit in hits]
    return page(
        request,
        viewer,
        "search.html",
        agent_id=agent_id,
        q=q,
        tier=tier.value,
        mode=mode.value,
        k=k,
        results=list(zip(hits, score_bars(hits), fenced, strict=True)),
        tiers=[t.value for t in Tier],
        modes=[m.value for m in SearchMode],
    )
