"""The agent loop's tools: the memory tools of `memvec.tools` (those the loop offers) and
send_message, as OpenAI/litellm tool schemas, and their execution.

Every failure (unknown tool, bad arguments, unknown block, over the limit, budget spent) comes back
to the model as a readable tool error; nothing here raises into the loop.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import ValidationError

from memvec.errors import MemvecError
from memvec.memory import Memory
from memvec.tools import TOOLS, ToolContext, unknown_arguments
from memvec.tools.catalogue import BUILTIN_TOOLS, OfferedTool, SendMessageArgs
from memvec.tools.sandbox import run_tool
from memvec.types import describe_validation_error
from memvec.types.tools import ToolDef, ToolExecution

SEARCH_TOOLS = frozenset(name for name, tool in TOOLS.items() if tool.page_in)
LOOP_TOOLS = {name: tool for name, tool in TOOLS.items() if tool.in_agent_loop}
DEFAULT_ROLES = ("user", "assistant")  # conversation_search without roles: not the loop's own tool records


def tool_schemas(offered: list[OfferedTool] | None = None) -> list[dict[str, Any]]:
    """The schemas of the tools offered (default: the built-in memory tools and send_message)."""
    return [tool.schema for tool in (offered if offered is not None else BUILTIN_TOOLS.values())]


@dataclass
class ToolOutcome:
    content: str
    ok: bool = True
    heartbeat: bool = True
    sent_message: str | None = None
    page_in: bool = False
    for_client: bool = False  # a custom tool this server does not run: the call goes back to the client
    stdout: str = ""  # what a custom tool printed, and its traceback when it failed
    stderr: str = ""


def _cut(value: str, limit: int) -> str:
    """A tool's return within its limit, saying so when cut (the model should not take it as whole)."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... [function output was truncated at {limit} of its {len(value)} characters]"


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(content=json.dumps({"error": message}), ok=False)


class ToolBox:
    def __init__(
        self,
        memory: Memory,
        agent: str,
        *,
        session_id: str | None,
        turn: int,
        in_context: list[int] | None = None,
        result_chars: int = 8_000,
        offered: list[OfferedTool] | None = None,
        execution: ToolExecution = "client",
        approval_needed: frozenset[str] = frozenset(),
    ) -> None:
        """`offered`: the agent's tools (default: the built-in ones); `execution`: whether a custom
        tool's source runs here (subprocess) or its call goes back to the client; `approval_needed`:
        tools whose calls go back to the client for approval whatever `execution` says."""
        self.offered = {t.name: t for t in (offered if offered is not None else BUILTIN_TOOLS.values())}
        self.execution, self.approval_needed = execution, approval_needed
        # messages already in the main context are not paged in again (the list grows during a reply)
        self.context = ToolContext(
            memory,
            agent,
            session_id=session_id,
            turn=turn,
            in_context=in_context if in_context is not None else [],
            default_roles=DEFAULT_ROLES,
            result_chars=result_chars,
        )

    def goes_to_client(self, name: str) -> bool:
        """Whether a call of `name` is answered by the client, not here (so it is not shown as run)."""
        tool = self.offered.get(name)
        if tool is None:
            return False
        if name in self.approval_needed or (tool.custom is not None and tool.custom.default_requires_approval):
            return True
        return self.runner_of(name) == "client"

    def runner_of(self, name: str) -> Literal["client", "server"]:
        """Who runs a call that went to the client: the client itself (a custom tool this server does
        not run), or this server once the client approves it."""
        tool = self.offered.get(name)
        custom = tool.custom if tool else None
        return "client" if custom is not None and self.execution != "subprocess" else "server"

    def run(self, name: str, raw_arguments: str | None, *, approved: bool = False) -> ToolOutcome:
        """Run a call of the model's. `approved`: the client approved it (it is not sent back again)."""
        if name not in self.offered:
            return _error(f"unknown tool {name!r}; available: {', '.join(self.offered) or 'none'}")
        try:
            raw = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            return _error(f"arguments of {name} are not valid JSON: {exc}")
        heartbeat = bool(raw.pop("request_heartbeat", True)) if isinstance(raw, dict) else True
        custom = self.offered[name].custom
        if custom is not None or (name in self.approval_needed and not approved):
            return self._run_elsewhere(name, custom, raw, heartbeat, approved=approved)
        try:
            if name == "send_message":
                message = SendMessageArgs.model_validate(raw).message
                return ToolOutcome(json.dumps({"ok": True}), heartbeat=False, sent_message=message)
            tool = LOOP_TOOLS[name]
            if isinstance(raw, dict) and (problem := unknown_arguments(tool, raw)) is not None:
                return _error(problem)
            args = tool.arguments.model_validate(raw)
        except ValidationError as exc:
            return _error(f"bad arguments for {name}: {describe_validation_error(exc)}")
        try:
            content = tool.run(self.context, args)
        except (MemvecError, ValidationError, ValueError) as exc:
            text = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            return _error(f"{name} failed: {text}")
        return ToolOutcome(content, heartbeat=heartbeat, page_in=tool.page_in)

    def _run_elsewhere(
        self, name: str, custom: ToolDef | None, raw: Any, heartbeat: bool, *, approved: bool = False
    ) -> ToolOutcome:
        """A custom tool: run in a limited subprocess where the home turned that on, else (and for a
        tool that needs approval) handed back to the client, which answers with the tool's return."""
        if not isinstance(raw, dict):
            return _error(f"arguments of {name} must be a JSON object")
        if not approved and self.goes_to_client(name):
            return ToolOutcome(json.dumps({"pending": f"{name} is run by the client"}), for_client=True)
        if custom is None or self.runner_of(name) == "client":
            return _error(f"{name} is run by the client here: answer with its return, not an approval")
        result = run_tool(custom.source_code, custom.name, raw)
        if not result.ok:  # worded as Letta words it: clients and models read it
            failed = _error(f"Error executing function {name}: {result.error}")
            return replace(failed, stdout=result.stdout, stderr=result.stderr or str(result.error))
        value = result.value if isinstance(result.value, str) else json.dumps(result.value)
        return ToolOutcome(
            _cut(value, custom.return_char_limit), heartbeat=heartbeat, stdout=result.stdout, stderr=result.stderr
        )
