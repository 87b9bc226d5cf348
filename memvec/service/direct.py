"""Routes answered without FastAPI's per-request dependency solving, where that solving is the cost.

FastAPI works out each parameter of a route again on every request (what kind of annotation it has,
whether it is a list, where its value comes from): for a search route with twenty query parameters
that took longer than the rest of the HTTP layer together. A route qualifies when its endpoint is a
coroutine and every parameter is either one of the dependencies handed in (the service, the caller,
the agent of the path: each resolved once per request, by the same functions FastAPI would call) or
one pydantic model of the query string (`Annotated[Model, Query()]`). Such a route's plan is made
once, when the route is built; a request validates its query string in one pass of the model and
goes straight to the endpoint. Every other route is left to FastAPI. A failed validation raises
FastAPI's own RequestValidationError with the locations FastAPI gives (`["query", "top_k"]`), so the
answer is the same 422 either way.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import params
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

Resolver = Callable[["Resolved"], Awaitable[Any]]
Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class Resolved:
    """One request's dependencies, each resolved once, when first asked for."""

    def __init__(self, request: Request, resolvers: Mapping[Callable[..., Any], Resolver]) -> None:
        self.request, self._resolvers = request, resolvers
        self._values: dict[Callable[..., Any], Any] = {}

    async def value(self, dependency: Callable[..., Any]) -> Any:
        if dependency not in self._values:
            self._values[dependency] = await self._resolvers[dependency](self)
        return self._values[dependency]


@dataclass(frozen=True)
class QueryModel:
    model: type[BaseModel]
    lists: frozenset[str]  # fields whose every value is taken (`?tags=a&tags=b`)

    def parse(self, request: Request) -> BaseModel:
        query = request.query_params
        fields = self.model.model_fields
        given = {name: query.getlist(name) if name in self.lists else query[name] for name in query if name in fields}
        try:
            return self.model.model_validate(given)
        except ValidationError as exc:
            errors = [{**error, "loc": ("query", *error["loc"])} for error in exc.errors(include_url=False)]
            raise RequestValidationError(errors) from None


def direct_handler(endpoint: Callable[..., Any], resolvers: Mapping[Callable[..., Any], Resolver]) -> Handler | None:
    """The handler of a qualifying endpoint (see the module's docstring), or None for FastAPI to handle."""
    hints = typing.get_type_hints(endpoint, include_extras=True)
    answer = hints.pop("return", None)
    if not inspect.iscoroutinefunction(endpoint) or not (isinstance(answer, type) and issubclass(answer, Response)):
        return None  # FastAPI would validate and encode what the endpoint returns
    plan: list[tuple[str, Callable[..., Any] | QueryModel]] = []
    for name, hint in hints.items():
        step = _step(hint, resolvers)
        if step is None:
            return None
        plan.append((name, step))
    if sum(isinstance(step, QueryModel) for _, step in plan) != 1:
        return None

    async def handle(request: Request) -> Response:
        resolved = Resolved(request, resolvers)
        arguments: dict[str, Any] = {}
        invalid: list[Any] = []  # as FastAPI does, every invalid parameter is reported in one answer
        for name, step in plan:
            try:
                arguments[name] = step.parse(request) if isinstance(step, QueryModel) else await resolved.value(step)
            except RequestValidationError as exc:
                invalid += exc.errors()
        if invalid:
            raise RequestValidationError(invalid)
        response: Response = await endpoint(**arguments)
        return response

    return handle


def _step(hint: Any, resolvers: Mapping[Callable[..., Any], Resolver]) -> Callable[..., Any] | QueryModel | None:
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    kind, *extras = typing.get_args(hint)
    for extra in extras:
        if isinstance(extra, params.Depends) and extra.dependency in resolvers:
            return extra.dependency
        if isinstance(extra, params.Query) and isinstance(kind, type) and issubclass(kind, BaseModel):
            lists = {name for name, field in kind.model_fields.items() if _is_list(field.annotation)}
            return QueryModel(kind, frozenset(lists))
    return None


def _is_list(annotation: Any) -> bool:
    if typing.get_origin(annotation) in (list, tuple, set, frozenset):
        return True
    return any(_is_list(arg) for arg in typing.get_args(annotation) if arg is not type(None))
