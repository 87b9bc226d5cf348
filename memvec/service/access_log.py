"""One log line per request (logger `memvec.access`, INFO): method, route template, status,
duration, request id and the key's id (never the key, the query string or the body); and the
request's count and duration in memvec.telemetry.metrics, and its span (memvec.telemetry.tracing).

The request id is the caller's `X-Request-ID` when it is a plain token (letters, digits, `._:-`, at
most 128), else a new one; it is sent back in the response's `X-Request-ID` and set for every line
logged while the request is served (memvec.telemetry.logs.REQUEST_ID)."""

from __future__ import annotations

import logging
import re
import time
import uuid
from http import HTTPStatus
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvec.service.auth import KeyRing
from memvec.service.front import header
from memvec.telemetry.logs import REQUEST_ID
from memvec.telemetry.metrics import HTTP_REQUESTS, HTTP_SECONDS
from memvec.telemetry.tracing import request_span

access = logging.getLogger("memvec.access")
_PLAIN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def request_id_of(scope: Scope) -> str:
    offered = header(scope, b"x-request-id")
    return offered if offered and _PLAIN_ID.fullmatch(offered) else uuid.uuid4().hex


# the methods a metric label, span name or log line may carry: anything else a client sends is "other",
# so keyless clients inventing methods cannot grow the series without bound (OpenTelemetry's `_OTHER`)
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"})
KNOWN_STATUSES = frozenset(str(status.value) for status in HTTPStatus)


def method_of(scope: Scope) -> str:
    method = str(scope["method"])
    return method if method in KNOWN_METHODS else "other"


def status_label(status: int) -> str:
    """The status code when it is a standard one (every code this server answers), else "other"."""
    code = str(status)
    return code if code in KNOWN_STATUSES else "other"


def route_of(scope: Scope) -> str:
    """The matched route's template (`/v1/agents/{agent_id}`): bounded, unlike the path itself."""
    route = scope.get("route")
    return getattr(route, "path", None) or "(no route)"


def _trace_headers(scope: Scope) -> dict[str, str]:
    return {
        name: value for name in ("traceparent", "tracestate") if (value := header(scope, name.encode())) is not None
    }


def _name_span(current: Any, method: str, route: str, status: int) -> None:
    """The request's span, named by its route once routing has found it (OpenTelemetry's HTTP naming)."""
    if current is None:
        return
    current.update_name(f"{method} {route}")
    current.set_attribute("http.route", route)
    current.set_attribute("http.response.status_code", status)


class AccessLog:
    """Outermost: sees every request, refused ones included."""

    def __init__(self, app: ASGIApp, *, keys: KeyRing) -> None:
        self.app, self.keys = app, keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id, method = request_id_of(scope), method_of(scope)
        token = REQUEST_ID.set(request_id)
        started, status = time.perf_counter(), 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
            await send(message)

        with request_span(
            f"HTTP {method}",
            _trace_headers(scope),
            **{"http.request.method": method, "memvec.request_id": request_id},
        ) as current:
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                seconds, route = time.perf_counter() - started, route_of(scope)
                _name_span(current, method, route, status)
                HTTP_REQUESTS.labels(method, route, status_label(status)).inc()
                HTTP_SECONDS.labels(method, route).observe(seconds)
                if access.isEnabledFor(logging.INFO):
                    self._log(scope, method, route, status, seconds)
                REQUEST_ID.reset(token)

    def _log(self, scope: Scope, method: str, route: str, status: int, seconds: float) -> None:
        principal = None if self.keys.open else self.keys.principal_of_header(header(scope, b"authorization"))
        client = scope.get("client")
        access.info(
            "%s %s %s",
            method,
            route,
            status or "(no response)",
            extra={
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round(1000 * seconds, 2),
                "key_id": principal.key_id if principal else "-",
                "client": client[0] if client else "-",
            },
        )
