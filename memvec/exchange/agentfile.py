"""Letta Agent Files (`.af`) into memvec: each agent becomes an `AgentExport` that the import
restores (blocks, settings, system prompt, model, messages in the recall tier with citations).

What memvec has no use for is reported, never half-imported: tools (memvec's memory tools are
built in), tool rules, sources and files, groups, MCP servers, and system messages (the compiled
prompt; the agent's `system` setting keeps its instructions). The file is read through typed
models of the parts memvec uses (any other field is ignored), so a field of the wrong type is a
clear error, and the whole document is validated before anything is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memvec.errors import InvalidInputError
from memvec.exchange.export import AgentExport, ExportedRecord, ImportReport
from memvec.limits import JSONLimitError, load_json
from memvec.types import AgentSettings, AgentState, Citation, CoreBlock, describe_validation_error

AF_EMBEDDING = "letta-agent-file"  # no usable vectors in an .af: every record is embedded here
_SPOKEN = {"user", "assistant", "tool"}


class AgentFileReport(BaseModel):
    agent_ids: list[str] = Field(description="Letta's field: the imported agents' ids (`agent-<uuid>`)")
    imported: list[ImportReport]
    skipped: dict[str, Any] = Field(description="parts memvec has no use for, by kind")


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LettaBlock(_Part):
    id: str | None = None
    label: str
    value: str | None = None
    limit: int | None = None
    read_only: bool | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None


class LettaFunction(_Part):
    name: str | None = None
    arguments: str | None = None


class LettaToolCall(_Part):
    function: LettaFunction = Field(default_factory=LettaFunction)


class LettaText(_Part):
    text: str | None = None


class LettaMessage(_Part):
    id: str | None = None
    role: str | None = None
    name: str | None = None
    content: str | list[LettaText] | None = None
    tool_calls: list[LettaToolCall] | None = None
    created_at: datetime | None = None


class LettaLlmConfig(_Part):
    model: str | None = None
    model_endpoint_type: str | None = None
    handle: str | None = None
    context_window: int | None = None


class LettaEmbeddingConfig(_Part):
    handle: str | None = None


class LettaAgent(_Part):
    name: str | None = None
    system: str | None = None
    agent_type: str | None = None
    description: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    model: str | None = None
    embedding: str | None = None
    llm_config: LettaLlmConfig | None = None
    embedding_config: LettaEmbeddingConfig | None = None
    block_ids: list[str] | None = None
    memory_blocks: list[LettaBlock] | None = None
    messages: list[LettaMessage] | None = None
    in_context_message_ids: list[str] | None = None
    tool_rules: list[Any] | None = None


class LettaTool(_Part):
    name: str | None = None


class LettaAgentFile(_Part):
    agents: list[LettaAgent]
    blocks: list[LettaBlock] | None = None
    tools: list[LettaTool] | None = None
    sources: list[Any] | None = None
    files: list[Any] | None = None
    groups: list[Any] | None = None
    mcp_servers: list[Any] | None = None


def is_agent_file(data: Any) -> bool:
    return isinstance(data, dict) and "agents" in data and "format" not in data


def _name(raw: str | None, fallback: str) -> str:
    """Letta names are free text; memvec names are ids: other characters become '-'."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw or "").strip("-._")[:64]
    return name if name and name[0].isalnum() else fallback


def _message_text(message: LettaMessage) -> str:
    content = message.content
    text = content if isinstance(content, str) else "\n".join(p.text for p in content or [] if p.text)
    rendered = [_call_text(c.function) for c in message.tool_calls or []]
    return "\n".join(t for t in [text, *rendered] if t)


def _call_text(call: LettaFunction) -> str:
    """A tool call as text: what send_message said, any other call as `name(arguments)`."""
    if call.name == "send_message":
        try:
            said = json.loads(call.arguments or "")
        except ValueError:
            said = None
        if isinstance(said, dict) and isinstance(said.get("message"), str):
            return str(said["message"])
    return f"{call.name}({call.arguments or ''})"


def _settings(agent: LettaAgent, name: str) -> AgentSettings:
    llm = agent.llm_config or LettaLlmConfig()
    composed = f"{llm.model_endpoint_type}/{llm.model}" if llm.model and llm.model_endpoint_type else None
    embedding = agent.embedding or (agent.embedding_config.handle if agent.embedding_config else None)
    return AgentSettings.model_validate(
        {
            "name": name,
            "model": llm.handle or agent.model or composed,
            "context_window": llm.context_window or 8_192,
            "system": agent.system or None,
            "tags": agent.tags or [],
            "description": agent.description,
            "metadata": agent.metadata or {},
            "agent_type": agent.agent_type or "memgpt_agent",
            "embedding": embedding,
        }
    )


def _blocks(agent: LettaAgent, blocks_by_id: dict[str, LettaBlock]) -> list[CoreBlock]:
    raw = [blocks_by_id[i] for i in agent.block_ids or [] if i in blocks_by_id] + list(agent.memory_blocks or [])
    return [
        CoreBlock.model_validate(
            {
                "label": b.label,
                "value": b.value or "",
                "limit": b.limit or 2_000,
                "read_only": bool(b.read_only),
                "description": b.description or "",
                "metadata": b.metadata or {},
            }
        )
        for b in raw
    ]


def _messages(agent: LettaAgent, session: str) -> tuple[list[ExportedRecord], list[int], int]:
    """(records, ids of those in context, system messages skipped)."""
    records, in_context, skipped = [], [], 0
    context_ids = set(agent.in_context_message_ids or [])
    for turn, message in enumerate(agent.messages or [], start=1):
        text = _message_text(message)
        if message.role not in _SPOKEN or not text:
            skipped += 1
            continue
        records.append(
            ExportedRecord(
                id=turn,
                text=text,
                role=message.name or message.role,
                created_at=message.created_at or datetime.now(UTC),
                citation=Citation(session_id=session, turn_id=str(turn)),
            )
        )
        if message.id in context_ids:
            in_context.append(turn)
    return records, in_context, skipped


def _export(agent: LettaAgent, blocks_by_id: dict[str, LettaBlock], position: int) -> tuple[AgentExport, int]:
    name = _name(agent.name, f"imported-agent-{position}")
    records, in_context, system_messages = _messages(agent, f"agent-file:{name}")
    doc = AgentExport(
        exported_at=datetime.now(UTC),
        embedding_model=AF_EMBEDDING,
        agent=_settings(agent, name),
        state=AgentState(in_context=in_context),
        blocks=_blocks(agent, blocks_by_id),
        messages=records,
    )
    return doc, system_messages


def read_agent_file(data: dict[str, Any]) -> tuple[list[AgentExport], dict[str, Any]]:
    """Every agent of an agent file as an export, and what is skipped; raises ValidationError."""
    parsed = LettaAgentFile.model_validate(data)
    blocks_by_id = {b.id: b for b in parsed.blocks or [] if b.id is not None}
    converted = [_export(agent, blocks_by_id, n) for n, agent in enumerate(parsed.agents, start=1)]
    skipped = {
        "tools": [t.name for t in parsed.tools or []],
        "tool_rules": sum(len(a.tool_rules or []) for a in parsed.agents),
        "sources": len(parsed.sources or []),
        "files": len(parsed.files or []),
        "groups": len(parsed.groups or []),
        "mcp_servers": len(parsed.mcp_servers or []),
        "system_messages": sum(n for _, n in converted),
    }
    return [doc for doc, _ in converted], skipped


@dataclass(frozen=True)
class ImportPlan:
    """A validated document to import: its agents, the name each gets, and what is skipped."""

    exports: list[AgentExport]
    targets: list[str]
    skipped: dict[str, Any]
    display_names: list[str] = field(default_factory=list)  # as the file names them (Letta's may have spaces)

    def with_targets(self, targets: list[str]) -> ImportPlan:
        return replace(self, targets=targets)


def parse_document(raw: str | bytes, *, what: str = "the document") -> Any:
    """An uploaded or read document as JSON, with bounded nesting; raises InvalidInputError."""
    try:
        return load_json(raw, what=what)
    except JSONLimitError as exc:
        raise InvalidInputError(str(exc)) from exc


def read_document(data: Any, *, name: str | None = None) -> ImportPlan:
    """A Letta agent file or a memvec export, validated whole (`name` renames a single agent);
    raises InvalidInputError or pydantic's ValidationError, having written nothing."""
    if is_agent_file(data):
        try:
            exports, skipped = read_agent_file(data)
        except ValidationError as exc:
            raise InvalidInputError(f"agent file: {describe_validation_error(exc)}") from exc
        shown = [agent.get("name") if isinstance(agent, dict) else None for agent in data["agents"]]
    else:
        exports, skipped = [AgentExport.model_validate(data)], {}  # a ValidationError: 422 over HTTP
        shown = [None]
    if name is not None and len(exports) != 1:
        raise InvalidInputError("a new name can only be given to a file with one agent")
    targets = [name or doc.agent.name for doc in exports]
    repeated = sorted({t for t in targets if targets.count(t) > 1})
    if repeated:
        raise InvalidInputError(
            f"several agents of the file would be named {', '.join(map(repr, repeated))} "
            "(memvec names allow A-Z a-z 0-9 _ . -); rename them in the file first"
        )
    pairs = zip(shown, targets, strict=True)
    displayed = [name or (raw if isinstance(raw, str) and raw.strip() else t) for raw, t in pairs]
    return ImportPlan(exports=exports, targets=targets, skipped=skipped, display_names=displayed)


class Importer(Protocol):
    """What imports the plan (a `Memory`): this module reads files and never writes a store."""

    def import_agents(self, docs: Sequence[tuple[AgentExport, str]]) -> list[ImportReport]: ...


def import_document(memory: Importer, plan: ImportPlan) -> AgentFileReport:
    """Import every agent of the plan in one transaction: all of them, or nothing at all."""
    reports = memory.import_agents(list(zip(plan.exports, plan.targets, strict=True)))
    return AgentFileReport(agent_ids=plan.targets, imported=reports, skipped=plan.skipped)
