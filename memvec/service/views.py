"""Letta's agent and block shapes, built from what `Memory` holds (shared by the route modules)."""

from __future__ import annotations

from collections.abc import Sequence

from memvec.agent.prompts import SYSTEM_INSTRUCTIONS
from memvec.memory import Memory
from memvec.service.file_bodies import FileBlockOut
from memvec.service.schemas import AgentOut, BlockOut, EmbeddingConfigOut, FolderOut, LlmConfigOut, MemoryOut
from memvec.service.tool_bodies import ToolOut
from memvec.tools.catalogue import agent_tools
from memvec.types import AgentIdentity, AgentSettings, AgentState, CoreBlock, Folder

# litellm provider prefixes that Letta's LlmConfig names the same way
_ENDPOINT_TYPES = {
    "openai",
    "anthropic",
    "google_ai",
    "google_vertex",
    "azure",
    "groq",
    "ollama",
    "vllm",
    "mistral",
    "together",
    "bedrock",
    "deepseek",
    "xai",
    "openrouter",
    "fireworks",
}


def endpoint_type(model: str | None) -> str:
    provider = (model or "").partition("/")[0]
    return provider if provider in _ENDPOINT_TYPES else "openai"


def blocks_out(memory: Memory, agent: str) -> list[BlockOut]:
    core = memory.core(agent)
    shared = core.shared_ids()
    return [BlockOut.of(agent, block, shared) for block in core.blocks()]


def block_out(memory: Memory, agent: str, block: CoreBlock) -> BlockOut:
    return BlockOut.of(agent, block, memory.core(agent).shared_ids())


def agent_out(
    memory: Memory, settings: AgentSettings, state: AgentState, identity: AgentIdentity | None = None
) -> AgentOut:
    """`identity`: the agent's, when the caller has read it already (a listing reads them all at once)."""
    blocks = blocks_out(memory, settings.name)
    files = memory.open_files(settings.name, settings=settings)
    folders = files.folders()
    views = files.list(folders)
    identity = identity or memory.agent_identity(settings.name)
    return AgentOut(
        id=identity.id,
        name=identity.name,
        agent_type=settings.agent_type,
        blocks=blocks,
        memory=MemoryOut(
            blocks=blocks, agent_type=settings.agent_type, file_blocks=[FileBlockOut.of(v) for v in views]
        ),
        llm_config=LlmConfigOut(
            model=settings.model or "",
            model_endpoint_type=endpoint_type(settings.model),
            context_window=settings.context_window,
        ),
        embedding_config=(
            EmbeddingConfigOut(embedding_model=memory.model_id, embedding_dim=memory.embedding_dim)
            if settings.embedding is not None
            else None
        ),
        system=settings.system or SYSTEM_INSTRUCTIONS,
        tags=settings.tags,
        model=settings.model,
        embedding=settings.embedding,
        description=settings.description,
        metadata=settings.metadata,
        tools=[ToolOut.of(t).model_dump(mode="json", by_alias=True) for t in agent_tools(memory, settings)],
        tool_rules=[r.model_dump(mode="json", exclude_none=True) for r in settings.tool_rules],
        sources=[folder_out(memory, folder) for folder in folders],
        message_ids=[str(i) for i in state.in_context],
        context_window=settings.context_window,
        created_at=state.created_at,
        max_files_open=files.max_open,
        per_file_view_window_char_limit=files.char_limit,
    )


def folder_out(memory: Memory, folder: Folder) -> FolderOut:
    return FolderOut(
        id=folder.id,
        name=folder.name,
        description=folder.description,
        instructions=folder.instructions,
        metadata=folder.metadata,
        created_at=folder.created_at,
        updated_at=folder.updated_at,
        embedding_config=EmbeddingConfigOut(embedding_model=memory.model_id, embedding_dim=memory.embedding_dim),
    )


def page(ids: Sequence[str], *, after: str | None, before: str | None, limit: int) -> slice:
    """The slice of a list with these ids after `after` and before `before` (what letta-client pages
    with), at most `limit` long. An id not in the list pages past the end (after) or to the end (before)."""
    start = ids.index(after) + 1 if after in ids else (len(ids) if after is not None else 0)
    stop = ids.index(before) if before in ids else len(ids)
    return slice(start, max(start, min(stop, start + limit)))
