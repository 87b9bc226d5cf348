"""Agents and their core-memory blocks, in Letta's shapes (`letta-client` works unchanged).

An agent has Letta's `agent-<uuid>` id and a display name that may change (memvec.types.AgentIdentity);
paths take the id, or the handle the CLI and the Python API know the agent by. Blocks are addressed
by label; their `id` is `<handle>:<label>`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import HTTPException, Query
from starlette.concurrency import run_in_threadpool

from memvec.agent.models import known_context_window, model_problem
from memvec.errors import InvalidInputError
from memvec.memory import Memory
from memvec.service.auth import Principal
from memvec.service.deps import (
    BlockLabel,
    Caller,
    ScopedAgent,
    Service,
    ServiceState,
    api_router,
    in_scope,
    unscoped,
    visible_agent,
)
from memvec.service.schemas import (
    AgentCreate,
    AgentOut,
    AgentPatch,
    BlockOut,
    BlockPatch,
    Deleted,
    Forgotten,
    MemoryOut,
    ResetMessages,
)
from memvec.service.views import agent_out, block_out, blocks_out, page
from memvec.tools.catalogue import BUILTIN_TOOL_IDS, resolve_tool_refs
from memvec.types import (
    MAX_CONTEXT_WINDOW,
    MAX_DISPLAY_NAME_CHARS,
    AgentSettings,
    AgentState,
    BlockChange,
    CoreBlock,
    NewRecord,
)

router = api_router()


def _settings_changes(body: AgentCreate | AgentPatch) -> dict[str, object]:
    """The body's fields as AgentSettings fields (Letta's names mapped to memvec's)."""
    given = body.model_dump(
        exclude_unset=True,
        exclude={
            "memory_blocks",
            "name",
            "llm_config",
            "embedding_config",
            "tool_ids",
            "tools",
            "include_base_tools",
            "source_ids",
            "folder_ids",
            "block_ids",
            "initial_message_sequence",
            "model_settings",
        },
    )
    if body.model_settings and "response_format" in body.model_settings:
        given["response_format"] = body.model_settings["response_format"]
    llm, embedding = body.llm_config or {}, body.embedding_config or {}
    if "embedding" not in given and (named := embedding.get("handle") or embedding.get("embedding_model")):
        given["embedding"] = str(named)[:256]
    window = given.pop("context_window_limit", None) or given.get("context_window") or llm.get("context_window")
    if window is not None:
        given["context_window"] = window
    if "model" not in given and llm.get("model"):
        given["model"] = llm["model"]
    return {k: v for k, v in given.items() if v is not None or k == "model"}


def _opening(body: AgentCreate) -> list[NewRecord]:
    """`initial_message_sequence` as recall records (of a placeholder agent until it has a handle)."""
    return [
        message.as_record("unnamed", session_id="initial", turn=turn)
        for turn, message in enumerate(body.initial_message_sequence or [], start=1)
    ]


def _record_opening(memory: Memory, settings: AgentSettings, opening: list[NewRecord]) -> None:
    """The new agent's first messages, in its context, as turns 1..n."""
    results = memory.insert([record.model_copy(update={"agent": settings.name}) for record in opening])
    state = AgentState(turn=len(opening), in_context=[r.record.id for r in results])
    memory.update_agent(settings, state)


def _chosen_tools(memory: Memory, body: AgentCreate) -> list[str] | None:
    """The tool ids the new agent is offered (None: the built-in ones, all an agent gets by default)."""
    given = resolve_tool_refs(memory, body.tool_ids or [], body.tools or [])
    if body.include_base_tools and not given:
        return None
    base = BUILTIN_TOOL_IDS if body.include_base_tools else []
    return list(dict.fromkeys([*base, *given]))


def _in_order(ids: list[str], *, after: str | None, before: str | None, descending: bool) -> list[str]:
    """`ids` (oldest first) in the order asked, past the `after` and short of the `before` cursor."""
    ordered = ids[::-1] if descending else ids
    return ordered[page(ordered, after=after, before=before, limit=len(ordered))]


@router.post("/v1/agents", response_model=AgentOut, status_code=201, tags=["agents"])
def create_agent(body: AgentCreate, principal: Caller, service: Service) -> AgentOut:
    """Create an agent (Letta's CreateAgentRequest; its fields memvec has no use for are ignored).
    It gets an `agent-<uuid>` id; its `name` may repeat another agent's. Without `memory_blocks`
    the agent gets persona and human blocks. A key scoped to some agents creates only an agent whose
    name is one of them, free as a handle (memvec.types.AgentIdentity)."""
    memory, scoped = service.memory, principal.agents is not None
    if scoped and (body.name is None or not principal.may_see(body.name)):
        raise HTTPException(403, f"this key may not create agent {body.name!r}")
    settings = AgentSettings.model_validate(
        {"name": "unnamed", **_settings_changes(body), "tool_ids": _chosen_tools(memory, body)}
    )
    _check_model(settings.model)  # the 400s come before anything is written
    if "context_window" not in settings.model_fields_set and settings.model:
        settings = _model_window(settings)
    blocks = [CoreBlock.model_validate(b.model_dump(exclude_none=True)) for b in body.memory_blocks]
    folders = [memory.folders().get(f).id for f in dict.fromkeys([*(body.source_ids or []), *(body.folder_ids or [])])]
    shared = [memory.shared_blocks().get(block_id).label for block_id in body.block_ids or []]
    if len({*shared, *(b.label for b in blocks)}) < len(shared) + len(blocks):
        raise InvalidInputError("a shared block has the label of another of the agent's blocks")
    opening = _opening(body)  # validated before anything is written
    if folders or body.block_ids:
        unscoped(principal, "attaching folders or shared blocks on create", "they belong to the home, not to one agent")
    identity = memory.claim_agent(body.name, name_as_handle_only=scoped)
    settings = settings.model_copy(update={"name": identity.handle})
    memory.create_agent(settings, blocks=blocks, shared_block_ids=body.block_ids or (), actor=principal.actor)
    for folder_id in folders:
        memory.folders().attach(folder_id, identity.handle)
    if opening:
        _record_opening(memory, settings, opening)
    return agent_out(memory, *visible_agent(identity.handle, principal, service))


@router.get("/v1/agents", response_model=list[AgentOut], tags=["agents"])
def list_agents(
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(description="cursor: agents after this id")] = None,
    before: Annotated[str | None, Query(description="cursor: agents before this id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    name: Annotated[str | None, Query(max_length=MAX_DISPLAY_NAME_CHARS)] = None,
    query_text: Annotated[
        str | None, Query(max_length=MAX_DISPLAY_NAME_CHARS, description="display names containing this, any case")
    ] = None,
    tags: Annotated[list[str] | None, Query(max_length=32)] = None,
    match_all_tags: bool = False,
    order: Literal["asc", "desc"] = "asc",
    ascending: bool | None = None,
) -> list[AgentOut]:
    """Agents oldest first (`order=desc`: newest first), `limit` at a time after the `after` cursor
    (what letta-client pages with); `name` keeps those with that display name, `query_text` those
    whose display name contains it."""
    memory = service.memory
    wanted_text = query_text.casefold() if query_text else None
    identities = {
        i.id: i
        for h, i in memory.agent_identities().items()
        if principal.may_see(h) and name in (None, i.name) and (wanted_text is None or wanted_text in i.name.casefold())
    }
    descending = order == "desc" if ascending is None else not ascending
    wanted, found = set(tags or []), []
    for agent_id in _in_order(list(identities), after=after, before=before, descending=descending):
        settings, state = visible_agent(identities[agent_id].handle, principal, service)
        has = set(settings.tags)
        if wanted and not (wanted <= has if match_all_tags else wanted & has):
            continue  # filtered on the settings, before the blocks are read
        found.append(agent_out(memory, settings, state, identities[agent_id]))
        if len(found) == limit:
            break
    return found


@router.get("/v1/agents/{agent_id}", response_model=AgentOut, tags=["agents"])
def get_agent(agent_id: ScopedAgent, principal: Caller, service: Service) -> AgentOut:
    return agent_out(service.memory, *visible_agent(agent_id, principal, service))


@router.patch("/v1/agents/{agent_id}", response_model=AgentOut, tags=["agents"])
def modify_agent(agent_id: ScopedAgent, body: AgentPatch, principal: Caller, service: Service) -> AgentOut:
    """Change the agent's settings; `name` changes its display name (its id stays)."""
    settings, _ = visible_agent(agent_id, principal, service)
    changes = _settings_changes(body)
    if body.tool_ids is not None:
        changes["tool_ids"] = resolve_tool_refs(service.memory, body.tool_ids, [])
    if (model := changes.get("model")) != settings.model:  # a model set before the check stays usable
        _check_model(model if isinstance(model, str) else None)
    changed = AgentSettings.model_validate({**settings.model_dump(), **changes})
    if body.name is not None:
        service.memory.rename_agent(agent_id, body.name)
    service.memory.update_agent(changed)
    return agent_out(service.memory, *visible_agent(agent_id, principal, service))


@router.delete("/v1/agents/{agent_id}", response_model=Deleted, tags=["agents"])
async def delete_agent(agent_id: ScopedAgent, principal: Caller, service: Service) -> Deleted:
    """Delete the agent, its blocks and all its records (200 with a message, as Letta answers)."""
    in_scope(agent_id, principal)
    async with service.agent_slot(agent_id):
        records = await run_in_threadpool(_delete_agent, service, agent_id, principal)
    return Deleted(message=f"agent {agent_id!r} deleted with {records} records")


@router.patch("/v1/agents/{agent_id}/reset-messages", response_model=AgentOut, tags=["agents"])
async def reset_messages(
    agent_id: ScopedAgent, principal: Caller, service: Service, body: ResetMessages | None = None
) -> AgentOut:
    """Letta's reset: forget every message of the agent (its recall tier) and start afresh, with
    nothing in context and no summary. Its blocks and archival memory stay. Waits for a reply in progress."""
    in_scope(agent_id, principal)
    async with service.agent_slot(agent_id):
        return await run_in_threadpool(_reset_messages, service, agent_id, principal)


def _reset_messages(service: ServiceState, agent: str, principal: Principal) -> AgentOut:
    visible_agent(agent, principal, service)
    with service.memory.agent_lease(agent):  # not in the middle of a reply on another server
        service.memory.reset_messages(agent)
    return agent_out(service.memory, *visible_agent(agent, principal, service))


def _model_window(settings: AgentSettings) -> AgentSettings:
    """An agent given no context window gets its model's, where litellm knows it (as Letta sets it)."""
    window = known_context_window(settings.model) if settings.model else None
    if window is None:
        return settings
    return settings.model_copy(update={"context_window": min(window, MAX_CONTEXT_WINDOW)})


def _check_model(model: str | None) -> None:
    """A 400 for a model litellm could not call (memvec.agent.models), before anything is written."""
    problem = model_problem(model) if model else None
    if problem is not None:
        raise InvalidInputError(problem)


def _delete_agent(service: ServiceState, agent: str, principal: Principal) -> int:
    visible_agent(agent, principal, service)
    with service.memory.agent_lease(agent):  # not in the middle of a reply on another server
        return service.memory.delete_agent(agent)


@router.get("/v1/agents/{agent_id}/core-memory", response_model=MemoryOut, tags=["core memory"])
def get_core_memory(agent_id: ScopedAgent, principal: Caller, service: Service) -> MemoryOut:
    """The agent's whole core memory as Letta's Memory (letta-client 0.1.x `core_memory.retrieve`)."""
    settings, _ = visible_agent(agent_id, principal, service)
    blocks = blocks_out(service.memory, agent_id)
    return MemoryOut(blocks=blocks, agent_type=settings.agent_type)


@router.get("/v1/agents/{agent_id}/core-memory/blocks", response_model=list[BlockOut], tags=["core memory"])
def list_blocks(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    after: Annotated[str | None, Query(description="cursor: blocks after this block id")] = None,
    before: Annotated[str | None, Query(description="cursor: blocks before this block id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> list[BlockOut]:
    """The agent's blocks in their order; `after`/`before` take a block id (what letta-client pages with)."""
    visible_agent(agent_id, principal, service)
    blocks = blocks_out(service.memory, agent_id)
    return blocks[page([b.id for b in blocks], after=after, before=before, limit=limit)]


@router.get("/v1/agents/{agent_id}/core-memory/blocks/{label}", response_model=BlockOut, tags=["core memory"])
def get_block(agent_id: ScopedAgent, label: BlockLabel, principal: Caller, service: Service) -> BlockOut:
    visible_agent(agent_id, principal, service)
    return block_out(service.memory, agent_id, service.memory.core(agent_id).get(label))


@router.patch("/v1/agents/{agent_id}/core-memory/blocks/{label}", response_model=BlockOut, tags=["core memory"])
def modify_block(agent_id: ScopedAgent, label: str, body: BlockPatch, principal: Caller, service: Service) -> BlockOut:
    visible_agent(agent_id, principal, service)
    core = service.memory.core(agent_id, actor=principal.actor)
    return block_out(service.memory, agent_id, core.change(label, body.changes(label)))


@router.get(
    "/v1/agents/{agent_id}/core-memory/blocks/{label}/history", response_model=list[BlockChange], tags=["core memory"]
)
def block_history(agent_id: ScopedAgent, label: BlockLabel, principal: Caller, service: Service) -> list[BlockChange]:
    """memvec only: every change of the block, oldest first: the whole block before and after,
    when, and who (`tool:NAME`, `http:KEY-ID`, `cli`, `import`, `python`); `undone_by` marks undone ones."""
    visible_agent(agent_id, principal, service)
    return service.memory.core(agent_id).history(label)


@router.delete(
    "/v1/agents/{agent_id}/core-memory/blocks/{label}/history", response_model=Forgotten, tags=["core memory"]
)
def forget_block_history(agent_id: ScopedAgent, label: BlockLabel, principal: Caller, service: Service) -> Forgotten:
    """memvec only: forget the block's past values (its history); the block keeps its value and
    has nothing left to undo. What `forget` does for records, for a block's old text."""
    visible_agent(agent_id, principal, service)
    return Forgotten(forgotten=service.memory.core(agent_id).forget_history(label))


@router.post(
    "/v1/agents/{agent_id}/core-memory/blocks/{label}/undo", response_model=BlockOut | None, tags=["core memory"]
)
def undo_block(agent_id: ScopedAgent, label: BlockLabel, principal: Caller, service: Service) -> BlockOut | None:
    """memvec only: revert the block's latest change not yet undone (again: one further back). The
    block as it is now, or null when the undone change had created it. 409 if it changed outside
    its history since."""
    visible_agent(agent_id, principal, service)
    block = service.memory.core(agent_id, actor=principal.actor).undo(label)
    return block_out(service.memory, agent_id, block) if block is not None else None
