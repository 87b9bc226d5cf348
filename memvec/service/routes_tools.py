"""`/v1/tools` and an agent's tools (Letta's tool endpoints): the built-in memory tools and
send_message, listed with fixed ids, and custom tools made from Python source.

The server reads a custom tool's schema from its source without running it. Whether it ever runs
the source is the home's `tool_execution` (docs/reference.md, "Custom tools"): by default a call of a custom
tool goes back to the client as an approval request. Tools belong to the home, not to one agent, so
creating, changing and deleting them takes an unscoped key; any key may list them and attach them
to its agents.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Path, Query

from memvec.errors import InvalidInputError, NotFoundError
from memvec.service.deps import Caller, ScopedAgent, Service, api_router, unscoped, visible_agent
from memvec.service.schemas import AgentOut, Deleted
from memvec.service.tool_bodies import ToolIn, ToolOut, ToolPatch, ToolRunIn, ToolRunOut
from memvec.service.views import agent_out, page
from memvec.tools.catalogue import (
    BUILTIN_BY_ID,
    BUILTIN_TOOLS,
    OfferedTool,
    agent_tool_ids,
    agent_tools,
    all_tools,
    find_tool,
)
from memvec.tools.source_schema import ToolSourceError, function_schema
from memvec.types.tools import DEFAULT_RETURN_CHAR_LIMIT, TOOL_ID_PATTERN, ToolDef, new_tool_id

router = api_router()
ToolId = Annotated[str, Path(pattern=TOOL_ID_PATTERN, description="the tool's id (`tool-<uuid>`)")]
_WHY = "tools belong to the home, not to one agent"
_NAME = Annotated[str | None, Query(max_length=64)]


def _definition(body: ToolIn | ToolPatch, old: ToolDef | None) -> ToolDef:
    """The tool `body` describes (over `old`, for a change): its schema read from the source unless given."""
    given = body.model_dump(exclude_unset=True)
    source = given.get("source_code") or (old.source_code if old else "")
    args_schema = given.get("args_json_schema", old.args_json_schema if old else None)
    try:
        schema = given.get("json_schema") or function_schema(
            source, args_json_schema=args_schema, description=given.get("description")
        )
    except ToolSourceError as exc:
        raise InvalidInputError(str(exc)) from None
    if not isinstance(schema.get("name"), str):
        raise InvalidInputError("json_schema must name the function (`name`)")
    if given.get("source_code") and given.get("json_schema"):
        _same_function(given["source_code"], schema["name"], args_schema)
    fields = {
        "id": old.id if old else new_tool_id(),
        "name": schema["name"],
        "description": given.get("description") or schema.get("description") or (old.description if old else ""),
        "source_code": source,
        "json_schema": schema,
        "args_json_schema": args_schema,
        "tags": given.get("tags") if given.get("tags") is not None else (old.tags if old else []),
        "return_char_limit": given.get("return_char_limit")
        or (old.return_char_limit if old else DEFAULT_RETURN_CHAR_LIMIT),
        "default_requires_approval": bool(
            given.get("default_requires_approval", old and old.default_requires_approval)
        ),
        "metadata": given.get("metadata") if given.get("metadata") is not None else (old.metadata if old else {}),
        "created_at": old.created_at if old else None,
    }
    try:
        return ToolDef.model_validate(fields)
    except ValueError as exc:
        raise InvalidInputError(f"not a tool memvec can serve: {exc}") from None


def _same_function(source: str, named: str, args_schema: dict[str, object] | None) -> None:
    """A source and a json_schema given together must be of one function (as Letta checks)."""
    try:
        defined = function_schema(source, args_json_schema=args_schema)["name"]
    except ToolSourceError as exc:
        raise InvalidInputError(str(exc)) from None
    if defined != named:
        raise InvalidInputError(f"the json_schema names {named!r}, but the source defines {defined!r}")


def _builtin_guard(tool_id: str, what: str) -> None:
    if tool_id in BUILTIN_BY_ID:
        raise InvalidInputError(f"{BUILTIN_BY_ID[tool_id].name} is built in: it cannot be {what}")


def _new_tool(body: ToolIn, principal: Caller, service: Service, *, replace_same_name: bool) -> ToolOut:
    unscoped(principal, "creating or replacing a tool" if replace_same_name else "creating a tool", _WHY)
    tool = _definition(body, None)
    same_name = next((t for t in service.memory.tools() if t.name == tool.name), None)
    if replace_same_name and same_name is not None:  # Letta's upsert: what the body leaves out stays
        tool = _definition(body, same_name)
    if tool.name in BUILTIN_TOOLS:
        raise InvalidInputError(f"{tool.name} is a built-in tool's name")
    stored = service.memory.create_tool(tool, replace_same_name=replace_same_name)
    return ToolOut.of(find_tool(service.memory, stored.id))


@router.post("/v1/tools", response_model=ToolOut, tags=["tools"])
def create_tool(body: ToolIn, principal: Caller, service: Service) -> ToolOut:
    """Create a tool from Python source (409 when a tool has its name; PUT replaces it)."""
    return _new_tool(body, principal, service, replace_same_name=False)


@router.put("/v1/tools", response_model=ToolOut, tags=["tools"])
def upsert_tool(body: ToolIn, principal: Caller, service: Service) -> ToolOut:
    """Create a tool, or update the one with its function's name: the fields given replace its own,
    the rest (tags, metadata, ...) stay, and it keeps its id."""
    return _new_tool(body, principal, service, replace_same_name=True)


@dataclass(frozen=True)
class _ToolFilter:
    """Letta's tool listing filters; empty ones keep every tool."""

    name: str | None
    names: list[str]
    ids: list[str]
    search: str | None
    kinds: list[str]
    excluded_kinds: list[str]
    only_letta: bool

    def keeps(self, tool: OfferedTool) -> bool:
        return (
            self.name in (None, tool.name)
            and (not self.names or tool.name in self.names)
            and (not self.ids or tool.id in self.ids)
            and (self.search is None or self.search.lower() in tool.name.lower())
            and (not self.kinds or tool.kind in self.kinds)
            and tool.kind not in self.excluded_kinds
            and not (self.only_letta and tool.kind == "custom")
        )


@router.get("/v1/tools", response_model=list[ToolOut], tags=["tools"])
def list_tools(
    service: Service,
    after: Annotated[str | None, Query(max_length=64)] = None,
    before: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    name: _NAME = None,
    names: Annotated[list[str] | None, Query(max_length=256)] = None,
    tool_ids: Annotated[list[str] | None, Query(max_length=256)] = None,
    search: _NAME = None,
    tool_types: Annotated[list[str] | None, Query(max_length=16)] = None,
    exclude_tool_types: Annotated[list[str] | None, Query(max_length=16)] = None,
    return_only_letta_tools: bool = False,
    order: Literal["asc", "desc"] = "asc",
    order_by: Literal["created_at"] = "created_at",
) -> list[ToolOut]:
    """The built-in tools, then the home's custom tools (oldest first), filtered as asked."""
    wanted = _ToolFilter(
        name, names or [], tool_ids or [], search, tool_types or [], exclude_tool_types or [], return_only_letta_tools
    )
    found = [t for t in all_tools(service.memory) if wanted.keeps(t)]
    if order == "desc":
        found.reverse()
    window = page([t.id for t in found], after=after, before=before, limit=limit)
    return [ToolOut.of(t) for t in found[window]]


@router.get("/v1/tools/count", response_model=int, tags=["tools"])
def count_tools(service: Service) -> int:
    return len(all_tools(service.memory))


@router.get("/v1/tools/{tool_id}", response_model=ToolOut, tags=["tools"])
def get_tool(tool_id: ToolId, service: Service) -> ToolOut:
    return ToolOut.of(find_tool(service.memory, tool_id))


@router.patch("/v1/tools/{tool_id}", response_model=ToolOut, tags=["tools"])
def modify_tool(tool_id: ToolId, body: ToolPatch, principal: Caller, service: Service) -> ToolOut:
    """Change a custom tool; a new source is read again for its schema (its name may change with it)."""
    unscoped(principal, "changing a tool", _WHY)
    _builtin_guard(tool_id, "changed")
    updated = service.memory.update_tool(_definition(body, service.memory.tool(tool_id)))
    return ToolOut.of(find_tool(service.memory, updated.id))


@router.delete("/v1/tools/{tool_id}", response_model=Deleted, tags=["tools"])
def delete_tool(tool_id: ToolId, principal: Caller, service: Service) -> Deleted:
    """Delete a custom tool; agents that had it are no longer offered it."""
    unscoped(principal, "deleting a tool", _WHY)
    _builtin_guard(tool_id, "deleted")
    service.memory.delete_tool(tool_id)
    return Deleted(message=f"tool {tool_id!r} deleted")


@router.get("/v1/agents/{agent_id}/tools", response_model=list[ToolOut], tags=["tools"])
def list_agent_tools(
    agent: ScopedAgent,
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(max_length=64)] = None,
    before: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[ToolOut]:
    """The agent's tools in its order, `limit` at a time after the `after` cursor (a tool id)."""
    settings, _ = visible_agent(agent, principal, service)
    tools = agent_tools(service.memory, settings)
    return [ToolOut.of(t) for t in tools[page([t.id for t in tools], after=after, before=before, limit=limit)]]


def _set_tools(agent: str, principal: Caller, service: Service, tool_id: str, *, attach: bool) -> AgentOut:
    """Attach or detach under the agent's lease: two changes at once from two servers both land."""
    memory = service.memory
    find_tool(memory, tool_id)
    with memory.agent_lease(agent):
        settings, state = visible_agent(agent, principal, service)
        current = agent_tool_ids(settings)
        if attach:
            ids = current if tool_id in current else [*current, tool_id]
        else:
            ids = [i for i in current if i != tool_id]
        settings = settings.model_copy(update={"tool_ids": ids})
        memory.update_agent(settings)
    return agent_out(memory, settings, state)


@router.patch("/v1/agents/{agent_id}/tools/attach/{tool_id}", response_model=AgentOut, tags=["tools"])
def attach_tool(agent: ScopedAgent, tool_id: ToolId, principal: Caller, service: Service) -> AgentOut:
    """Offer the agent this tool too (attaching one it has changes nothing)."""
    return _set_tools(agent, principal, service, tool_id, attach=True)


@router.patch("/v1/agents/{agent_id}/tools/detach/{tool_id}", response_model=AgentOut, tags=["tools"])
def detach_tool(agent: ScopedAgent, tool_id: ToolId, principal: Caller, service: Service) -> AgentOut:
    """Stop offering the agent this tool (built-in ones too)."""
    return _set_tools(agent, principal, service, tool_id, attach=False)


@router.post("/v1/agents/{agent_id}/tools/{tool_name}/run", response_model=ToolRunOut, tags=["tools"])
def run_agent_tool(
    agent_id: ScopedAgent,
    tool_name: Annotated[str, Path(min_length=1, max_length=64)],
    body: ToolRunIn,
    principal: Caller,
    service: Service,
) -> ToolRunOut:
    """Run one of the agent's tools now with `args`, as its model's call would be run (under the
    agent's lease, so not in the middle of a reply): `status` and the tool's return, or `error` with
    why (bad arguments are the tool's error, not a 4xx). A custom tool only where this server runs
    tools (`--tool-execution subprocess`); nothing is stored in the agent's messages."""
    from memvec.agent.tools import ToolBox

    memory = service.memory
    settings, state = visible_agent(agent_id, principal, service)
    box = ToolBox(
        memory,
        agent_id,
        session_id=None,
        turn=state.turn,
        offered=agent_tools(memory, settings),
        execution=memory.config.tool_execution,
    )
    if tool_name not in box.offered:
        raise NotFoundError(f"agent {agent_id!r} has no tool {tool_name!r}")
    if box.runner_of(tool_name) == "client":
        raise InvalidInputError(f"{tool_name} is a custom tool its client runs: this server runs none")
    with memory.agent_lease(agent_id):
        outcome = box.run(tool_name, json.dumps(body.args), approved=True)
    printed = {"stdout": [outcome.stdout] if outcome.stdout else None}
    if outcome.ok:
        return ToolRunOut(status="success", func_return=outcome.content, **printed)
    return ToolRunOut(status="error", stderr=[outcome.stderr or outcome.content], **printed)
