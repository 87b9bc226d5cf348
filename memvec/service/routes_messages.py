"""Messages in Letta's shapes: send (a `LettaResponse`) and list (Letta messages, cursor paged).

Every message lives in the agent's recall tier, so a listed message's `id` is its record id and
works as the list cursor. An agent without a model only records what it is sent; its response
lists those messages back.
"""

from __future__ import annotations

import logging
import threading
from typing import Annotated, Any, Literal

from fastapi import Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from memvec.agent.consolidate import consolidate
from memvec.agent.generate import generate
from memvec.agent.models import model_problem
from memvec.agent.preview import system_prompt
from memvec.errors import InvalidInputError, NotFoundError
from memvec.exchange.consolidation import ConsolidationRun
from memvec.service.auth import Principal
from memvec.service.conversation_bodies import CompactIn, CompactionOut
from memvec.service.deps import (
    Caller,
    ScopedAgent,
    Service,
    ServiceState,
    api_router,
    cursor,
    in_scope,
    visible_agent,
)
from memvec.service.letta_messages import (
    SYSTEM_MESSAGE_ID,
    records_as_messages,
    system_message,
)
from memvec.service.run_bodies import RunOut
from memvec.service.schemas import (
    GenerateIn,
    GenerateOut,
    LettaResponseOut,
    MessagesIn,
)
from memvec.service.sending import answered, compacted, send, streamed
from memvec.types import MAX_ID

router = api_router()
log = logging.getLogger("memvec.service")

STREAMED: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "with `streaming`: Server-Sent Events, one Letta message each, then [DONE]",
    }
}


@router.post("/v1/agents/{agent_id}/messages", response_model=LettaResponseOut, tags=["messages"], responses=STREAMED)
async def send_messages(
    agent_id: ScopedAgent, body: MessagesIn, principal: Caller, service: Service, request: Request
) -> Response:
    """Run the agent on each message when it has a model (a `LettaResponse`); otherwise only record them.
    One message at a time per agent: a message to a busy agent waits up to the lease wait, then 409;
    one whose client has gone meanwhile is not run. A retry of a send (`x-stainless-retry-count` above
    0, as letta-client sends, or the same `Idempotency-Key`) gets the first attempt's answer, or 409
    while it runs: a message is run and stored once (memvec.service.retries).
    With `streaming: true` the reply comes as Server-Sent Events (memvec.service.streaming)."""
    in_scope(agent_id, principal)
    if body.streaming:
        return await streamed(service, request, agent_id, principal, body)
    return await answered(service, request, agent_id, principal, body)


@router.post("/v1/agents/{agent_id}/messages/async", response_model=RunOut, tags=["messages"])
async def send_messages_async(agent_id: ScopedAgent, body: MessagesIn, principal: Caller, service: Service) -> RunOut:
    """Start the send as a background run and answer at once with it (`status` `created`); read it
    with `GET /v1/runs/{run_id}` (and its messages there) until it is `completed` or `failed`. It
    runs in this server after the answer, waiting for the agent like any send; a server stopped
    meanwhile leaves it `running`."""
    in_scope(agent_id, principal)
    await run_in_threadpool(visible_agent, agent_id, principal, service)
    kinds = body.include_return_message_types
    wanted = [str(kind) for kind in kinds] if kinds is not None else None
    run = service.memory.runs().start(agent_id, background=True, status="created", message_types=wanted)
    worker = threading.Thread(
        target=_in_background, args=(service, agent_id, principal, body, run.id), name=run.id, daemon=True
    )
    worker.start()
    return RunOut.of(run, service.memory.agent_identity(agent_id).id)


def _in_background(service: ServiceState, agent: str, principal: Principal, body: MessagesIn, run_id: str) -> None:
    try:
        send(service, agent, principal, body.model_copy(update={"streaming": False}), run_id=run_id)
    except Exception:  # the run is marked failed with the error; the log keeps the trace
        log.exception("background run %s of %s failed", run_id, agent)


@router.post(
    "/v1/agents/{agent_id}/messages/stream", tags=["messages"], response_class=StreamingResponse, responses=STREAMED
)
async def stream_messages(
    agent_id: ScopedAgent, body: MessagesIn, principal: Caller, service: Service, request: Request
) -> Response:
    """Letta's streaming route: `/messages` with `streaming: true` (retries answered once, as there)."""
    in_scope(agent_id, principal)
    return await streamed(service, request, agent_id, principal, body)


@router.post("/v1/agents/{agent_id}/summarize", response_model=CompactionOut, tags=["messages"])
async def compact_messages(
    agent_id: ScopedAgent, principal: Caller, service: Service, body: CompactIn | None = None
) -> CompactionOut:
    """Fold the agent's context, all but its last `keep_last` messages, into its recursive summary
    now, with its model (Letta's `messages.compact`); the messages stay in recall, searchable."""
    await run_in_threadpool(visible_agent, agent_id, principal, service)
    return await compacted(service, agent_id)


@router.post("/v1/agents/{agent_id}/generate", response_model=GenerateOut, tags=["messages"])
def generate_completion(agent_id: ScopedAgent, body: GenerateIn, principal: Caller, service: Service) -> GenerateOut:
    """One completion of `prompt` with the agent's model (or `override_model`), outside its
    conversation: no memory is read and nothing is stored. 404 for a model litellm cannot call,
    400 for an agent without a model and no override."""
    settings, _ = visible_agent(agent_id, principal, service)
    model = body.override_model or settings.model
    if model is None:
        raise InvalidInputError(f"agent {agent_id!r} has no model: give override_model")
    if body.override_model is not None and (problem := model_problem(model)) is not None:
        raise NotFoundError(f"model not found: {problem}")
    made = generate(model, body.prompt, system_prompt=body.system_prompt)
    tokens = {"prompt_tokens": made.prompt_tokens, "completion_tokens": made.completion_tokens}
    return GenerateOut(content=made.content, model=made.model, usage={**tokens, "total_tokens": sum(tokens.values())})


@router.get("/v1/agents/{agent_id}/messages", response_model=list[dict[str, Any]], tags=["messages"])
def list_messages(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(description="cursor: a message id")] = None,
    before: Annotated[str | None, Query(description="cursor: a message id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    order: Annotated[
        Literal["asc", "desc"],
        Query(description="desc (the default): the newest `limit` messages; asc: the oldest. Oldest first either way"),
    ] = "desc",
    use_assistant_message: Annotated[
        bool, Query(description="a message sent with send_message as an assistant message (else as the call)")
    ] = True,
) -> list[dict[str, Any]]:
    """The agent's messages as Letta lists them: its system message first (id `0`, before every
    record: its system prompt as the next model call gets it), then its recall tier, in time order.
    `after`/`before` are message ids (`after=0`: every message after the system message)."""
    _, state = visible_agent(agent_id, principal, service)
    first, last = cursor(after), cursor(before)
    # Letta's cursors are in time order whatever the order asked (`after`: later); the store's in the order listed
    newest = order == "desc"
    records = service.memory.recall(agent_id).list(
        limit=limit, newest_first=newest, after=last if newest else first, before=first if newest else last
    )
    records.sort(key=lambda r: r.id)
    metas = service.memory.recall(agent_id).message_meta([r.id for r in records])
    listed = records_as_messages(records, metas, use_assistant_message=use_assistant_message)
    if first is None and (last is None or last > SYSTEM_MESSAGE_ID) and (order == "asc" or len(listed) < limit):
        listed.insert(0, system_message(system_prompt(service.memory, agent_id), state.created_at))
    return listed[:limit]


@router.get("/v1/agents/{agent_id}/consolidations", response_model=list[ConsolidationRun], tags=["messages"])
def list_consolidations(agent_id: ScopedAgent, principal: Caller, service: Service) -> list[ConsolidationRun]:
    """memvec only: the agent's sleep-time consolidation runs, oldest first, each a reviewable diff
    (facts added with the message ids they cite, supersessions, block rewrites, the model's reasons)."""
    visible_agent(agent_id, principal, service)
    return service.memory.consolidation_runs(agent_id)


@router.post(
    "/v1/agents/{agent_id}/consolidations",
    response_model=ConsolidationRun,
    status_code=201,
    tags=["messages"],
    responses={204: {"description": "no new messages: nothing to consolidate"}},
)
async def run_consolidation(agent_id: ScopedAgent, principal: Caller, service: Service) -> ConsolidationRun | Response:
    """memvec only: consolidate now with the agent's model: 201 with the run, or 204 when there are
    no new messages; 400 when the agent has no model. The model failing or answering anything but a
    valid proposal is a 502 and writes nothing."""
    in_scope(agent_id, principal)
    async with service.agent_slot(agent_id):
        run = await run_in_threadpool(_consolidate, service, agent_id, principal)
    return run if run is not None else Response(status_code=204)


@router.post("/v1/agents/{agent_id}/consolidations/{run_id}/undo", response_model=ConsolidationRun, tags=["messages"])
async def undo_consolidation(
    agent_id: ScopedAgent, run_id: Annotated[int, Path(ge=1, le=MAX_ID)], principal: Caller, service: Service
) -> ConsolidationRun:
    """memvec only: revert a run whole; 409 when something it wrote changed since (undo that first)."""
    in_scope(agent_id, principal)
    async with service.agent_slot(agent_id):
        return await run_in_threadpool(_undo, service, agent_id, run_id, principal)


def _consolidate(service: ServiceState, agent: str, principal: Principal) -> ConsolidationRun | None:
    visible_agent(agent, principal, service)
    return consolidate(service.memory, agent)


def _undo(service: ServiceState, agent: str, run_id: int, principal: Principal) -> ConsolidationRun:
    visible_agent(agent, principal, service)
    with service.memory.agent_lease(agent):  # not while a reply or a run of another server writes
        return service.memory.undo_consolidation(agent, run_id)
