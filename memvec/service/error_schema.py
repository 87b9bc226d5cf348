"""The one shape of every error answer, and the errors each route documents in the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorOut(BaseModel):
    """Every error answer: a short kind and the detail (a message, or a list of validation problems)."""

    error: str = Field(description="e.g. not_found, unauthorized, invalid_request, store_unavailable")
    detail: Any


_ERROR_MEANINGS = {
    400: "bad input",
    401: "missing or invalid API key",
    403: "the key may not create or import this agent",
    404: "no such agent, record or block (or one the key may not see)",
    409: "already exists, a refused core-memory edit, a passage version that is not current, or the agent is "
    "replying on another server (retry)",
    408: "the request's headers or body did not arrive in time",
    413: "body over 16 MiB (or over what the route takes: none for bodyless routes, 8 KiB to sign in)",
    422: "invalid request",
    429: "this key has too many requests in flight; retry after Retry-After seconds",
    502: "the agent's LLM provider failed",
    503: "the store is unavailable; retry after Retry-After seconds",
}
# documented on every route: each error is `{"error": kind, "detail": ...}`
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": meaning} for status, meaning in _ERROR_MEANINGS.items()
}
