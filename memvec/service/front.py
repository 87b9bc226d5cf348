"""The front door of every memvec HTTP server (the REST service and `memvec mcp --transport http`).

An ASGI wrapper that runs before routing, in this order:
1. the gate: a request without a valid key (where keys are configured and the path is not open) is
   answered 401 before a byte of its body is read, and so is one from a foreign origin (see
   `memvec.service.origin`);
2. the body size, counted as it streams in (`Content-Length` or chunked alike), against the limit
   the gate's `Admission` gives this request (none for a bodyless route, a few KB for sign-in,
   16 MiB for a caller with a key): past it the request is answered 413 at once and the rest is
   never buffered (uvicorn discards it);
3. the body must arrive within `body_timeout_s` (408 otherwise), so a slow client does not hold a slot;
4. JSON bodies are parsed once here with bounded nesting and number of values (`memvec.limits`),
   so a deeply nested, sprawling or non-UTF-8 body is a 422 with a reason instead of a parser
   crash; a large one is parsed in a worker thread, never on the event loop.
The app behind it gets the buffered body replayed, unchanged, and the parsed JSON in the scope
(`memvec.service.body.PARSED_JSON`), so its routes neither parse it again nor validate a large one
on the event loop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvec.limits import MAX_BODY_VALUES, MAX_JSON_DEPTH, JSONLimitError, load_json
from memvec.service.body import PARSED_JSON, ParsedBody

MAX_BODY_BYTES = 16 * 1024 * 1024
SMALL_BODY_BYTES = 8 * 1024  # what a caller without a key may send where one is taken (the sign-in form)
BODY_TIMEOUT_S = 30.0
THREAD_PARSE_BYTES = 64 * 1024  # JSON larger than this is parsed off the event loop
NO_RETRY = frozenset({400, 401, 403, 404, 409, 413, 422, 501, 502})  # what a retry cannot fix
RETRY_AFTER_S = 1  # what a busy agent, a down store or a key at its cap tell the client to wait


@dataclass(frozen=True)
class Refusal:
    status: int
    kind: str
    detail: str


@dataclass(frozen=True)
class Admission:
    """The request may go on, with a body of at most `max_body_bytes` (0: it takes none)."""

    max_body_bytes: int = MAX_BODY_BYTES


ADMITTED = Admission()
Gate = Callable[[Scope], Refusal | Admission]  # decides on the method, path and headers alone


def header(scope: Scope, name: bytes) -> str | None:
    """A request header by its lower-case name (None: absent)."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _is_json(scope: Scope) -> bool:
    media = (header(scope, b"content-type") or "").partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def send_refusal(send: Send, refusal: Refusal, *, retry_after: int | None = None) -> None:
    """`{"error": kind, "detail": ...}` with the status, as every memvec error is shaped."""
    body = json.dumps({"error": refusal.kind, "detail": refusal.detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if retry_after is not None:
        headers += [(b"retry-after", str(retry_after).encode()), (b"x-should-retry", b"true")]
    if refusal.status in NO_RETRY:
        headers.append((b"x-should-retry", b"false"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class FrontDoor:
    """Gate, streaming body limit and timeout, and bounded JSON in front of an ASGI app (see the module)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        gate: Gate,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_json_depth: int = MAX_JSON_DEPTH,
        body_timeout_s: float = BODY_TIMEOUT_S,
    ) -> None:
        self.app, self.gate = app, gate
        self.max_body_bytes, self.max_json_depth = max_body_bytes, max_json_depth
        self.body_timeout_s = body_timeout_s
        self._large_bodies: anyio.CapacityLimiter | None = None  # made on the event loop, at first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        _without_trailing_slash(scope)
        decision = self.gate(scope)
        if isinstance(decision, Refusal):
            await send_refusal(send, decision)
            return
        limit = min(decision.max_body_bytes, self.max_body_bytes)
        body, refusal = b"", _declared_too_large(scope, limit)
        if refusal is None:
            body, refusal = await self._read_body(receive, limit)
        if refusal is None and body and _is_json(scope):
            refusal = await self._parse_json(body, scope)
        if refusal is not None:
            await send_refusal(send, refusal)
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read_body(self, receive: Receive, limit: int) -> tuple[bytes, Refusal | None]:
        with anyio.move_on_after(self.body_timeout_s):
            return await _read_within(receive, limit)
        return b"", Refusal(408, "request_timeout", f"the request body did not arrive within {self.body_timeout_s:g} s")

    async def _parse_json(self, body: bytes, scope: Scope) -> Refusal | None:
        large = len(body) > THREAD_PARSE_BYTES
        if large and self._large_bodies is None:
            self._large_bodies = anyio.CapacityLimiter(1)
        limiter = self._large_bodies if large else None

        def parse() -> Refusal | None:
            try:
                parsed = load_json(
                    body, max_depth=self.max_json_depth, max_values=MAX_BODY_VALUES, what="the request body"
                )
            except JSONLimitError as exc:
                return Refusal(422, "invalid_request", str(exc))
            scope[PARSED_JSON] = ParsedBody(parsed, large, limiter)
            return None

        return await anyio.to_thread.run_sync(parse, limiter=limiter) if large else parse()


def _without_trailing_slash(scope: Scope) -> None:
    """`/v1/agents/` is `/v1/agents`: Letta's SDKs call the API with the slash, and the router's 307
    to the other spelling cost every such call a second round trip (a POST's body sent twice)."""
    path = scope["path"]
    if path.startswith("/v1/") and path.endswith("/") and len(path) > len("/v1/"):
        scope["path"] = path.rstrip("/")
        if isinstance(scope.get("raw_path"), bytes):
            scope["raw_path"] = scope["raw_path"].rstrip(b"/")


def _too_large(limit: int) -> Refusal:
    if limit == 0:
        return Refusal(413, "payload_too_large", "this route takes no request body")
    return Refusal(413, "payload_too_large", f"request bodies are limited to {limit} bytes here")


def _declared_too_large(scope: Scope, limit: int) -> Refusal | None:
    """Judged on the headers alone: a declared length over the limit, or any chunked body where none is taken."""
    length = header(scope, b"content-length")
    if length is None:
        chunked = "chunked" in (header(scope, b"transfer-encoding") or "").lower()
        return _too_large(limit) if chunked and limit == 0 else None
    if not re.fullmatch(r"[0-9]{1,19}", length.strip()):
        return Refusal(400, "bad_request", "Content-Length is not a number")
    return _too_large(limit) if int(length) > limit else None


async def _read_within(receive: Receive, limit: int) -> tuple[bytes, Refusal | None]:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to answer
            return b"", Refusal(400, "bad_request", "the client disconnected")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the buffered body, then whatever the client sends next (disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
