"""What the route modules share: the service state, the caller's key, path and cursor types.

The routes import from here and `app` imports the routes, so nothing in the service imports in a circle.
"""

from __future__ import annotations

import re
import threading
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request

from memvec.errors import InvalidInputError, NotFoundError
from memvec.memory import Memory
from memvec.service.auth import KeyRing, Principal
from memvec.types import AGENT_PATTERN, AgentSettings, AgentState

AgentId = Annotated[str, Path(pattern=AGENT_PATTERN, description="agent id (= its name)")]


class ServiceState:
    """What every request shares: the memory home, the key ring and one lock per agent's conversation."""

    def __init__(self, memory: Memory, keys: KeyRing) -> None:
        self.memory, self.keys = memory, keys
        # set when the server was asked to stop: /v1/health answers 503 so a balancer drains it, while
        # requests are still served until the listener closes
        self.draining = threading.Event()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def agent_lock(self, agent: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(agent, threading.Lock())


def state_of(request: Request) -> ServiceState:
    service: ServiceState = request.app.state.service
    return service


def caller(request: Request) -> Principal:
    principal = state_of(request).keys.principal_of_header(request.headers.get("authorization"))
    if principal is None:
        raise HTTPException(401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"})
    return principal


Caller = Annotated[Principal, Depends(caller)]
Service = Annotated[ServiceState, Depends(state_of)]


def visible_agent(agent_id: str, principal: Principal, service: ServiceState) -> tuple[AgentSettings, AgentState]:
    """The agent's settings and state, or 404 when it does not exist or the caller may not see it."""
    if not principal.may_see(agent_id):
        raise NotFoundError(f"agent {agent_id!r} not found")
    return service.memory.get_agent(agent_id)


def cursor(value: str | None) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", value):  # ASCII digits only: str.isdigit also takes '²' and '٣'
        raise InvalidInputError(f"cursor {value!r} is not a record id (digits)")
    return int(value)
