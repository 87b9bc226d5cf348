"""Archival and recall routes: passages, searches and forgetting."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Path, Query, Response

from memvec.service.auth import Principal
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
from memvec.service.search_params import MessageSearchParams, PassageSearchParams
from memvec.types import MAX_ID, NewRecord, SearchFilters, SearchRequest, Tier

router = api_router()

PassageId = Annotated[str, Path(pattern=r"^[0-9]{1,18}$", description="a passage id as listed (digits)")]
Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=MAX_ID)]
AsOf = Annotated[
    datetime | None,
    Query(
        description="memvec only: the versions that held at this event time, "
        "superseded ones included (default: current versions)"
    ),
]


def _search(
    service: ServiceState,
    principal: Principal,
    agent: str,
    tier: Tier,
    params: PassageSearchParams | MessageSearchParams,
) -> Response:
    """One search on a lane thread (ServiceState.searches): the agent's read, the search and its JSON."""
    visible_agent(agent, principal, service)
    results = [SearchResult.of(hit) for hit in service.memory.search(params.request(agent, tier))]
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
async def search_passages(
    agent_id: ScopedAgent,
    params: Annotated[PassageSearchParams, Query()],
    principal: Caller,
    service: Service,
) -> Response:
    """Hybrid search of current passages (or of those that held `as_of`); `start_datetime`/
    `end_datetime` filter record time (created_at)."""
    return await service.searches.run(_search, service, principal, agent_id, Tier.ARCHIVAL, params)


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
async def search_messages(
    agent_id: ScopedAgent,
    params: Annotated[MessageSearchParams, Query()],
    principal: Caller,
    service: Service,
) -> Response:
    """memvec only: search the agent's messages (Letta has no such route), results as for passages."""
    return await service.searches.run(_search, service, principal, agent_id, Tier.RECALL, params)


@router.post("/v1/agents/{agent_id}/forget", response_model=Forgotten, tags=["archival memory"])
def forget(agent_id: ScopedAgent, body: ForgetIn, principal: Caller, service: Service) -> Forgotten:
    """memvec only: delete the agent's records matching every criterion given (ids, tags, a time
    range, a session, roles; one tier or both) and say how many. At least one criterion is
    required (DELETE the agent to forget all of it). Nothing of them stays in the store or indexes."""
    visible_agent(agent_id, principal, service)
    criteria = body.model_dump(exclude={"tier", "ids"})
    return Forgotten(forgotten=service.memory.forget(agent_id, tier=body.tier, ids=body.ids, **criteria))
