"""`GET /v1/health`: readiness for a balancer, and the home's details for a caller with a key."""

from __future__ import annotations

from typing import Literal

from fastapi import Request, Response
from pydantic import BaseModel, Field

from memvec.errors import StoreUnavailableError
from memvec.service.deps import Service, ServiceState, api_router
from memvec.service.front import RETRY_AFTER_S
from memvec.types import VERSION

router = api_router()


class Health(BaseModel):
    """Without a valid key (on a server with keys) only `status` and `auth`: the rest is the operator's."""

    status: Literal["ok", "unavailable", "draining"] = Field(
        description="unavailable: the store cannot be reached; draining: the server is shutting down (both HTTP 503)"
    )
    auth: bool
    version: str | None = Field(default=None, description="memvec's version")
    store: str | None = Field(default=None, description="the store's file or URL (no password)")
    store_ok: bool | None = None
    model: str | None = None
    agents: int | None = Field(default=None, description="None while the store is unavailable")
    records: int | None = None
    indexes_loaded: int | None = Field(default=None, description="(agent, tier) indexes in memory")
    indexes_budget: int | None = Field(default=None, description="the most kept in memory (None: no limit)")


@router.get(
    "/v1/health",
    response_model=Health,
    response_model_exclude_none=True,
    tags=["service"],
    responses={
        503: {"model": Health, "description": "the store is down, or the server is stopping: not ready for new traffic"}
    },
)
def health(request: Request, service: Service, response: Response) -> Health:
    """Readiness: 200 while the store answers; 503 with status `unavailable` while it does not, or
    `draining` once the server was asked to stop (it still serves requests until it closes). Without
    a valid key (where keys are configured) it says only that: the store, model and totals need one."""
    out = Health(status="ok", auth=not service.keys.open)
    if not service.memory.healthy():
        out.status = "unavailable"
    if service.keys.principal_of_header(request.headers.get("authorization")) is not None:
        _add_details(out, service)
    if service.draining.is_set():
        out.status = "draining"
    if out.status != "ok":
        response.status_code = 503
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return out


def _add_details(out: Health, service: ServiceState) -> None:
    memory = service.memory
    usage = memory.index_usage()
    out.store, out.store_ok, out.model = memory.store_location, out.status == "ok", memory.model_id
    out.version = VERSION
    out.indexes_loaded, out.indexes_budget = usage.loaded, usage.budget
    if out.status != "ok":  # the store did not answer: asking it again would only double the wait
        return
    try:
        out.records, out.agents = memory.totals()
    except StoreUnavailableError:
        out.status, out.store_ok = "unavailable", False
