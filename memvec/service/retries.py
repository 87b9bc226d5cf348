"""A message sent again by a client that retries is answered once.

letta-client (like every Stainless client) re-sends a request its timeout gave up on, twice by
default, with `x-stainless-retry-count: 1`, `2`; any client may send an `Idempotency-Key` header
instead. Without this, each attempt ran the agent and stored the turn again while the client saw
only its timeout. A request is named by the caller's key, the agent, the route and either its
`Idempotency-Key` or its body; the store's ledger (memvec.store.requests) says whether a request of
that name is running (a retry then gets 409 `agent_busy`, which such clients retry) or answered (the
retry gets the first answer, header `x-memvec-replayed: true`). A first attempt
(`x-stainless-retry-count: 0`) always runs: the same text sent again is a new message.

A send still waiting for the agent when its client has gone is not run."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import HTTPException, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from memvec.errors import AgentBusyError
from memvec.service.auth import Principal
from memvec.service.deps import ServiceState
from memvec.service.schemas import LettaResponseOut, MessagesIn
from memvec.service.streaming import DONE, SSE_HEADERS, Reply, sse

RETRY_COUNT = "x-stainless-retry-count"
IDEMPOTENCY_KEY = "idempotency-key"
REPLAYED = {"x-memvec-replayed": "true"}
T = TypeVar("T")
_KEY_SHAPE = re.compile(r"[\x21-\x7e]{1,255}")  # printable ASCII, no spaces


@dataclass(frozen=True, slots=True)
class Ticket:
    """A send that may be retried: its name in the ledger, and whether it is a first attempt."""

    key: str
    fresh: bool


def ticket_of(request: Request, principal: Principal, agent: str, body: MessagesIn) -> Ticket | None:
    """The ledger name of this send, or None when nothing says it may be retried (no ledger then)."""
    offered = request.headers.get(IDEMPOTENCY_KEY)
    if offered is not None:
        if not _KEY_SHAPE.fullmatch(offered):
            raise HTTPException(400, "Idempotency-Key must be 1 to 255 printable ASCII characters, no spaces")
        return Ticket(_name("key", principal.key_id, agent, request.url.path, offered), fresh=False)
    count = request.headers.get(RETRY_COUNT, "")
    if not count.isdigit():
        return None
    return Ticket(_name("body", principal.key_id, agent, request.url.path, body.model_dump_json()), fresh=count == "0")


def _name(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


async def _claim(service: ServiceState, agent: str, ticket: Ticket) -> str | None:
    """None: this send is to run (claimed); else the stored answer. AgentBusyError while a run goes on."""
    state, answer = await run_in_threadpool(
        lambda: service.memory.claim_message_request(agent, ticket.key, fresh=ticket.fresh)
    )
    if state == "running":
        raise AgentBusyError(
            f"this message to {agent!r} is being answered already (an earlier attempt of the same "
            "request); retry to get its answer"
        )
    return answer


def nobody_listening() -> Response:
    """The answer to a send whose client left before it ran (499: the status is for the access log)."""
    return Response(status_code=499)


async def run_or_drop(service: ServiceState, ticket: Ticket | None, run: Callable[[], Awaitable[T | None]]) -> T | None:
    """`run()`; the claimed ticket is dropped when it raises or gives None (nothing answered), so a
    retry runs the send."""
    try:
        out = await run()
    except BaseException:
        if ticket is not None:
            await run_in_threadpool(service.memory.drop_message_request, ticket.key)
        raise
    if out is None and ticket is not None:
        await run_in_threadpool(service.memory.drop_message_request, ticket.key)
    return out


async def answered_once(
    service: ServiceState,
    request: Request,
    agent: str,
    ticket: Ticket | None,
    run: Callable[[], Awaitable[LettaResponseOut | None]],
) -> Response:
    """`run`'s answer (None from it: the client left before it began), or the first attempt's."""
    if ticket is not None and (answer := await _claim(service, agent, ticket)) is not None:
        return Response(answer, media_type="application/json", headers=REPLAYED)
    out = await run_or_drop(service, ticket, run)
    if out is None:
        return nobody_listening()
    body = out.model_dump_json()
    if ticket is not None:
        await run_in_threadpool(service.memory.finish_message_request, ticket.key, body)
    return Response(body, media_type="application/json")


def recorded_reply(service: ServiceState, ticket: Ticket | None, reply: Reply) -> Reply:
    """`reply` whose answer (or failure) is written to the ledger as it ends, in its worker thread."""
    if ticket is None:
        return reply

    def run(emit: Callable[[dict[str, Any]], None]) -> LettaResponseOut:
        try:
            out = reply(emit)
        except BaseException:
            service.memory.drop_message_request(ticket.key)
            raise
        service.memory.finish_message_request(ticket.key, out.model_dump_json())
        return out

    return run


async def claimed_stream(service: ServiceState, agent: str, ticket: Ticket | None) -> StreamingResponse | None:
    """The first attempt's answer as the stream it was (None: this send is to run)."""
    if ticket is None or (answer := await _claim(service, agent, ticket)) is None:
        return None
    stored = json.loads(answer)

    async def events() -> AsyncIterator[bytes]:
        for message in stored["messages"]:
            yield sse(message)
        yield sse(stored["stop_reason"])
        yield sse(stored["usage"])
        yield DONE

    return StreamingResponse(events(), media_type="text/event-stream", headers={**SSE_HEADERS, **REPLAYED})
