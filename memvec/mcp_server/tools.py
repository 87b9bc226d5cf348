"""The memory tools of `memvec.tools` as functions the MCP SDK can register.

The SDK reads a tool's input schema from its function's signature, so each function gets one built
from the tool's arguments model: the same fields, limits and descriptions the agent loop's model
sees. The call is validated again by that model, so both surfaces accept the same input; arguments
the schema does not name are refused before the SDK would drop them (`server.MemoryServer`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from memvec.memory import Memory
from memvec.tools import MCP_TOOLS, MemoryTool, ToolContext
from memvec.types import AgentSettings

# What a desktop client shows people for each tool. Letta's memory_insert, memory_replace and
# memory_finish_edits do jobs core_memory_append and core_memory_replace do (or none, outside Letta's
# loop): served only with `--tools letta`, for clients that call tools by Letta's names.
TITLES = {
    "core_memory_read": "Read core memory",
    "core_memory_append": "Add to a core memory block",
    "core_memory_replace": "Edit a core memory block",
    "memory_rethink": "Rewrite a core memory block",
    "memory_insert": "Insert lines into a core memory block",
    "memory_replace": "Edit a core memory block (Letta's arguments)",
    "memory_finish_edits": "Finish editing core memory",
    "archival_memory_insert": "Save a memory",
    "archival_memory_update": "Correct a saved memory",
    "archival_memory_search": "Search saved memories",
    "archival_memory_list": "List saved memories",
    "archival_memory_delete": "Delete a saved memory",
    "memory_forget": "Forget memories by tag, date or session",
    "conversation_search": "Search past conversations",
    "conversation_record": "Record a conversation message",
    "add_file": "Add a file to memory",
}
LETTA_ONLY = {"memory_insert", "memory_replace", "memory_finish_edits"}
ToolSet = Literal["plain", "letta"]
TOOL_SETS = {
    "plain": {name: tool for name, tool in MCP_TOOLS.items() if name not in LETTA_ONLY},
    "letta": dict(MCP_TOOLS),
}


def agent_context(memory: Memory, agent: str, *, result_chars: int = 8_000, local_files: bool = False) -> ToolContext:
    """The tools' context for one agent, created with default blocks if it does not exist yet."""
    name = memory.core(agent).agent  # validates the name
    if not memory.has_agent(name):
        memory.create_agent(AgentSettings(name=name))
    return ToolContext(memory, name, result_chars=result_chars, local_files=local_files)


def _parameter(name: str, arguments: type[Any]) -> inspect.Parameter:
    info = arguments.model_fields[name]
    # Annotated[type, constraints..., description] built at run time from the field
    annotation: Any = Annotated.__class_getitem__(  # type: ignore[attr-defined]
        (info.annotation, *info.metadata, Field(description=info.description))
    )
    default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def tool_function(tool: MemoryTool, context: ToolContext) -> Callable[..., str]:
    def call(**kwargs: Any) -> str:
        return tool.run(context, tool.arguments.model_validate(kwargs))

    call.__name__ = tool.name
    call.__doc__ = tool.description
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_parameter(name, tool.arguments) for name in tool.arguments.model_fields], return_annotation=str
    )
    return call
