"""The HTTP service: a Letta-style REST API over one memory home (`memvec serve`).

Every route but /v1/health needs `Authorization: Bearer KEY` when keys are configured; an agent a
key may not see answers 404, exactly like an agent that does not exist. Errors are JSON:
`{"error": kind, "detail": ...}`; malformed input is a 4xx, never a 500.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.telemetry import TelemetryConfig
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from memvec.errors import (
    ModelCallError,
)
from memvec.memory import Memory
from memvec.service import (
    docs_pages,
    routes_agent_files,
    routes_agents,
    routes_blocks,
    routes_context,
    routes_conversations,
    routes_export,
    routes_folders,
    routes_health,
    routes_memory,
    routes_message_search,
    routes_messages,
    routes_metrics,
    routes_models,
    routes_passages,
    routes_runs,
    routes_tags,
    routes_tools,
    ui,
)
from memvec.service.access_log import AccessLog
from memvec.service.auth import KeyRing
from memvec.service.deps import ERROR_STATUS, ServiceState
from memvec.service.error_schema import ERROR_RESPONSES
from memvec.service.fairness import MAX_IN_FLIGHT_PER_KEY, FairShare
from memvec.service.front import (
    ADMITTED,
    BODY_TIMEOUT_S,
    NO_RETRY,
    RETRY_AFTER_S,
    SMALL_BODY_BYTES,
    Admission,
    FrontDoor,
    Gate,
    Refusal,
    header,
)
from memvec.service.origin import foreign_origin, foreign_request
from memvec.telemetry.metrics import STORE_UNAVAILABLE
from memvec.types import VERSION, describe_validation_error

API_DESCRIPTION = """Vector-search memory for LLM agents: core, recall and archival tiers with citations.

The `/v1` routes take Letta's shapes, so the official `letta-client` works unchanged for agents,
core-memory blocks, shared blocks (`/v1/blocks`), passages, messages, folders of files and agent-file
import. Agent ids are agent names; passage and message ids are record ids as strings. memvec-only:
`recall-memory/search`, batch passage insert, search filters and fusion parameters, the export with
embeddings. Replies stream as Server-Sent Events (`streaming: true`, `/messages/stream`,
`stream_tokens`). Not served: async runs, tools, identities, groups, templates."""
log = logging.getLogger("memvec.service")
# FastAPI's own OpenTelemetry spans carry the query string (a search's text) and its logs the
# rejected input: memvec's request span (access_log) and /metrics replace them, bounded and without
# either
NO_FRAMEWORK_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
MAX_REPORTED_ERRORS = 20  # of a body's validation errors; the rest are counted


def _error(status: int, kind: str, detail: Any, request: Request | None = None) -> Response:
    if request is not None and ui.is_ui(request):  # the browser's pages get their errors as a page
        return ui.error_page(request, status, kind, detail)
    headers = {"x-should-retry": "false"} if status in NO_RETRY else None
    return JSONResponse({"error": kind, "detail": detail}, status_code=status, headers=headers)


def _memvec_error_handler(status: int, kind: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def handle(request: Request, exc: Exception) -> Response:
        detail = str(exc)
        if isinstance(exc, ModelCallError):  # the provider's own words stay in the log
            log.warning("%s %s: %s", request.method, request.url.path, exc)
            detail = exc.public
        response = _error(status, kind, detail, request)
        if status == 503:
            STORE_UNAVAILABLE.inc()
        if status == 503 or kind == "agent_busy":  # the database is down, or another server is replying
            response.headers["Retry-After"] = str(RETRY_AFTER_S)  # for this agent: try again soon
            response.headers["x-should-retry"] = "true"
        return response

    return handle


# a /v1 path made of plain segments (no `..`, nothing a route's ids could not hold): the shape of a
# route; anything else no route matches is a bad path (404)
ROUTE_LIKE = re.compile(r"/v1(?:/(?!\.\.?(?:/|$))[A-Za-z0-9_.~-]{1,200}){1,8}/?")


def _not_served(request: Request) -> Response:
    """A /v1 path no route matches: part of Letta's API memvec does not serve (or a typo), said as
    such (501), not as a 404 that reads like a wrong id."""
    detail = (
        f"memvec does not serve {request.method} {request.url.path[:200]}: see GET /openapi.json for what it "
        "serves, and docs/integrations.md for how Letta's API maps onto it"
    )
    return _error(501, "not_served", detail, request)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        found = exc.errors()  # a list already made; only the first few are written out, on the event loop
        errors = [{"loc": list(e.get("loc", [])), "msg": e.get("msg", "")} for e in found[:MAX_REPORTED_ERRORS]]
        if len(found) > MAX_REPORTED_ERRORS:
            errors.append({"loc": [], "msg": f"and {len(found) - MAX_REPORTED_ERRORS} more errors"})
        return _error(422, "invalid_request", errors, request)

    @app.exception_handler(ValidationError)
    async def invalid_value(request: Request, exc: ValidationError) -> Response:
        return _error(422, "invalid_request", describe_validation_error(exc), request)

    for error_type, (status, kind) in ERROR_STATUS.items():
        app.add_exception_handler(error_type, _memvec_error_handler(status, kind))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404 and "endpoint" not in request.scope and ROUTE_LIKE.fullmatch(request.url.path):
            return _not_served(request)
        kind = "unauthorized" if exc.status_code == 401 else "http_error"
        response = _error(exc.status_code, kind, exc.detail, request)
        response.headers.update(exc.headers or {})
        return response


# readable without a key: readiness for load balancers, and the API's own description; the memory
# browser's pages (/ui) check their session cookie themselves and send the browser to sign in
OPEN_PATHS = frozenset({"/", "/v1/health", "/docs", "/redoc", "/openapi.json"})


NO_BODY = Admission(max_body_bytes=0)
SMALL_BODY = Admission(max_body_bytes=SMALL_BODY_BYTES)


def key_gate(keys: KeyRing, *, allowed_hosts: frozenset[str] = frozenset()) -> Gate:
    """Decided before the body is read: a keyless server's foreign hosts and origins (403), a missing
    key (401) for every path but the open ones (agent scopes are checked per route), and how much body
    the request may bring: none to the open paths, a sign-in form's worth to the browser's pages
    without a session, the full limit to a caller with a key (or any caller of a keyless server)."""
    allowed_hosts = frozenset(h.lower() for h in allowed_hosts)  # once, not per request

    def gate(scope: Scope) -> Refusal | Admission:
        path = scope["path"]
        if path in OPEN_PATHS or path.startswith(docs_pages.STATIC_PREFIX + "/"):
            return (keys.open and foreign_request(scope, allowed_hosts)) or NO_BODY
        if keys.open:
            return foreign_request(scope, allowed_hosts) or ADMITTED
        if ui.is_ui_path(path):  # forms authenticated by a cookie: another origin may not post them
            refusal = foreign_origin(scope)
            return refusal or (ADMITTED if ui.has_session(keys, header(scope, b"cookie")) else SMALL_BODY)
        if keys.principal_of_header(header(scope, b"authorization")) is None:
            return Refusal(401, "unauthorized", "missing or invalid API key")
        return ADMITTED

    return gate


# in the order they are matched: a path two routers could match goes to the first
ROUTERS = (
    routes_health.router,
    docs_pages.router,
    routes_agents.router,
    routes_agent_files.router,
    routes_blocks.router,
    routes_context.router,
    routes_conversations.router,
    routes_folders.router,
    routes_memory.router,
    routes_export.router,
    routes_message_search.router,
    routes_messages.router,
    routes_metrics.router,
    routes_models.router,
    routes_passages.router,
    routes_runs.router,
    routes_tags.router,
    routes_tools.router,
    ui.router,
    *ui.PAGES,
)


# matched first: Starlette tries the routes in order, and a search is the request a server answers most (a
# path only these routes match goes to them wherever they stand, so this changes no answer)
SEARCH_PATHS = frozenset({"/v1/agents/{agent_id}/archival-memory/search", "/v1/agents/{agent_id}/recall-memory/search"})


def add_router(app: FastAPI, router: APIRouter) -> None:
    """The router's routes, as they were built when declared. Not `include_router`: FastAPI 0.165 builds
    an included router's parameters again at the first request, and concurrent first requests race
    on shared `Annotated` parameters (pydantic warns; the warning is an error in a request thread).
    So each router declares its own error responses (ERROR_RESPONSES), prefix and tags."""
    app.router.routes.extend(router.routes)


def create_app(
    memory: Memory,
    keys: KeyRing | None = None,
    *,
    allowed_hosts: frozenset[str] = frozenset(),
    body_timeout_s: float = BODY_TIMEOUT_S,
    max_in_flight_per_key: int = MAX_IN_FLIGHT_PER_KEY,
) -> FastAPI:
    """The service over `memory`. `allowed_hosts`: Host names a keyless server answers besides
    loopback ones (memvec.service.origin); `body_timeout_s`: how long a request's body may take (408);
    `max_in_flight_per_key`: one key's requests served at once (429 past it; memvec.service.fairness)."""
    # indexes are saved by whoever runs the app (memvec serve: service.server.serve_http) when it stops
    app = FastAPI(
        title="memvec",
        version=VERSION,
        responses=ERROR_RESPONSES,
        description=API_DESCRIPTION,
        docs_url=None,
        redoc_url=None,  # docs_pages serves them
        telemetry=NO_FRAMEWORK_TELEMETRY,
    )
    app.state.service = ServiceState(memory, keys or KeyRing({}))
    install_error_handlers(app)
    app.add_middleware(
        FrontDoor, gate=key_gate(app.state.service.keys, allowed_hosts=allowed_hosts), body_timeout_s=body_timeout_s
    )
    app.add_middleware(FairShare, keys=app.state.service.keys, limit=max_in_flight_per_key)
    app.add_middleware(AccessLog, keys=app.state.service.keys)  # outermost: every request, refused ones too
    ui.install(app)
    for router in ROUTERS:
        add_router(app, router)
    app.router.routes.sort(
        key=lambda route: getattr(route, "path", None) not in SEARCH_PATHS
    )  # stable: the rest keep their order
    return app
