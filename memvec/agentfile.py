"""Letta Agent Files (`.af`) into memvec: each agent becomes an `AgentExport` that `import_agent`
restores (blocks, settings, system prompt, model, messages in the recall tier with citations).

What memvec has no use for is reported, never half-imported: tools (memvec's memory tools are
built in), tool rules, sources and files, groups, MCP servers, and system messages (the compiled
prompt; the agent's `system` setting keeps its instructions). Everything is validated before
anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from memvec.errors import InvalidInputError
from memvec.memory import Memory
from memvec.transfer import AgentExport, ExportedRecord, ImportReport, import_agent
from memvec.types import AgentSettings, AgentState, Citation, CoreBlock, describe_validation_error

AF_EMBEDDING = "letta-agent-file"  # no usable vectors in an .af: every record is embedded here
_SPOKEN = {"user", "assistant", "tool"}


class AgentFileReport(BaseModel):
    agent_ids: list[str] = Field(description="Letta's field: the imported agents' ids (= names)")
    imported: list[ImportReport]
    skipped: dict[str, Any] = Field(description="parts memvec has no use for, by kind")


def is_agent_file(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("agents"), list)


def _name(raw: str | None, fallback: str) -> str:
    """Letta names are free text; memvec names are ids: other characters become '-'."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw or "").strip("-._")[:64]
    return name if name and name[0].isalnum() else fallback


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content or []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("text"))


def _message_text(message: dict[str, Any]) -> str:
    text = _text(message.get("content"))
    calls = message.get("tool_calls") or []
    rendered = [f"{c.get('function', {}).get('name')}({c.get('function', {}).get('arguments', '')})" for c in calls]
    return "\n".join(t for t in [text, *rendered] if t)


def _settings(agent: dict[str, Any], name: str) -> AgentSettings:
    llm = agent.get("llm_config") or {}
    composed = f"{llm['model_endpoint_type']}/{llm['model']}" if llm.get("model") and llm.get(
        "model_endpoint_type") else None
    model = llm.get("handle") or agent.get("model") or composed
    embedding = agent.get("embedding") or (agent.get("embedding_config") or {}).get("handle")
    return AgentSettings.model_validate({
        "name": name, "model": model, "context_window": llm.get("context_window") or 8_192,
        "system": agent.get("system") or None, "tags": agent.get("tags") or [],
        "description": agent.get("description"), "metadata": agent.get("metadata") or {},
        "agent_type": agent.get("agent_type") or "memgpt_agent", "embedding": embedding})


def _blocks(agent: dict[str, Any], blocks_by_id: dict[str, dict[str, Any]]) -> list[CoreBlock]:
    raw = [blocks_by_id[i] for i in agent.get("block_ids") or [] if i in blocks_by_id] + list(
        agent.get("memory_blocks") or [])
    return [CoreBlock.model_validate({
        "label": b["label"], "value": b.get("value") or "", "limit": b.get("limit") or 2_000,
        "read_only": bool(b.get("read_only")), "description": b.get("description") or "",
        "metadata": b.get("metadata") or {}}) for b in raw]


def _messages(agent: dict[str, Any], session: str) -> tuple[list[ExportedRecord], list[int], int]:
    """(records, ids of those in context, system messages skipped)."""
    records, in_context, skipped = [], [], 0
    context_ids = set(agent.get("in_context_message_ids") or [])
    for turn, message in enumerate(agent.get("messages") or [], start=1):
        text = _message_text(message)
        if message.get("role") not in _SPOKEN or not text:
            skipped += 1
            continue
        records.append(ExportedRecord(id=turn, text=text, role=message.get("name") or message["role"],
                                      created_at=message.get("created_at") or datetime.now(UTC),
                                      citation=Citation(session_id=session, turn_id=str(turn))))
        if message.get("id") in context_ids:
            in_context.append(turn)
    return records, in_context, skipped


def _export(agent: dict[str, Any], blocks_by_id: dict[str, dict[str, Any]], position: int
            ) -> tuple[AgentExport, int]:
    name = _name(agent.get("name"), f"imported-agent-{position}")
    records, in_context, system_messages = _messages(agent, f"agent-file:{name}")
    doc = AgentExport(exported_at=datetime.now(UTC), embedding_model=AF_EMBEDDING, agent=_settings(agent, name),
                      state=AgentState(in_context=in_context), blocks=_blocks(agent, blocks_by_id),
                      messages=records)
    return doc, system_messages


def read_agent_file(data: dict[str, Any]) -> tuple[list[AgentExport], dict[str, Any]]:
    """Every agent of an agent file as an export, and what is skipped; raises InvalidInputError."""
    blocks_by_id = {b["id"]: b for b in data.get("blocks") or [] if isinstance(b, dict) and "id" in b}
    try:
        converted = [_export(agent, blocks_by_id, n) for n, agent in enumerate(data["agents"], start=1)]
    except ValidationError as exc:
        raise InvalidInputError(f"agent file: {describe_validation_error(exc)}") from exc
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidInputError(f"agent file: unexpected structure ({type(exc).__name__}: {exc})") from exc
    tools = [t.get("name") for t in data.get("tools") or [] if isinstance(t, dict)]
    skipped = {"tools": tools, "tool_rules": sum(len(a.get("tool_rules") or []) for a in data["agents"]),
               "sources": len(data.get("sources") or []), "files": len(data.get("files") or []),
               "groups": len(data.get("groups") or []), "mcp_servers": len(data.get("mcp_servers") or []),
               "system_messages": sum(n for _, n in converted)}
    return [doc for doc, _ in converted], skipped


@dataclass(frozen=True)
class ImportPlan:
    """A validated document to import: its agents, the name each gets, and what is skipped."""

    exports: list[AgentExport]
    targets: list[str]
    skipped: dict[str, Any]


def read_document(data: Any, *, name: str | None = None) -> ImportPlan:
    """A Letta agent file or a memvec export, validated whole (`name` renames a single agent);
    raises InvalidInputError or pydantic's ValidationError, having written nothing."""
    if is_agent_file(data):
        exports, skipped = read_agent_file(data)
    else:
        exports, skipped = [AgentExport.model_validate(data)], {}
    if name is not None and len(exports) != 1:
        raise InvalidInputError("a new name can only be given to a file with one agent")
    return ImportPlan(exports=exports, targets=[name or doc.agent.name for doc in exports], skipped=skipped)


def import_document(memory: Memory, plan: ImportPlan) -> AgentFileReport:
    """Import every agent of the plan; nothing is written when any of them already exists."""
    existing = set(memory.agents())
    taken = [t for t in plan.targets if t in existing]
    if taken:
        raise InvalidInputError(f"agent(s) {', '.join(map(repr, taken))} already exist here; delete them or "
                                "import under another name")
    reports = [import_agent(memory, doc, name=target) for doc, target in zip(plan.exports, plan.targets, strict=True)]
    return AgentFileReport(agent_ids=plan.targets, imported=reports, skipped=plan.skipped)


