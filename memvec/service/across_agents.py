"""Searches across agents (Letta's `passages.search` and `messages.search`): which agents a request
searches, never one the caller's key may not see, and one list merged from each agent's ranking."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from memvec.service.auth import Principal
from memvec.service.deps import ServiceState, scoped_handle, visible_agent
from memvec.types import Hit, SearchRequest

MinScore = Annotated[
    float | None,
    Field(
        ge=0.0,
        le=1.0,
        description="memvec: only hits whose relevance (a probability of relevance, comparable across agents) "
        "is at least this",
    ),
]


def searched_agents(agent_ref: str | None, principal: Principal, service: ServiceState) -> dict[str, str]:
    """{handle: id} of the agents searched: the one named (404 when the key may not see it, as for an
    agent in a path), or every agent the key may see."""
    memory = service.memory
    if agent_ref is not None:
        handle = scoped_handle(agent_ref, principal, service)
        visible_agent(handle, principal, service)
        return {handle: memory.agent_identity(handle).id}
    return {h: i.id for h, i in memory.agent_identities().items() if principal.may_see(h)}


def search_each(requests: dict[str, SearchRequest], service: ServiceState, limit: int) -> list[tuple[Hit, str]]:
    """The best `limit` hits of the searches, one per agent ({agent id: its request}), with the id of
    the agent each came from. Each agent's search ranks its own records; the lists meet by relevance,
    which no other hit moves (by score where the home's model has no relevance calibration: fused 0-1
    or the ranker's, scaled per agent)."""
    found = [(hit, agent_id) for agent_id, request in requests.items() for hit in service.memory.search(request)]
    found.sort(key=lambda pair: -(pair[0].score if pair[0].relevance is None else pair[0].relevance))
    return found[:limit]
