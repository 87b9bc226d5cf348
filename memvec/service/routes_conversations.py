"""Letta's conversations (`/v1/conversations`): threads of one agent, each with its own messages and
context over the agent's shared memory (memvec.tiers.conversations). A conversation is seen by the
keys that may see its agent; to any other it does not exist (404)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from memvec.agent.preview import system_prompt
from memvec.errors import InvalidInputError, NotFoundError
from memvec.service.auth import Principal
from memvec.service.conversation_bodies import (
    CompactIn,
    CompactionOut,
    ConversationIn,
    ConversationMessagesIn,
    ConversationOut,
    ConversationPatch,
)
from memvec.service.deps import (
    Caller,
    Service,
    ServiceState,
    api_router,
    cursor,
    in_scope,
    visible_agent,
    visible_conversation,
)
from memvec.service.letta_messages import records_as_messages
from memvec.service.schemas import Deleted, LettaResponseOut
from memvec.service.sending import answered, compacted, streamed
from memvec.service.views import page
from memvec.types import AGENT_ID_PATTERN, AGENT_PATTERN
from memvec.types.conversations import CONVERSATION_ID_PATTERN, Conversation

router = api_router()
ConversationId = Annotated[
    str, Path(pattern=CONVERSATION_ID_PATTERN, description="the conversation's id (conv-<uuid>)")
]
ThreadRef = Annotated[
    str,
    Path(
        pattern=f"{CONVERSATION_ID_PATTERN}|{AGENT_ID_PATTERN}|^default$",
        description="conv-<uuid>; or `default` (with `agent_id`) or the agent's id: the agent's own messages",
    ),
]
DirectAgent = Annotated[
    str | None, Query(pattern=AGENT_PATTERN, description="with conversation_id `default`: the agent (its id or handle)")
]
AgentRef = Annotated[str, Query(pattern=AGENT_PATTERN, description="the agent's id (`agent-<uuid>`) or its handle")]
_TAGS: list[str | Enum] = ["conversations"]
_STREAMED: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "unless `streaming` is false: Server-Sent Events"}
}


def _agent(ref: str, principal: Principal, service: ServiceState) -> str:
    handle = service.memory.find_agent(ref)
    if handle is None:
        raise NotFoundError(f"agent {ref!r} not found")
    visible_agent(handle, principal, service)
    return handle


def _thread_of(ref: str, agent_id: str | None, principal: Principal, service: ServiceState) -> tuple[str, str | None]:
    """(the agent's handle, the conversation) a messages route names: a conversation's id; or, as
    Letta's agent-direct mode, `default` with `agent_id` (or an agent's id in its place) for the
    agent's own messages (conversation None)."""
    if ref == "default" or re.fullmatch(AGENT_ID_PATTERN, ref):
        named = agent_id if ref == "default" else ref
        if named is None:
            raise InvalidInputError("conversation_id 'default' names the agent's own messages: give agent_id too")
        return _agent(named, principal, service), None
    conversation = visible_conversation(ref, principal, service)
    return conversation.agent, conversation.id


def _out(conversation: Conversation, service: ServiceState) -> ConversationOut:
    return ConversationOut.of(conversation, service.memory.agent_identity(conversation.agent).id)


@router.post("/v1/conversations", response_model=ConversationOut, tags=_TAGS)
def create_conversation(
    agent_id: AgentRef, body: ConversationIn, principal: Caller, service: Service
) -> ConversationOut:
    """A new conversation of the agent: its own message history and context (empty), the agent's
    blocks and archival memory shared with its other conversations."""
    handle = _agent(agent_id, principal, service)
    made = service.memory.conversations().create(handle, summary=body.summary, model=body.model)
    return _out(made, service)


@router.get("/v1/conversations", response_model=list[ConversationOut], tags=_TAGS)
def list_conversations(
    principal: Caller,
    service: Service,
    agent_id: Annotated[str | None, Query(pattern=AGENT_PATTERN, description="only this agent's")] = None,
    after: Annotated[str | None, Query(max_length=64, description="cursor: a conversation id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    order: Annotated[Literal["asc", "desc"], Query(description="by creation: desc (default) newest first")] = "desc",
    summary_search: Annotated[str | None, Query(max_length=256, description="words its summary holds")] = None,
) -> list[ConversationOut]:
    """The conversations the caller may see (of one agent, with `agent_id`)."""
    agents: list[str] | None = None  # an unscoped key without agent_id: every agent's, in one read
    if agent_id:
        agents = [_agent(agent_id, principal, service)]
    elif principal.agents is not None:
        agents = sorted(principal.agents)
    found = service.memory.conversations().list(agents, newest_first=order == "desc")
    if summary_search:
        found = [c for c in found if summary_search.casefold() in (c.summary or "").casefold()]
    chosen = found[page([c.id for c in found], after=after, before=None, limit=limit)]
    return [_out(c, service) for c in chosen]


@router.get("/v1/conversations/{conversation_id}", response_model=ConversationOut, tags=_TAGS)
def retrieve_conversation(conversation_id: ConversationId, principal: Caller, service: Service) -> ConversationOut:
    return _out(visible_conversation(conversation_id, principal, service), service)


@router.patch("/v1/conversations/{conversation_id}", response_model=ConversationOut, tags=_TAGS)
def update_conversation(
    conversation_id: ConversationId, body: ConversationPatch, principal: Caller, service: Service
) -> ConversationOut:
    """Change its summary or model (the fields given; null clears)."""
    old = visible_conversation(conversation_id, principal, service)
    given = body.model_dump(exclude_unset=True)
    summary, model = given.get("summary", old.summary), given.get("model", old.model)
    return _out(service.memory.conversations().describe(conversation_id, summary=summary, model=model), service)


@router.delete("/v1/conversations/{conversation_id}", response_model=Deleted, tags=_TAGS)
def delete_conversation(conversation_id: ConversationId, principal: Caller, service: Service) -> Deleted:
    """Delete the conversation (its thread and context); its messages stay in the agent's recall
    memory, where `forget` (by session: the conversation's id) removes them."""
    visible_conversation(conversation_id, principal, service)
    service.memory.conversations().delete(conversation_id)
    return Deleted(message=f"conversation {conversation_id} deleted")


@router.post(
    "/v1/conversations/{conversation_id}/messages",
    response_model=LettaResponseOut,
    tags=_TAGS,
    responses=_STREAMED,
)
async def send_conversation_message(
    conversation_id: ThreadRef,
    body: ConversationMessagesIn,
    principal: Caller,
    service: Service,
    request: Request,
    agent_id: DirectAgent = None,
) -> Response:
    """Send messages to the conversation: its agent replies with the conversation's context, and every
    message it writes is in the conversation's session. Streamed (Server-Sent Events) unless
    `streaming` is false; one send at a time per agent, as `/v1/agents/{id}/messages`. `default`
    with `agent_id` sends to the agent itself (Letta's agent-direct mode)."""
    named = agent_id or body.agent_id
    agent, conversation = await run_in_threadpool(_thread_of, conversation_id, named, principal, service)
    in_scope(agent, principal)
    if conversation is not None:
        body = ConversationMessagesIn.model_validate(body.model_dump() | {"session_id": conversation})
    if body.streaming:
        return await streamed(service, request, agent, principal, body, conversation)
    return await answered(service, request, agent, principal, body, conversation)


@router.get("/v1/conversations/{conversation_id}/messages", response_model=list[dict[str, Any]], tags=_TAGS)
def list_conversation_messages(
    conversation_id: ThreadRef,
    principal: Caller,
    service: Service,
    agent_id: DirectAgent = None,
    after: Annotated[str | None, Query(description="cursor: a message id")] = None,
    before: Annotated[str | None, Query(description="cursor: a message id")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    order: Annotated[
        Literal["asc", "desc"], Query(description="desc: the newest `limit`. Oldest first either way")
    ] = "asc",
    use_assistant_message: bool = True,
) -> list[dict[str, Any]]:
    """The conversation's messages as Letta lists them, oldest first (`after`/`before`: message ids);
    `default` with `agent_id`: every message of the agent."""
    agent, conversation = _thread_of(conversation_id, agent_id, principal, service)
    recall = service.memory.recall(agent)
    newest, first, last = order == "desc", cursor(after), cursor(before)
    records = recall.list(
        limit=limit,
        newest_first=newest,
        after=last if newest else first,
        before=first if newest else last,
        session_id=conversation,
    )
    records.sort(key=lambda r: r.id)
    metas = recall.message_meta([r.id for r in records])
    return records_as_messages(records, metas, use_assistant_message=use_assistant_message)[:limit]


@router.post("/v1/conversations/{conversation_id}/compact", response_model=CompactionOut, tags=_TAGS)
async def compact_conversation(
    conversation_id: ThreadRef, principal: Caller, service: Service, body: CompactIn | None = None
) -> CompactionOut:
    """Fold the conversation's context, all but its agent's last `keep_last` messages, into its
    recursive summary now (the messages stay in recall). `default` with `agent_id`: the agent's own."""
    named = body.agent_id if body else None
    agent, conversation = await run_in_threadpool(_thread_of, conversation_id, named, principal, service)
    return await compacted(service, agent, conversation)


@router.post("/v1/conversations/{conversation_id}/recompile", response_model=str, tags=_TAGS)
def recompile_conversation(
    conversation_id: ThreadRef,
    principal: Caller,
    service: Service,
    body: CompactIn | None = None,
    dry_run: Annotated[bool, Query(description="accepted: memvec stores nothing here either way")] = False,
) -> str:
    """The system prompt as the conversation's next model call gets it (the agent's blocks and files,
    the conversation's own summary). memvec builds it afresh at every call, so there is nothing to
    recompile or persist: this shows it. `default` with `agent_id`: the agent's own."""
    agent, conversation = _thread_of(conversation_id, body.agent_id if body else None, principal, service)
    return system_prompt(service.memory, agent, conversation)
