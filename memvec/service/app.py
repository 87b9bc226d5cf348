"""The HTTP service: a Letta-style REST API over one memory home (`memvec serve`).

Every route but /v1/health needs `Authorization: Bearer KEY` when keys are configured; an agent a
key may not see answers 404, exactly like an agent that does not exist. Errors are JSON:
`{"error": kind, "detail": ...}`; malformed input is a 4xx, never a 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from memvec.errors import (
    AgentBusyError,
    AgentExistsError,
    CoreMemoryError,
    InvalidInputError,
    MemvecError,
    ModelCallError,
    NotFoundError,
    StoreUnavailableError,
    VersionConflictError,
)
from memvec.memory import Memory
from memvec.service import routes_agents, routes_memory, routes_messages, ui
from memvec.service.auth import KeyRing
from memvec.service.deps import Service, ServiceState
from memvec.service.front import NO_RETRY, FrontDoor, Gate, Refusal, header
from memvec.service.schemas import ErrorOut, Health
from memvec.types import describe_validation_error

API_DESCRIPTION = """Vector-search memory for LLM agents: core, recall and archival tiers with citations.

The `/v1` routes take Letta's shapes, so the official `letta-client` works unchanged for agents,
core-memory blocks, passages, messages and agent-file import. Agent ids are agent names; passage and
message ids are record ids as strings. memvec-only: `recall-memory/search`, batch passage insert,
search filters and fusion parameters, the export with embeddings. Not served: streaming, async runs,
tools, sources/folders, identities, groups, templates, `/v1/blocks`."""
RETRY_AFTER_S = 1


def _error(status: int, kind: str, detail: Any, request: Request | None = None) -> Response:
    if request is not None and ui.is_ui(request):  # the browser's pages get their errors as a page
        return ui.error_page(request, status, kind, detail)
    headers = {"x-should-retry": "false"} if status in NO_RETRY else None
    return JSONResponse({"error": kind, "detail": detail}, status_code=status, headers=headers)


# most specific first: handlers are looked up along the exception's class hierarchy
ERROR_STATUS: dict[type[MemvecError], tuple[int, str]] = {
    StoreUnavailableError: (503, "store_unavailable"),
    NotFoundError: (404, "not_found"),
    AgentExistsError: (409, "already_exists"),
    CoreMemoryError: (409, "core_memory_refused"),
    VersionConflictError: (409, "version_conflict"),
    AgentBusyError: (409, "agent_busy"),
    InvalidInputError: (400, "bad_request"),
    ModelCallError: (502, "model_error"),
    MemvecError: (500, "internal_error"),
}


_ERROR_MEANINGS = {
    400: "bad input", 401: "missing or invalid API key", 403: "the key may not create or import this agent",
    404: "no such agent, record or block (or one the key may not see)",
    409: "already exists, a refused core-memory edit, a passage version that is not current, or the agent is "
         "replying on another server (retry)",
    413: "body over 16 MiB", 422: "invalid request",
    502: "the agent's LLM provider failed", 503: "the store is unavailable; retry after Retry-After seconds",
}
# documented on every route: each error is `{"error": kind, "detail": ...}`
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": meaning} for status, meaning in _ERROR_MEANINGS.items()}


def _memvec_error_handler(status: int, kind: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        response = _error(status, kind, str(exc), request)
        if status == 503 or kind == "agent_busy":  # the database is down, or another server is replying
            response.headers["Retry-After"] = str(RETRY_AFTER_S)  # for this agent: try again soon
            response.headers["x-should-retry"] = "true"
        return response

    return handle


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        errors = [{"loc": list(e.get("loc", [])), "msg": e.get("msg", "")} for e in exc.errors()]
        return _error(422, "invalid_request", errors, request)

    @app.exception_handler(ValidationError)
    async def invalid_value(request: Request, exc: ValidationError) -> Response:
        return _error(422, "invalid_request", describe_validation_error(exc), request)

    for error_type, (status, kind) in ERROR_STATUS.items():
        app.add_exception_handler(error_type, _memvec_error_handler(status, kind))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        kind = "unauthorized" if exc.status_code == 401 else "http_error"
        response = _error(exc.status_code, kind, exc.detail, request)
        response.headers.update(exc.headers or {})
        return response


# readable without a key: readiness for load balancers, and the API's own description; the memory
# browser's pages (/ui) check their session cookie themselves and send the browser to sign in
OPEN_PATHS = frozenset({"/", "/v1/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})


def key_gate(keys: KeyRing) -> Gate:
    """401 before the body is read, for every path but the open ones (agent scopes are checked per route)."""
    def gate(scope: Scope) -> Refusal | None:
        path = scope["path"]
        if keys.open or path in OPEN_PATHS or ui.is_ui_path(path):
            return None
        if keys.principal_of_header(header(scope, b"authorization")) is None:
            return Refusal(401, "unauthorized", "missing or invalid API key")
        return None

    return gate


def create_app(memory: Memory, keys: KeyRing | None = None) -> FastAPI:
    # indexes are saved by whoever runs the app (memvec serve: cli_common.serve_http) when it stops
    app = FastAPI(title="memvec", version="0.1.0", responses=ERROR_RESPONSES,
                  description=API_DESCRIPTION)
    app.state.service = ServiceState(memory, keys or KeyRing({}))
    install_error_handlers(app)
    app.add_middleware(FrontDoor, gate=key_gate(app.state.service.keys))
    add_health_route(app)
    routes_agents.add_routes(app)
    routes_memory.add_routes(app)
    routes_messages.add_routes(app)
    ui.add_routes(app)
    return app


def add_health_route(app: FastAPI) -> None:
    @app.get("/v1/health", response_model=Health, tags=["service"],
             responses={503: {"model": Health, "description": "the store is down, or the server is stopping: "
                                                              "not ready for new traffic"}})
    def health(service: Service, response: Response) -> Health:
        """Readiness: 200 while the store answers; 503 with status `unavailable` while it does not, or
        `draining` once the server was asked to stop (it still serves requests until it closes)."""
        memory = service.memory
        usage = memory.index_usage()
        out = Health(status="ok", store=memory.store_location, store_ok=True, model=memory.model_id,
                     auth=not service.keys.open, indexes_loaded=usage.loaded, indexes_budget=usage.budget)
        try:
            out.records, out.agents = memory.totals()
        except StoreUnavailableError:
            out.status, out.store_ok = "unavailable", False
        if service.draining.is_set():
            out.status = "draining"
        if out.status != "ok":
            response.status_code = 503
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return out
