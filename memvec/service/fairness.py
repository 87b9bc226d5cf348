"""Fair sharing among the keys of one server: at most `limit` requests of one key in flight at once.

Every request that is being served holds a worker thread or a slot of the event loop; without a cap,
one tenant's burst (a loop sending hundreds of searches, a flood of messages) would take all of them
and every other key would wait. A request past its key's cap is answered 429 with Retry-After at
once, before its body is read. Requests without a valid key are not counted here: the front door
refuses them for the price of reading their headers. A keyless server has one tenant and no cap.
"""

from __future__ import annotations

from collections import Counter

from starlette.types import ASGIApp, Receive, Scope, Send

from memvec.service.auth import KeyRing
from memvec.service.front import RETRY_AFTER_S, Refusal, header, send_refusal

MAX_IN_FLIGHT_PER_KEY = 16


class FairShare:
    def __init__(self, app: ASGIApp, *, keys: KeyRing, limit: int = MAX_IN_FLIGHT_PER_KEY) -> None:
        self.app, self.keys, self.limit = app, keys, limit
        self.in_flight: Counter[str] = Counter()  # key id -> requests being served (one event loop: no lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        tenant = self._tenant(scope) if scope["type"] == "http" and not self.keys.open else None
        if tenant is None:
            await self.app(scope, receive, send)
            return
        if self.in_flight[tenant] >= self.limit:
            await send_refusal(
                send,
                Refusal(
                    429, "too_many_requests", f"this key has {self.limit} requests in flight already; retry shortly"
                ),
                retry_after=RETRY_AFTER_S,
            )
            return
        self.in_flight[tenant] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight[tenant] -= 1
            if not self.in_flight[tenant]:
                del self.in_flight[tenant]

    def _tenant(self, scope: Scope) -> str | None:
        principal = self.keys.principal_of_header(header(scope, b"authorization"))
        return principal.key_id if principal is not None else None
