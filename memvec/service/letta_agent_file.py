"""An agent as Letta's agent file (`.af`, Letta's "v2" multi-entity format): what `GET
/v1/agents/{id}/export?format=letta` answers and letta-client's `export_file` reads.

The file's ids are its own (`agent-0`, `block-0`, `message-3`, ...), as Letta writes them, so a
file imports anywhere. It holds the agent's settings, its blocks, the tools it is offered (custom
ones with their source), its folders and their files with their text, and its conversation (a tool
call as the assistant message that made it and the tool message that answered), but not its
archival passages or embeddings: memvec's own export (`format=memvec`) is the lossless one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memvec.agent.prompts import SYSTEM_INSTRUCTIONS
from memvec.memory import Memory
from memvec.service.letta_messages import SENT
from memvec.service.tool_bodies import ToolOut
from memvec.service.views import endpoint_type
from memvec.tools.catalogue import agent_tools
from memvec.types import AgentSettings, CoreBlock, Folder, Record
from memvec.types.messages import MessageMeta, tool_return_of

_PAGE = 1_000


def letta_agent_file(memory: Memory, agent: str, *, scrub_messages: bool = False) -> dict[str, Any]:
    """The agent (a handle) as a Letta agent file; `scrub_messages`: without its conversation."""
    settings, state = memory.get_agent(agent)
    identity = memory.agent_identity(agent)
    blocks = memory.core(agent).blocks()
    tools = [ToolOut.of(t).model_dump(mode="json", by_alias=True) for t in agent_tools(memory, settings)]
    folders = memory.folders().of_agent(agent)
    messages = [] if scrub_messages else _messages(memory, agent)
    in_context = set(state.in_context)
    agent_part = _agent(settings, identity.name, blocks, tools, folders)
    agent_part["messages"] = [{k: v for k, v in m.items() if k != "record_id"} for m in messages]
    agent_part["in_context_message_ids"] = [m["id"] for m in messages if m["record_id"] in in_context]
    return {
        "agents": [agent_part],
        "groups": [],
        "blocks": [_block(n, block) for n, block in enumerate(blocks)],
        "files": _files(memory, folders),
        "sources": [_source(n, folder, memory) for n, folder in enumerate(folders)],
        "tools": [{**tool, "id": f"tool-{n}"} for n, tool in enumerate(tools)],
        "mcp_servers": [],
        "skills": [],
        "metadata": {"exported_by": "memvec"},
        "created_at": datetime.now(UTC).isoformat(),
    }


def _agent(
    settings: AgentSettings, name: str, blocks: list[CoreBlock], tools: list[dict[str, Any]], folders: list[Folder]
) -> dict[str, Any]:
    return {
        "id": "agent-0",
        "name": name,
        "agent_type": settings.agent_type,
        "system": settings.system or SYSTEM_INSTRUCTIONS,
        "description": settings.description,
        "tags": settings.tags,
        "metadata": settings.metadata,
        "model": settings.model,
        "embedding": settings.embedding,
        "llm_config": {
            "model": (settings.model or "").partition("/")[2] or settings.model or "",
            "model_endpoint_type": endpoint_type(settings.model),
            "context_window": settings.context_window,
            "handle": settings.model,
        },
        "embedding_config": None if settings.embedding is None else {"handle": settings.embedding},
        "block_ids": [f"block-{n}" for n in range(len(blocks))],
        "tool_ids": [f"tool-{n}" for n in range(len(tools))],
        "source_ids": [f"source-{n}" for n in range(len(folders))],
        "tool_rules": [r.model_dump(mode="json", exclude_none=True) for r in settings.tool_rules],
        "include_base_tools": False,  # its tools are listed in `tool_ids`, the built-in ones too
        "files_agents": [],
        "group_ids": [],
    }


def _block(position: int, block: CoreBlock) -> dict[str, Any]:
    return {
        "id": f"block-{position}",
        "label": block.label,
        "value": block.value,
        "limit": block.limit,
        "description": block.description or None,
        "read_only": block.read_only,
        "metadata": block.metadata,
        "is_template": False,
    }


def _source(position: int, folder: Folder, memory: Memory) -> dict[str, Any]:
    return {
        "id": f"source-{position}",
        "name": folder.name,
        "description": folder.description,
        "instructions": folder.instructions,
        "metadata": folder.metadata,
        "embedding_config": {"handle": memory.model_id},
    }


def _files(memory: Memory, folders: list[Folder]) -> list[dict[str, Any]]:
    files: list[dict[str, Any]] = []
    for position, folder in enumerate(folders):
        for document in memory.folders().files(folder.id):
            files.append(
                {
                    "id": f"file-{len(files)}",
                    "source_id": f"source-{position}",
                    "file_name": document.name,
                    "original_file_name": document.original_name,
                    "file_type": document.media_type,
                    "file_size": document.size_bytes,
                    "processing_status": "completed",
                    "total_chunks": document.chunks,
                    "chunks_embedded": document.chunks,
                    "content": memory.folders().file_text(folder.id, document.id),
                }
            )
    return files


def _messages(memory: Memory, agent: str) -> list[dict[str, Any]]:
    """Every message of its recall tier, oldest first, each with the record it came from."""
    recall = memory.recall(agent)
    messages: list[dict[str, Any]] = []
    after: int | None = None
    while page := recall.list(limit=_PAGE, after=after):
        metas = recall.message_meta([r.id for r in page])
        for record in page:
            for message in _as_messages(record, metas.get(record.id)):
                messages.append({"id": f"message-{len(messages)}", "record_id": record.id, **message})
        after = page[-1].id
    return messages


def _as_messages(record: Record, meta: MessageMeta | None) -> list[dict[str, Any]]:
    """A record as Letta's stored messages: a tool call is the assistant's call and the tool's answer."""
    base = {"created_at": record.created_at.isoformat()}
    call = meta.tool_call if meta is not None else None
    if call is None:
        role = record.role if record.role in ("user", "assistant", "system") else "user"
        return [{**base, "role": role, "content": [_text(record.text)]}]
    returned = SENT if call.name == "send_message" else tool_return_of(record.text, call)
    made = {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    return [
        {**base, "role": "assistant", "content": [], "tool_calls": [made]},
        {
            **base,
            "role": "tool",
            "name": call.name,
            "tool_call_id": call.id,
            "content": [{"type": "text", "text": returned}],
        },
    ]


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}
