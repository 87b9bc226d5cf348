"""Archival and recall routes: passages, searches and forgetting."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends, Path, Query, Response

from memvec.service.deps import (
    Caller,
    ScopedAgent,
    Service,
    ServiceState,
    api_router,
    cursor,
    json_response,
    visible_agent,
)
from memvec.service.schemas import (
    Deleted,
    ForgetIn,
    Forgotten,
    PassageBatch,
    PassageIn,
    PassageOut,
    PassageUpdate,
    SearchOut,
    SearchResult,
)
from memvec.types import MAX_ID, MAX_K, Fusion, NewRecord, SearchFilters, SearchMode, SearchRequest, Tier

router = api_router()

PassageId = Annotated[str, Path(pattern=r"^[0-9]{1,18}$", description="a passage id as listed (digits)")]
Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=MAX_ID)]
TopK = Annotated[int, Query(ge=1, le=MAX_K)]
QueryText = Annotated[str, Query(min_length=1, max_length=4096)]
Tags = Annotated[list[str] | None, Query(max_length=32)]
AsOf = Annotated[
    datetime | None,
    Query(
        description="memvec only: the versions that held at this event time, "
        "superseded ones included (default: current versions)"
    ),
]


def ranking(
    fusion: Annotated[Fusion | None, Query(description="hybrid fusion: convex (default) or rrf")] = None,
    vector_weight: Annotated[
        float | None, Query(ge=0.0, le=1.0, description="convex fusion weight of the vector side (default 0.5)")
    ] = None,
    session_weight: Annotated[
        float | None,
        Query(
            ge=0.0,
            le=10.0,
            description="weight of the session-level score; 0 turns it off (default: 2.0 "
            "with the learned ranker, else 1.0)",
        ),
    ] = None,
    rerank: Annotated[
        bool | None,
        Query(
            description="re-order the best candidates with the learned ranker (default: when it was fitted "
            "for the home's model and the fusion, convex); false: fusion alone"
        ),
    ] = None,
    dates_in_query: Annotated[
        bool,
        Query(
            description="keep only records from the period a time expression in the query names "
            "('yesterday', 'two weeks ago', 'last May', 'in 2023'), within start/end"
        ),
    ] = False,
    boost_dates_in_query: Annotated[
        bool,
        Query(
            description="hybrid: when dates_in_query is off, records from the period the query names rise "
            "(a second ranking over that period, fused by reciprocal rank); false: the period is ignored"
        ),
    ] = True,
    reference_time: Annotated[
        datetime | None, Query(description="what relative time expressions are resolved against (default: now)")
    ] = None,
    per_document: Annotated[bool, Query(description="the best chunk of each document only (top_k documents)")] = False,
    spread_sessions: Annotated[
        bool | None,
        Query(
            description="the first 5 hits spread over sessions, for a question about several conversations "
            "(default: when the query asks for a count or a total, 'how many', 'how much', 'in total')"
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        Query(
            ge=0.0,
            le=1.0,
            description="only hits whose relevance (a probability of relevance, comparable across queries) is "
            "at least this; none may come back: the memory holds nothing relevant (hybrid and vector modes)",
        ),
    ] = None,
) -> dict[str, object]:
    """Search options shared by both search endpoints (None: the server's defaults)."""
    return {
        "fusion": fusion,
        "vector_weight": vector_weight,
        "session_weight": session_weight,
        "rerank": rerank,
        "dates_in_query": dates_in_query,
        "boost_dates_in_query": boost_dates_in_query,
        "reference_time": reference_time,
        "per_document": per_document,
        "spread_sessions": spread_sessions,
        "min_score": min_score,
    }


Ranking = Annotated[dict[str, object], Depends(ranking)]


def _search(
    service: ServiceState,
    agent: str,
    tier: Tier,
    query: str,
    top_k: int,
    mode: SearchMode,
    filters: dict[str, object],
    ranking: dict[str, object],
) -> Response:
    request = SearchRequest.model_validate(
        {
            "agent": agent,
            "tier": tier,
            "query": query,
            "k": top_k,
            "mode": mode,
            "filters": SearchFilters.model_validate(filters),
            **ranking,
        }
    )
    results = [SearchResult.of(hit) for hit in service.memory.search(request)]
    return json_response(SearchOut(count=len(results), results=results))


def _list_passages(
    service: ServiceState,
    agent: str,
    *,
    search: str | None,
    ascending: bool,
    limit: int,
    after: str | None,
    before: str | None,
    offset: int,
    as_of: datetime | None,
) -> list[PassageOut]:
    if search:  # ranked by memvec's hybrid search, as Letta ranks a listed search by similarity
        request = SearchRequest(
            agent=agent, tier=Tier.ARCHIVAL, query=search, k=limit, filters=SearchFilters(as_of=as_of)
        )
        return [PassageOut.of(hit) for hit in service.memory.search(request)]
    records = service.memory.archival(agent).list(
        limit=limit, offset=offset, newest_first=not ascending, after=cursor(after), before=cursor(before), as_of=as_of
    )
    return [PassageOut.of(record) for record in records]


def _insert_passages(service: ServiceState, agent: str, passages: list[PassageIn]) -> list[PassageOut]:
    records = [
        NewRecord.model_validate({"agent": agent, "tier": Tier.ARCHIVAL, **p.model_dump(exclude_none=True)})
        for p in passages
    ]
    return [
        PassageOut.of(r.record, created=r.created, duplicate_of=r.duplicate_of) for r in service.memory.insert(records)
    ]


@router.post(
    "/v1/agents/{agent_id}/archival-memory",
    response_model=list[PassageOut],
    tags=["archival memory"],
    status_code=201,
    responses={200: {"model": list[PassageOut], "description": "every passage already existed (nothing new)"}},
)
def insert_passages(
    agent_id: ScopedAgent, body: PassageIn | PassageBatch, principal: Caller, service: Service, response: Response
) -> list[PassageOut]:
    """Insert one passage (`{text, tags, citation}`) or a batch (`{passages: [...]}`): 201 when
    anything was created, 200 when every passage repeated one already there (exact or near
    duplicate: that one is returned, with `duplicate_of`, its tags and citation merged)."""
    settings, _ = visible_agent(agent_id, principal, service)
    passages = body.passages if isinstance(body, PassageBatch) else [body]
    out = _insert_passages(service, agent_id, passages)
    response.status_code = 201 if any(p.created for p in out) else 200
    if settings.embedding is not None:  # Letta shows the vector of an agent that has an embedding
        vectors = service.memory.archival(agent_id).embeddings([int(p.id) for p in out])
        out = [p.model_copy(update={"embedding": vectors.get(int(p.id))}) for p in out]
    return out


@router.get("/v1/agents/{agent_id}/archival-memory", response_model=list[PassageOut], tags=["archival memory"])
def list_passages(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    limit: Limit = 50,
    after: Annotated[str | None, Query(description="cursor: passages after this id")] = None,
    before: Annotated[str | None, Query(description="cursor: passages before this id")] = None,
    ascending: Annotated[bool, Query(description="oldest first (default)")] = True,
    search: Annotated[str | None, Query(max_length=4096, description="rank by this text")] = None,
    offset: Offset = 0,
    as_of: AsOf = None,
) -> list[PassageOut]:
    """Current passages in time order, `limit` at a time past the `after` cursor; with `search`, the
    best `limit` matches of memvec's hybrid search instead."""
    visible_agent(agent_id, principal, service)
    return _list_passages(
        service,
        agent_id,
        search=search,
        ascending=ascending,
        limit=limit,
        after=after,
        before=before,
        offset=offset,
        as_of=as_of,
    )


@router.get("/v1/agents/{agent_id}/archival-memory/search", response_model=SearchOut, tags=["archival memory"])
def search_passages(
    agent_id: ScopedAgent,
    query: QueryText,
    principal: Caller,
    service: Service,
    ranking: Ranking,
    top_k: TopK = 10,
    mode: SearchMode = SearchMode.HYBRID,
    tags: Tags = None,
    tag_match_mode: Annotated[str, Query(pattern="^(any|all)$")] = "any",
    start_datetime: datetime | None = None,
    end_datetime: datetime | None = None,
    as_of: AsOf = None,
) -> Response:
    """Hybrid search of current passages (or of those that held `as_of`); `start_datetime`/
    `end_datetime` filter record time (created_at)."""
    visible_agent(agent_id, principal, service)
    return _search(
        service,
        agent_id,
        Tier.ARCHIVAL,
        query,
        top_k,
        mode,
        {"tags": tags or [], "tag_match": tag_match_mode, "start": start_datetime, "end": end_datetime, "as_of": as_of},
        ranking,
    )


@router.patch(
    "/v1/agents/{agent_id}/archival-memory/{passage_id}", response_model=list[PassageOut], tags=["archival memory"]
)
def update_passage(
    agent_id: ScopedAgent, passage_id: PassageId, body: PassageUpdate, principal: Caller, service: Service
) -> list[PassageOut]:
    """Letta's passage update, as a new version: the passage's current version is closed (it leaves
    search, stays in its history) and the new one returned, with the old one's `expires_at` unless
    the body sets one. 409 when `passage_id` was superseded; 400 for a `valid_from` before the
    current version's."""
    visible_agent(agent_id, principal, service)
    result = service.memory.archival(agent_id).update(
        int(passage_id),
        body.text,
        tags=body.tags,
        valid_from=body.valid_from,
        expires_at=body.expires_at,
        session_id=body.citation.session_id,
        turn_id=body.citation.turn_id,
        source_url=body.citation.source_url,
    )
    return [PassageOut.of(result.record)]


@router.get(
    "/v1/agents/{agent_id}/archival-memory/{passage_id}/history",
    response_model=list[PassageOut],
    tags=["archival memory"],
)
def passage_history(
    agent_id: ScopedAgent, passage_id: PassageId, principal: Caller, service: Service
) -> list[PassageOut]:
    """memvec only: every version of the passage, oldest first, with when each held."""
    visible_agent(agent_id, principal, service)
    return [PassageOut.of(r) for r in service.memory.archival(agent_id).history(int(passage_id))]


@router.delete("/v1/agents/{agent_id}/archival-memory/{passage_id}", response_model=Deleted, tags=["archival memory"])
def delete_passage(agent_id: ScopedAgent, passage_id: PassageId, principal: Caller, service: Service) -> Deleted:
    visible_agent(agent_id, principal, service)
    service.memory.archival(agent_id).delete(int(passage_id))
    return Deleted(message=f"passage {passage_id} deleted")


@router.get("/v1/agents/{agent_id}/recall-memory/search", response_model=SearchOut, tags=["messages"])
def search_messages(
    agent_id: ScopedAgent,
    query: QueryText,
    principal: Caller,
    service: Service,
    ranking: Ranking,
    top_k: TopK = 10,
    mode: SearchMode = SearchMode.HYBRID,
    roles: Annotated[list[str] | None, Query(max_length=16)] = None,
    session_id: Annotated[str | None, Query(min_length=1, max_length=2048)] = None,
    start_datetime: datetime | None = None,
    end_datetime: datetime | None = None,
) -> Response:
    """memvec only: search the agent's messages (Letta has no such route), results as for passages."""
    visible_agent(agent_id, principal, service)
    return _search(
        service,
        agent_id,
        Tier.RECALL,
        query,
        top_k,
        mode,
        {"roles": roles or [], "session_id": session_id, "start": start_datetime, "end": end_datetime},
        ranking,
    )


@router.post("/v1/agents/{agent_id}/forget", response_model=Forgotten, tags=["archival memory"])
def forget(agent_id: ScopedAgent, body: ForgetIn, principal: Caller, service: Service) -> Forgotten:
    """memvec only: delete the agent's records matching every criterion given (ids, tags, a time
    range, a session, roles; one tier or both) and say how many. At least one criterion is
    required (DELETE the agent to forget all of it). Nothing of them stays in the store or indexes."""
    visible_agent(agent_id, principal, service)
    criteria = body.model_dump(exclude={"tier", "ids"})
    return Forgotten(forgotten=service.memory.forget(agent_id, tier=body.tier, ids=body.ids, **criteria))
