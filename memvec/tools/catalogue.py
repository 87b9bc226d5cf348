"""Every tool an agent can be offered, as Letta lists them: the built-in memory tools and send_message
(the code's, with fixed ids) and the home's custom tools (stored), each with the function schema a
model sees. An agent's `tool_ids` pick from them; None picks the built-in ones.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memvec.errors import InvalidInputError, NotFoundError
from memvec.memory import Memory
from memvec.tools import TOOLS, MemoryTool
from memvec.types import AgentSettings
from memvec.types.tools import ToolDef, ToolKind, builtin_tool_id

HEARTBEAT = {"type": "boolean", "default": True, "description": "Continue thinking after this tool returns."}
SEND_MESSAGE = "Send a message to the user. Ends your turn."
_CORE_KIND = ("archival_memory_insert", "archival_memory_search", "conversation_search", "send_message")


class SendMessageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, description="The message shown to the user.")


@dataclass(frozen=True)
class OfferedTool:
    """A tool as a model is offered it: `schema` is its litellm/OpenAI function schema."""

    id: str
    name: str
    kind: ToolKind
    description: str
    schema: dict[str, Any]
    custom: ToolDef | None = None  # the stored definition of a custom tool


def function_schema(
    name: str,
    description: str,
    arguments: type[BaseModel],
    *,
    heartbeat: bool,
    parameters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`parameters`: the schema a model sees, where it is not the arguments' own (a tool whose schema
    reads as Letta's)."""
    parameters = copy.deepcopy(parameters) if parameters is not None else arguments.model_json_schema()
    parameters.pop("title", None)
    if heartbeat:  # MemGPT's chaining flag: a loop concern, not part of the tool's arguments
        parameters.setdefault("properties", {})["request_heartbeat"] = HEARTBEAT
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _kind(name: str, tool: MemoryTool) -> ToolKind:
    if tool.reads_files:
        return "letta_files_core"
    return "letta_core" if name in _CORE_KIND else "letta_memory_core"


def _builtins() -> dict[str, OfferedTool]:
    found = {
        name: OfferedTool(
            id=builtin_tool_id(name),
            name=name,
            kind=_kind(name, tool),
            description=tool.description,
            schema=function_schema(name, tool.description, tool.arguments, heartbeat=True, parameters=tool.parameters),
        )
        for name, tool in TOOLS.items()
        if tool.in_agent_loop
    }
    found["send_message"] = OfferedTool(
        id=builtin_tool_id("send_message"),
        name="send_message",
        kind="letta_core",
        description=SEND_MESSAGE,
        schema=function_schema("send_message", SEND_MESSAGE, SendMessageArgs, heartbeat=False),
    )
    return found


BUILTIN_TOOLS = _builtins()
BUILTIN_BY_ID = {tool.id: tool for tool in BUILTIN_TOOLS.values()}
FILE_TOOL_IDS = [t.id for t in BUILTIN_TOOLS.values() if t.kind == "letta_files_core"]
# what an agent is offered unless it names its tools (the file tools come with a folder)
BUILTIN_TOOL_IDS = [tool_id for tool_id in BUILTIN_BY_ID if tool_id not in FILE_TOOL_IDS]


def custom_offered(tool: ToolDef) -> OfferedTool:
    schema = dict(tool.json_schema)
    schema.setdefault("description", tool.description)
    return OfferedTool(
        id=tool.id,
        name=tool.name,
        kind="custom",
        description=tool.description,
        schema={"type": "function", "function": {**schema, "name": tool.name}},
        custom=tool,
    )


def all_tools(memory: Memory) -> list[OfferedTool]:
    """The built-in tools, then the home's custom tools (oldest first)."""
    return [*BUILTIN_TOOLS.values(), *(custom_offered(t) for t in memory.tools())]


def find_tool(memory: Memory, tool_id: str) -> OfferedTool:
    """The tool with this id (NotFoundError: none)."""
    if tool_id in BUILTIN_BY_ID:
        return BUILTIN_BY_ID[tool_id]
    return custom_offered(memory.tool(tool_id))


def agent_tool_ids(settings: AgentSettings, *, has_folders: bool = False) -> list[str]:
    """Its tools' ids: those it names (None: the built-in ones), and the file tools while it has a
    folder attached (as Letta attaches and detaches them with folders)."""
    named = list(BUILTIN_TOOL_IDS if settings.tool_ids is None else settings.tool_ids)
    return list(dict.fromkeys([*named, *FILE_TOOL_IDS])) if has_folders else named


def agent_tools(memory: Memory, settings: AgentSettings) -> list[OfferedTool]:
    """The tools the agent is offered, in its order; ids of deleted tools are skipped."""
    found = []
    for tool_id in agent_tool_ids(settings, has_folders=memory.folders().attached_to(settings.name)):
        try:
            found.append(find_tool(memory, tool_id))
        except NotFoundError:
            continue
    return found


def resolve_tool_refs(memory: Memory, ids: list[str], names: list[str]) -> list[str]:
    """Tool ids for tools given by id or by name (InvalidInputError naming the first unknown one)."""
    resolved = []
    for tool_id in ids:
        try:
            resolved.append(find_tool(memory, tool_id).id)
        except NotFoundError:
            raise InvalidInputError(f"no tool has id {tool_id!r}") from None
    for name in names:
        tool = BUILTIN_TOOLS.get(name) or (custom_offered(c) if (c := memory.tool_named(name)) else None)
        if tool is None:
            raise InvalidInputError(f"no tool is named {name!r}")
        resolved.append(tool.id)
    return list(dict.fromkeys(resolved))
