"""Request bodies reach a route already parsed, and a large one already validated, off the event loop.

The front door (`memvec.service.front`) parses every JSON body once, in a worker thread when it is
large, and leaves the result in the scope under `PARSED_JSON`. FastAPI would parse the bytes again
and validate the result against the route's body model on the event loop: for a 16 MiB body that is
seconds in which no other request of the server is answered. `OffLoopBodyRoute` hands FastAPI the
front door's parse, and for a large body validates it in a worker thread first; FastAPI then gets the
validated model, which pydantic accepts as it is (instances are not re-validated), so the loop pays
for neither. Every route of the service is one (`create_app` sets it as the app's route class).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi import params
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

PARSED_JSON = "memvec.parsed_json"  # scope key of a ParsedBody


@dataclass(frozen=True)
class ParsedBody:
    """What the front door parsed. `large`: parsed in a worker thread under `limiter`, one such body at
    a time: parsing holds the interpreter's lock, so two at once would only add to the loop's wait."""

    value: Any
    large: bool
    limiter: anyio.CapacityLimiter | None = None


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class OffLoopBodyRoute(APIRoute):
    """An APIRoute whose JSON body is parsed by the front door and, when large, validated in a thread."""

    def get_route_handler(self) -> Handler:
        handle = super().get_route_handler()
        body_field = self.body_field
        if self._embed_body_fields or (body_field is not None and isinstance(body_field.field_info, params.Form)):
            body_field = None  # validated field by field, or a form: left to FastAPI

        async def handle_parsed(request: Request) -> Response:
            parsed = request.scope.get(PARSED_JSON)
            if isinstance(parsed, ParsedBody):
                value = parsed.value
                if parsed.large and body_field is not None:
                    value = await anyio.to_thread.run_sync(_validated, body_field, value, limiter=parsed.limiter)
                # Starlette's Request.json() returns what it cached here instead of parsing the body again
                request._json = value  # noqa: SLF001 (Starlette documents no setter)
            return await handle(request)

        return handle_parsed


def _validated(body_field: Any, value: Any) -> Any:
    validated, errors = body_field.validate(value, {}, loc=("body",))
    if errors:
        raise RequestValidationError(errors, body=None)
    return validated
