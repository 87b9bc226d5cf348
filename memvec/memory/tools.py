"""`Memory`'s custom-tool methods (Letta's `/v1/tools`): stored definitions, unique by name.

Which tools an agent is offered is its settings' `tool_ids`; the built-in tools are the code's
(memvec.tools) and never stored. Turning source into a definition (its schema) happens above, in
memvec.tools.source_schema; nothing here runs a tool.
"""

from __future__ import annotations

from memvec.errors import NotFoundError
from memvec.store.base import Store
from memvec.types.tools import ToolDef


class ToolMethods:
    """A mixin of `Memory` (its store)."""

    _store: Store

    def create_tool(self, tool: ToolDef, *, replace_same_name: bool = False) -> ToolDef:
        """Store a new tool (NameTakenError when its name is taken), or with `replace_same_name`
        replace the tool of that name, which keeps its id."""
        now = self._store.clock()
        stamped = tool.model_copy(update={"created_at": now, "updated_at": now})
        return self._store.upsert_tool(stamped) if replace_same_name else self._store.create_tool(stamped)

    def update_tool(self, tool: ToolDef) -> ToolDef:
        """Write an existing tool's new definition (NotFoundError: no tool has its id)."""
        stamped = tool.model_copy(update={"updated_at": self._store.clock()})
        if not self._store.replace_tool(stamped):
            raise NotFoundError(f"tool {tool.id!r} not found")
        return self.tool(tool.id)

    def tool(self, tool_id: str) -> ToolDef:
        found = self._store.tool(tool_id)
        if found is None:
            raise NotFoundError(f"tool {tool_id!r} not found")
        return found

    def tool_named(self, name: str) -> ToolDef | None:
        return self._store.tool_named(name)

    def tools(self) -> list[ToolDef]:
        """Every custom tool, oldest first."""
        return self._store.tools()

    def delete_tool(self, tool_id: str) -> None:
        """Delete a tool. Agents that had it are no longer offered it (their lists skip ids that name
        no tool), and a call the model makes to it anyway is answered as an unknown tool."""
        if not self._store.delete_tool(tool_id):
            raise NotFoundError(f"tool {tool_id!r} not found")
