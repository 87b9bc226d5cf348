"""Shared blocks in Letta's shapes: `/v1/blocks` (create, list, retrieve, modify, delete, the agents
holding one) and attaching/detaching a block to agents (`/v1/agents/{id}/core-memory/blocks/attach/{block_id}`).

A shared block's id is `block-<hex>`. An agent's own block (id `<agent>:<label>`) can be retrieved,
modified and deleted here too. A scoped key reaches only blocks held by its agents, and cannot create
or delete a shared block (those need an unscoped key: a block nobody holds belongs to no tenant)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from memvec.errors import NotFoundError
from memvec.memory import Memory
from memvec.service.auth import Principal
from memvec.service.deps import Caller, ScopedAgent, Service, ServiceState, api_router, unscoped, visible_agent
from memvec.service.schemas import AgentOut, BlockIn, BlockOut, BlockPatch, Deleted
from memvec.service.views import agent_out, block_out, page
from memvec.types import AGENT_PATTERN, LABEL_PATTERN, SHARED_BLOCK_ID_PATTERN, CoreBlock

router = api_router()

_AGENT_BLOCK = f"{AGENT_PATTERN.strip('^$')}:{LABEL_PATTERN.strip('^$')}"
BlockId = Annotated[
    str,
    Path(
        pattern=f"^({SHARED_BLOCK_ID_PATTERN.strip('^$')}|{_AGENT_BLOCK})$",
        description="a shared block's id (block-<hex>) or an agent's block (<agent>:<label>)",
    ),
]
After = Annotated[str | None, Query(max_length=140, description="cursor: items after this id")]
Before = Annotated[str | None, Query(max_length=140, description="cursor: items before this id")]
Limit = Annotated[int, Query(ge=1, le=1000)]
SharedBlockId = Annotated[str, Path(pattern=SHARED_BLOCK_ID_PATTERN, description="a shared block's id")]


_WHY = "a shared block belongs to no one agent"


def _visible_shared(memory: Memory, principal: Principal, block_id: str) -> Any:
    """The shared block, or 404 when it does not exist or none of its holders is the caller's."""
    block = memory.shared_blocks().get(block_id)
    if principal.agents is not None and not principal.agents & set(block.agents):
        raise NotFoundError(f"no shared block {block_id!r}")
    return block


def _own_block(block_id: str, principal: Principal, service: ServiceState) -> tuple[str, str] | None:
    """(agent, label) of an agent's own block id `<agent>:<label>` (404 for an agent the caller may
    not see); None for a shared block's id."""
    if ":" not in block_id:
        return None
    agent, label = block_id.split(":", 1)
    visible_agent(agent, principal, service)
    return agent, label


@router.post("/v1/blocks", response_model=BlockOut, status_code=201, tags=["blocks"])
def create_block(body: BlockIn, principal: Caller, service: Service) -> BlockOut:
    """A shared block, attached to no agent yet (attach it with
    `PATCH /v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}`)."""
    unscoped(principal, "creating a shared block", _WHY)
    block = CoreBlock.model_validate(body.model_dump(exclude_none=True))
    made = service.memory.shared_blocks(actor=principal.actor).create(block)
    return BlockOut.with_id(made.id, made)


@router.get("/v1/blocks", response_model=list[BlockOut], tags=["blocks"])
def list_blocks(
    principal: Caller,
    service: Service,
    label: Annotated[str | None, Query(max_length=64, description="only blocks of this label")] = None,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
) -> list[BlockOut]:
    """The blocks the caller can see, as Letta lists them: the shared blocks (a scoped key: those its
    agents hold), oldest first, then every agent's own blocks (`<agent>:<label>`), by agent."""
    memory = service.memory
    blocks = [
        BlockOut.with_id(b.id, b)
        for b in memory.shared_blocks().list(label=label)
        if principal.agents is None or principal.agents & set(b.agents)
    ]
    blocks += [BlockOut.of(agent, block) for agent, block in memory.own_blocks(label) if principal.may_see(agent)]
    return blocks[page([b.id for b in blocks], after=after, before=before, limit=limit)]


@router.get("/v1/blocks/{block_id}", response_model=BlockOut, tags=["blocks"])
def get_block(block_id: BlockId, principal: Caller, service: Service) -> BlockOut:
    if own := _own_block(block_id, principal, service):
        agent, label = own
        return block_out(service.memory, agent, service.memory.core(agent).get(label))
    shared = _visible_shared(service.memory, principal, block_id)
    return BlockOut.with_id(shared.id, shared)


@router.patch("/v1/blocks/{block_id}", response_model=BlockOut, tags=["blocks"])
def modify_block(block_id: BlockId, body: BlockPatch, principal: Caller, service: Service) -> BlockOut:
    """Change a block's value, limit, description, flags or metadata: every agent holding a shared
    block sees the change (and it is in the block's history with the caller as actor)."""
    if own := _own_block(block_id, principal, service):
        agent, label = own
        core = service.memory.core(agent, actor=principal.actor)
        return block_out(service.memory, agent, core.change(label, body.changes(label)))
    shared = _visible_shared(service.memory, principal, block_id)
    changed = service.memory.shared_blocks(actor=principal.actor).modify(block_id, body.changes(shared.label))
    return BlockOut.with_id(changed.id, changed)


@router.delete("/v1/blocks/{block_id}", response_model=Deleted, tags=["blocks"])
def delete_block(block_id: BlockId, principal: Caller, service: Service) -> Deleted:
    """Delete a block: a shared one from every agent holding it, with its history."""
    if own := _own_block(block_id, principal, service):
        agent, label = own
        service.memory.core(agent, actor=principal.actor).delete(label)
        return Deleted(message=f"block {label!r} of agent {agent!r} deleted")
    unscoped(principal, "deleting a shared block", _WHY)
    service.memory.shared_blocks(actor=principal.actor).delete(block_id)
    return Deleted(message=f"shared block {block_id} deleted")


@router.get("/v1/blocks/{block_id}/agents", response_model=list[AgentOut], tags=["blocks"])
def block_agents(
    block_id: SharedBlockId,
    principal: Caller,
    service: Service,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
) -> list[AgentOut]:
    """The agents holding a shared block (those the caller can see); the cursors are agent ids."""
    memory = service.memory
    block = _visible_shared(memory, principal, block_id)
    held = {i.id: i for i in (memory.agent_identity(a) for a in block.agents if principal.may_see(a))}
    ids = list(held)
    return [
        agent_out(memory, *memory.get_agent(held[i].handle), held[i])
        for i in ids[page(ids, after=after, before=before, limit=limit)]
    ]


@router.patch("/v1/agents/{agent_id}/core-memory/blocks/attach/{block_id}", response_model=AgentOut, tags=["blocks"])
def attach_block(agent_id: ScopedAgent, block_id: SharedBlockId, principal: Caller, service: Service) -> AgentOut:
    """Attach a shared block to the agent: it is in the agent's prompt from its next step. 409 when
    the agent already has a block of that label."""
    settings, state = visible_agent(agent_id, principal, service)
    _visible_shared(service.memory, principal, block_id)  # a scoped key: one its agents hold already
    service.memory.shared_blocks(actor=principal.actor).attach(agent_id, block_id)
    return agent_out(service.memory, settings, state)


@router.patch("/v1/agents/{agent_id}/core-memory/blocks/detach/{block_id}", response_model=AgentOut, tags=["blocks"])
def detach_block(agent_id: ScopedAgent, block_id: SharedBlockId, principal: Caller, service: Service) -> AgentOut:
    """Detach a shared block from the agent (the block stays, with its other holders)."""
    settings, state = visible_agent(agent_id, principal, service)
    _visible_shared(service.memory, principal, block_id)
    service.memory.shared_blocks(actor=principal.actor).detach(agent_id, block_id)
    return agent_out(service.memory, settings, state)
