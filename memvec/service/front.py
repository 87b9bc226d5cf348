"""The front door of every memvec HTTP server (the REST service and `memvec mcp --transport http`).

An ASGI wrapper that runs before routing, in this order:
1. the key: a request without a valid key (where keys are configured and the path is not open) is
   answered 401 before a byte of its body is read;
2. the body size, counted as it streams in (`Content-Length` or chunked alike): past the limit the
   request is answered 413 at once and the rest is never buffered (uvicorn discards it);
3. JSON bodies are parsed once here with bounded nesting (`memvec.limits`), so a deeply nested or
   non-UTF-8 body is a 422 with a reason instead of a parser crash.
The app behind it gets the buffered body replayed, unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memvec.limits import MAX_JSON_DEPTH, JSONLimitError, load_json

MAX_BODY_BYTES = 16 * 1024 * 1024
NO_RETRY = frozenset({400, 401, 403, 404, 409, 413, 422, 502})  # what a retry cannot fix


@dataclass(frozen=True)
class Refusal:
    status: int
    kind: str
    detail: str


Gate = Callable[[Scope], Refusal | None]  # decides on the method, path and headers alone


def header(scope: Scope, name: bytes) -> str | None:
    """A request header by its lower-case name (None: absent)."""
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _is_json(scope: Scope) -> bool:
    media = (header(scope, b"content-type") or "").partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def send_refusal(send: Send, refusal: Refusal) -> None:
    """`{"error": kind, "detail": ...}` with the status, as every memvec error is shaped."""
    body = json.dumps({"error": refusal.kind, "detail": refusal.detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if refusal.status in NO_RETRY:
        headers.append((b"x-should-retry", b"false"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class FrontDoor:
    """Key check, streaming body limit and bounded JSON in front of an ASGI app (see the module)."""

    def __init__(self, app: ASGIApp, *, gate: Gate, max_body_bytes: int = MAX_BODY_BYTES,
                 max_json_depth: int = MAX_JSON_DEPTH) -> None:
        self.app, self.gate = app, gate
        self.max_body_bytes, self.max_json_depth = max_body_bytes, max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.gate(scope) or self._declared_too_large(scope)
        body = b""
        if refusal is None:
            body, refusal = await self._read_body(receive)
        if refusal is None and body and _is_json(scope):
            refusal = self._check_json(body)
        if refusal is not None:
            await send_refusal(send, refusal)
            return
        await self.app(scope, _replay(body, receive), send)

    def _too_large(self) -> Refusal:
        return Refusal(413, "payload_too_large", f"request bodies are limited to {self.max_body_bytes} bytes")

    def _declared_too_large(self, scope: Scope) -> Refusal | None:
        length = header(scope, b"content-length")
        if length is None:
            return None
        if not re.fullmatch(r"[0-9]{1,19}", length.strip()):
            return Refusal(400, "bad_request", "Content-Length is not a number")
        return self._too_large() if int(length) > self.max_body_bytes else None

    async def _read_body(self, receive: Receive) -> tuple[bytes, Refusal | None]:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return b"", Refusal(400, "bad_request", "the client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return b"", self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks), None

    def _check_json(self, body: bytes) -> Refusal | None:
        try:
            load_json(body, max_depth=self.max_json_depth, what="the request body")
        except JSONLimitError as exc:
            return Refusal(422, "invalid_request", str(exc))
        return None


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
