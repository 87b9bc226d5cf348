"""uvicorn's HTTP/1.1 protocol (httptools, its C parser) with a deadline for a request's headers.

uvicorn waits for a request's headers without bound: a client that connects and sends a few bytes
(a slow-loris) holds a connection and its buffers for as long as it likes. Here every connection,
and every keep-alive connection after each response, must deliver the next request's headers within
`HEADER_TIMEOUT_S`, or it is answered 408 and closed. The body's own deadline is the front door's
(memvec.service.front).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_S = 10.0
TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: 84\r\n\r\n"
    b'{"error": "request_timeout", "detail": "the request headers did not arrive in time"}'
)


class HeaderDeadlineHTTP(HttpToolsProtocol):
    header_timeout_s = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._headers_due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._headers_due = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._headers_due is not None:
            self._headers_due.cancel()
            self._headers_due = None

    def _headers_late(self) -> None:
        self._headers_due = None
        waiting_for_headers = self.cycle is None or self.cycle.response_complete
        if waiting_for_headers and not self.transport.is_closing():
            self.transport.write(TIMEOUT_RESPONSE)
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderDeadlineHTTP]:
    """The protocol class with its own deadline (uvicorn takes a class, and builds one per connection)."""
    return type("HeaderDeadlineHTTP", (HeaderDeadlineHTTP,), {"header_timeout_s": seconds})
