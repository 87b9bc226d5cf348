"""What the route modules share: the service state, the caller's key, path and cursor types.

The routes import from here and `app` imports the routes, so nothing in the service imports in a circle.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, StringConstraints, TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from memvec.errors import (
    AgentBusyError,
    AgentExistsError,
    CoreMemoryError,
    InvalidInputError,
    MemvecError,
    ModelCallError,
    NameTakenError,
    NotFoundError,
    StoreUnavailableError,
    UnreadableDocumentError,
    VersionConflictError,
)
from memvec.exchange.agentfile import ImportPlan
from memvec.memory import Memory
from memvec.service.auth import KeyRing, Principal
from memvec.service.body import Handler, OffLoopBodyRoute
from memvec.service.direct import Resolved, Resolver, direct_handler
from memvec.service.error_schema import ERROR_RESPONSES
from memvec.service.lanes import SearchLane
from memvec.types import AGENT_ID_PATTERN, AGENT_PATTERN, LABEL_PATTERN, AgentSettings, AgentState
from memvec.types.conversations import Conversation

# most specific first: handlers are looked up along the exception's class hierarchy
ERROR_STATUS: dict[type[MemvecError], tuple[int, str]] = {
    StoreUnavailableError: (503, "store_unavailable"),
    NotFoundError: (404, "not_found"),
    AgentExistsError: (409, "already_exists"),
    NameTakenError: (409, "already_exists"),
    CoreMemoryError: (409, "core_memory_refused"),
    VersionConflictError: (409, "version_conflict"),
    AgentBusyError: (409, "agent_busy"),
    UnreadableDocumentError: (422, "unreadable_document"),
    InvalidInputError: (400, "bad_request"),
    ModelCallError: (502, "model_error"),
    MemvecError: (500, "internal_error"),
}


def error_kind(exc: MemvecError) -> str:
    """The `error` word memvec answers `exc` with (its most specific entry in ERROR_STATUS)."""
    return next(kind for error_type, (_, kind) in ERROR_STATUS.items() if isinstance(exc, error_type))


def api_router(**settings: Any) -> APIRouter:
    """A route module's router: memvec's error body documented on every route (schemathesis holds the
    answers to it), bodies read off the event loop (memvec.service.body) and the routes that qualify
    answered directly (memvec.service.direct)."""
    return APIRouter(route_class=ServiceRoute, responses=ERROR_RESPONSES, **settings)


class ServiceRoute(OffLoopBodyRoute):
    def get_route_handler(self) -> Handler:
        direct = None if self.dependencies else direct_handler(self.endpoint, DIRECT_RESOLVERS)
        return direct or super().get_route_handler()


AgentId = Annotated[str, Path(pattern=AGENT_PATTERN, description="the agent's id (`agent-<uuid>`) or its handle")]
BlockLabel = Annotated[str, Path(pattern=LABEL_PATTERN, description="a core block's label")]


class AgentSlots:
    """One conversation request at a time per agent in this process, waited for on the event loop
    (no worker thread is held while waiting) and for at most `wait_s`, as long as the store lease
    waits across servers; then AgentBusyError (409 `agent_busy` with Retry-After). A slot belongs to
    one event loop (a server has one; a test client may run several): the store lease, taken inside
    the slot, is what excludes across loops, processes and servers."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        # (event loop, agent) -> (its lock, requests holding or waiting for it)
        self._locks: dict[tuple[int, str], tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, agent: str) -> AsyncIterator[None]:
        slot = (id(asyncio.get_running_loop()), agent)
        lock, users = self._locks.get(slot, (asyncio.Lock(), 0))
        self._locks[slot] = (lock, users + 1)
        try:
            try:
                await asyncio.wait_for(lock.acquire(), self.wait_s)
            except TimeoutError:
                raise AgentBusyError(
                    f"agent {agent!r} is busy with another message (waited {self.wait_s:g} s); send it again"
                ) from None
            try:
                yield
            finally:
                lock.release()
        finally:
            lock, users = self._locks[slot]
            if users == 1:
                del self._locks[slot]
            else:
                self._locks[slot] = (lock, users - 1)


class ServiceState:
    """What every request shares: the memory home, the key ring and one slot per agent's conversation."""

    def __init__(self, memory: Memory, keys: KeyRing) -> None:
        self.memory, self.keys = memory, keys
        # set when the server was asked to stop: /v1/health answers 503 so a balancer drains it, while
        # requests are still served until the listener closes
        self.draining = threading.Event()
        self.slots = AgentSlots(memory.config.lease_wait_s)
        self.searches = SearchLane()

    def agent_slot(self, agent: str) -> AbstractAsyncContextManager[None]:
        """Hold the agent's slot in this process (see AgentSlots); the store lease is taken inside."""
        return self.slots.hold(agent)


# The dependencies every request resolves are async: a sync one would cost a hop to a worker thread
# and back for a dictionary lookup.
async def state_of(request: Request) -> ServiceState:
    service: ServiceState = request.app.state.service
    return service


async def caller(request: Request) -> Principal:
    service: ServiceState = request.app.state.service
    principal = service.keys.principal_of_header(request.headers.get("authorization"))
    if principal is None:
        raise HTTPException(401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"})
    return principal


Caller = Annotated[Principal, Depends(caller)]
Service = Annotated[ServiceState, Depends(state_of)]


def in_scope(agent_id: str, principal: Principal) -> None:
    """404 when the caller's key may not see the agent, before any store read (as if it did not exist)."""
    if not principal.may_see(agent_id):
        raise NotFoundError(f"agent {agent_id!r} not found")


def scoped_handle(agent_id: str, principal: Principal, service: ServiceState) -> str:
    """The handle of the agent `agent_id` names (its Letta id, or its handle), once the caller's key
    may see it: 404 for an id no agent has and for an agent the key may not see, the same answer (a
    handle's agent is read by the route, which answers 404 when there is none)."""
    handle = service.memory.find_agent(agent_id)
    if handle is None:
        raise NotFoundError(f"agent {agent_id!r} not found")
    in_scope(handle, principal)
    return handle


async def scoped_agent(agent_id: AgentId, principal: Caller, service: Service) -> str:
    """`scoped_handle` as the dependency of every route with an agent in its path (ScopedAgent;
    tests/test_scopes.py fails on one that does not). Only a Letta id is looked up in the store, on
    a worker thread; a handle names itself (Memory.find_agent reads nothing for it)."""
    if re.fullmatch(AGENT_ID_PATTERN, agent_id):
        return await run_in_threadpool(scoped_handle, agent_id, principal, service)
    return scoped_handle(agent_id, principal, service)


ScopedAgent = Annotated[str, Depends(scoped_agent)]
_AGENT_IN_PATH = TypeAdapter(Annotated[str, StringConstraints(pattern=AGENT_PATTERN)])


async def _direct_agent(resolved: Resolved) -> str:
    """`scoped_agent` for a route answered directly, its path parameter checked as FastAPI checks it."""
    try:
        agent_id = _AGENT_IN_PATH.validate_python(resolved.request.path_params["agent_id"])
    except ValidationError as exc:
        errors = [{**error, "loc": ("path", "agent_id")} for error in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None
    return await scoped_agent(agent_id, await resolved.value(caller), await resolved.value(state_of))


DIRECT_RESOLVERS: dict[Callable[..., Any], Resolver] = {
    state_of: lambda resolved: state_of(resolved.request),
    caller: lambda resolved: caller(resolved.request),
    scoped_agent: _direct_agent,
}


def visible_agent(agent_id: str, principal: Principal, service: ServiceState) -> tuple[AgentSettings, AgentState]:
    """The agent's settings and state, or 404 when it does not exist or the caller may not see it."""
    in_scope(agent_id, principal)
    return service.memory.get_agent(agent_id)


def visible_conversation(conversation_id: str, principal: Principal, service: ServiceState) -> Conversation:
    """The conversation, or 404 when there is none or its agent is not the caller's to see."""
    conversation = service.memory.conversations().get(conversation_id)
    if not principal.may_see(conversation.agent):
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    return conversation


def visible_settings(principal: Principal, service: ServiceState) -> Iterator[AgentSettings]:
    """The settings of every agent the caller's key may see (for listings across agents)."""
    for handle in service.memory.agents():
        if principal.may_see(handle):
            yield service.memory.get_agent(handle)[0]


def unscoped(principal: Principal, what: str, why: str) -> None:
    """403 for a key scoped to some agents: `what` touches something that belongs to no one agent."""
    if principal.agents is not None:
        raise HTTPException(403, f"{what} needs an unscoped key: {why}")


def may_import(principal: Principal, memory: Memory, plan: ImportPlan) -> None:
    """403 unless the key may create every agent of the plan and already holds, through its agents,
    every shared block the plan names: import would otherwise attach a block the key cannot see, or
    create one (both need an unscoped key, as `POST /v1/blocks` and attach do)."""
    for target in plan.targets:
        if not principal.may_see(target):
            raise HTTPException(403, f"this key may not create agent {target!r}")
    if principal.agents is None:
        return
    for doc in plan.exports:
        for block in doc.shared_blocks:
            try:
                holders = set(memory.shared_blocks().get(block.id).agents)
            except NotFoundError:
                holders = set()
            if not principal.agents & holders:  # one answer for absent and not held: no probing ids
                raise HTTPException(
                    403,
                    f"this key may not import shared block {block.id!r}: none of its agents holds it "
                    "(creating or attaching a block it does not hold needs an unscoped key)",
                )


def json_response(body: BaseModel) -> Response:
    """`body` as JSON in one pass of its own serializer. Returned as it is, a model is dumped,
    validated again against the route's response model (on a second worker thread for a sync
    route) and encoded: three passes and a thread hop on the hot path, for the same bytes."""
    return Response(body.model_dump_json(), media_type="application/json")


def cursor(value: str | None) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", value):  # ASCII digits only: str.isdigit also takes '²' and '٣'
        raise InvalidInputError(f"cursor {value!r} is not a record id (digits)")
    return int(value)
