"""Letta's runs (`/v1/runs`): every send to an agent is a run (answered, streamed, or in the
background with `messages/async`), with its status, stop reason, usage and the messages it wrote.
A background run goes on in the server after the answer; one the server was stopped during stays
`running`. A caller sees the runs of the agents its key may see."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import Path, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from memvec.errors import NotFoundError
from memvec.memory import Memory
from memvec.service.auth import Principal
from memvec.service.deps import Caller, ScopedAgent, Service, api_router, cursor, visible_agent
from memvec.service.letta_messages import records_as_messages, stop_message, usage_message
from memvec.service.run_bodies import RunOut, RunUsageOut
from memvec.service.schemas import Lenient
from memvec.service.streaming import DONE, SSE_HEADERS, sse
from memvec.service.views import page
from memvec.types import AgentIdentity
from memvec.types.runs import AgentRun, RunStatus

router = api_router(tags=["runs"])
RUN_WAIT_S = 300.0  # how long a replay waits for a run still going
REPLAYED: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "the run's messages, then stop_reason, usage, [DONE]"}
}
MAX_LISTED = 10_000  # the newest runs a listing pages through
RunId = Annotated[str, Path(pattern=r"^run-[0-9a-f-]{36}$", description="a run's id (run-<uuid>)")]


def _visible(memory: Memory, principal: Principal, run_id: str) -> AgentRun:
    run = memory.runs().get(run_id)
    if not principal.may_see(run.agent):
        raise NotFoundError(f"no run {run_id!r}")
    return run


def _handles(identities: dict[str, AgentIdentity], principal: Principal, agent_ids: list[str]) -> list[str]:
    """The handles of the agents asked for (all the caller may see when none are named)."""
    known = {identity.id: handle for handle, identity in identities.items()}
    wanted = [known.get(a, a) for a in agent_ids] if agent_ids else list(known.values())
    return [h for h in wanted if principal.may_see(h)]


@router.get("/v1/runs", response_model=list[RunOut])
def list_runs(
    principal: Caller,
    service: Service,
    agent_id: Annotated[str | None, Query(max_length=140)] = None,
    agent_ids: Annotated[list[str] | None, Query(max_length=100)] = None,
    statuses: Annotated[list[RunStatus] | None, Query()] = None,
    active: Annotated[bool, Query(description="only runs still created or running")] = False,
    after: Annotated[str | None, Query(max_length=140, description="cursor: runs after this id, in the order")] = None,
    before: Annotated[str | None, Query(max_length=140, description="cursor: runs before this id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Literal["asc", "desc"] = "desc",
) -> list[RunOut]:
    """The runs of the agents asked for (default: every agent the caller may see), newest first."""
    memory = service.memory
    identities = memory.agent_identities()
    handles = _handles(identities, principal, [*([agent_id] if agent_id else []), *(agent_ids or [])])
    runs = memory.runs().list(handles, limit=MAX_LISTED, newest_first=order == "desc")
    if statuses:
        runs = [r for r in runs if r.status in statuses]
    if active:
        runs = [r for r in runs if r.status in ("created", "running")]
    runs = runs[page([r.id for r in runs], after=after, before=before, limit=limit)]
    return [RunOut.of(r, identities[r.agent].id if r.agent in identities else r.agent) for r in runs]


@router.get("/v1/runs/{run_id}", response_model=RunOut)
def get_run(run_id: RunId, principal: Caller, service: Service) -> RunOut:
    run = _visible(service.memory, principal, run_id)
    return RunOut.of(run, service.memory.agent_identity(run.agent).id)


@router.get("/v1/runs/{run_id}/messages", response_model=list[dict[str, Any]])
def run_messages(
    run_id: RunId,
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(max_length=140, description="cursor: messages after this id")] = None,
    before: Annotated[str | None, Query(max_length=140, description="cursor: messages before this id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Literal["asc", "desc"] = "asc",
) -> list[dict[str, Any]]:
    """The messages the run wrote, oldest first (`desc`: the newest `limit`), as `messages.list` shows them
    (only the types the send asked for, with `include_return_message_types`)."""
    run = _visible(service.memory, principal, run_id)
    recall = service.memory.recall(run.agent)
    first, last = cursor(after), cursor(before)
    ids = [
        i
        for i in service.memory.runs().message_ids(run_id)
        if (first is None or i > first) and (last is None or i < last)
    ]
    ids = ids[-limit:] if order == "desc" else ids[:limit]
    shown = records_as_messages(recall.get_many(ids), recall.message_meta(ids))
    return [m for m in shown if run.message_types is None or m["message_type"] in run.message_types]


class RunStreamIn(Lenient):
    """Letta's run-stream request: memvec replays a run's messages once it has ended."""

    starting_after: int = Field(default=0, ge=0, description="accepted: the whole run is replayed")
    include_pings: bool | None = None
    poll_interval: float | None = Field(default=None, ge=0, le=60)
    batch_size: int | None = Field(default=None, ge=1, le=10_000)


@router.post("/v1/runs/{run_id}/stream", response_class=StreamingResponse, responses=REPLAYED)
async def stream_run(run_id: RunId, principal: Caller, service: Service, body: RunStreamIn | None = None) -> Response:
    """The run's messages as a stream (Server-Sent Events), once it has ended (waiting up to
    RUN_WAIT_S for one still going): what it said, not what it was sent, then its stop reason and
    usage. memvec keeps a run's messages, not its stream, so token chunks come back whole."""
    run = await run_in_threadpool(_visible, service.memory, principal, run_id)
    waited = 0.0
    while run.status in ("created", "running") and waited < RUN_WAIT_S:
        await asyncio.sleep(0.1)
        waited += 0.1
        run = await run_in_threadpool(service.memory.runs().get, run_id)
    said = await run_in_threadpool(run_messages, run_id, principal, service)
    events = [sse(m) for m in said if m["message_type"] != "user_message"]
    if run.status == "failed":
        events.append(sse({"message_type": "error", "detail": run.error or "the run failed"}, event="error"))
    else:
        events += [sse(stop_message(run.stop_reason or "end_turn")), sse(usage_message_of(run.usage))]
    return StreamingResponse(iter([*events, DONE]), media_type="text/event-stream", headers=SSE_HEADERS)


def usage_message_of(usage: dict[str, int]) -> dict[str, Any]:
    counted = RunUsageOut.model_validate(usage)
    return usage_message(counted.step_count, counted.prompt_tokens, counted.completion_tokens)


@router.get("/v1/runs/{run_id}/usage", response_model=RunUsageOut)
def run_usage(run_id: RunId, principal: Caller, service: Service) -> RunUsageOut:
    """Its steps and tokens as the provider counted them (zero until it ends)."""
    return RunUsageOut.model_validate(_visible(service.memory, principal, run_id).usage)


class CancelIn(Lenient):
    run_ids: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None, max_length=1000, description="only these runs (default: every run of the agent still going)"
    )


@router.post("/v1/agents/{agent_id}/messages/cancel", response_model=dict[str, Any], tags=["messages"])
def cancel_runs(
    agent_id: ScopedAgent, principal: Caller, service: Service, body: CancelIn | None = None
) -> dict[str, Any]:
    """Cancel the agent's runs still going: each stops before its next model call (what it wrote
    stays) and ends `cancelled`. Answers the ids cancelled."""
    visible_agent(agent_id, principal, service)
    cancelled = service.memory.runs().cancel(agent_id, (body.run_ids or []) if body else [])
    return {"cancelled_run_ids": cancelled}
