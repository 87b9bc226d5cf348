"""Sending messages to an agent (or one of its conversations) as Letta's routes do: the reply or,
for an agent without a model, the record; answered whole, streamed, or in the background; each a run."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import Request, Response
from starlette.concurrency import run_in_threadpool

from memvec.agent.compact import compact
from memvec.agent.events import Event
from memvec.agent.identity import new_otid
from memvec.agent.trace import Reply
from memvec.errors import InvalidInputError
from memvec.service.auth import Principal
from memvec.service.conversation_bodies import CompactionOut
from memvec.service.deps import ServiceState, visible_agent
from memvec.service.letta_messages import event_message, record_message, shown, stop_message, usage_message
from memvec.service.retries import (
    answered_once,
    claimed_stream,
    nobody_listening,
    recorded_reply,
    run_or_drop,
    ticket_of,
)
from memvec.service.schemas import ApprovalIn, LettaResponseOut, MessageIn, MessagesIn, PassageOut
from memvec.service.streaming import Emit, stream_reply
from memvec.types.messages import MessageMeta

_ANYONE = Principal()  # the service's own bookkeeping acts for every agent
# memvec's stop reasons in Letta's words
STOP_REASONS = {
    "send_message": "end_turn",
    "no_heartbeat": "end_turn",
    "text": "end_turn",
    "cancelled": "cancelled",
    "no_tool_call": "no_tool_call",
    "max_steps": "max_steps",
    "tool_rule": "tool_rule",
    "requires_approval": "requires_approval",
}


def _record_only(
    service: ServiceState,
    agent: str,
    messages: list[MessageIn],
    session_id: str | None,
    run_id: str,
    conversation: str | None = None,
) -> LettaResponseOut:
    """Record the messages under the agent's lease: the turn ids it hands out are read and written
    back by one holder at a time across every server and worker on the store, so none is handed out twice."""
    with service.memory.agent_lease(agent):
        settings, _ = visible_agent(agent, _ANYONE, service)
        thread = service.memory.thread(agent, conversation)
        state = thread.read()
        records = [
            message.as_record(agent, session_id=session_id or conversation, turn=state.turn + n)
            for n, message in enumerate(messages, start=1)
        ]
        state.turn += len(records)
        thread.write(settings, state)  # the turns first: a crash then skips them, never reuses
        results = service.memory.insert(records)
    recall, metas = service.memory.recall(agent), {}
    for message, result in zip(messages, results, strict=True):
        if result.created:
            metas[result.record.id] = MessageMeta(otid=message.otid or new_otid(), run_id=run_id)
            recall.put_message_meta(result.record.id, metas[result.record.id])
    stored = [r.record for r in results]
    return LettaResponseOut(
        messages=[record_message(r, metas.get(r.id)) for r in stored],
        stop_reason=stop_message("end_turn"),
        usage=usage_message(0),
        recorded=[PassageOut.of(r.record, created=r.created, duplicate_of=r.duplicate_of) for r in results],
    )


def _run_agent(
    service: ServiceState,
    agent: str,
    messages: list[ApprovalIn | MessageIn],
    session_id: str | None,
    run_id: str,
    emit: Emit | None = None,
    stream_tokens: bool = False,
    use_assistant_message: bool = True,
    conversation: str | None = None,
) -> LettaResponseOut:
    from memvec.agent import Agent

    announce = _announcer(emit, use_assistant_message)
    bot = Agent(
        service.memory,
        agent,
        session_id=session_id,
        on_event=announce,
        stream_tokens=stream_tokens,
        conversation=conversation,
    )
    replies: list[Reply] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ApprovalIn):
            reply = bot.resume(message.answers, run_id=run_id)
        else:
            reply = bot.reply(message.text(), role=message.name or message.role, otid=message.otid, run_id=run_id)
        replies.append(reply)
        out += [event_message(e) for e in reply.trace.events if shown(e, use_assistant_message=use_assistant_message)]
    added = [record_id for reply in replies for record_id in reply.recorded]
    last = replies[-1].trace.stopped_by or "send_message"
    return LettaResponseOut(
        messages=out,
        stop_reason=stop_message(STOP_REASONS[last]),
        usage=usage_message(
            sum(r.trace.model_calls for r in replies),
            sum(r.trace.prompt_tokens for r in replies),
            sum(r.trace.completion_tokens for r in replies),
        ),
        recorded=[PassageOut.of(r) for r in service.memory.recall(agent).get_many(added)],
        traces=[r.trace.model_dump(mode="json", exclude={"events"}) for r in replies],
    )


def _announcer(emit: Emit | None, use_assistant_message: bool) -> Callable[[Event], None] | None:
    """Each reply event a client sees as the Letta message a stream sends (None: nobody is listening)."""
    if emit is None:
        return None

    def tell(event: Event) -> None:
        if shown(event, use_assistant_message=use_assistant_message):
            emit(event_message(event))

    return tell


def _only_wanted(emit: Emit, body: MessagesIn) -> Emit:
    def tell(message: dict[str, Any]) -> None:
        if body.wanted(message):
            emit(message)

    return tell


def send(
    service: ServiceState,
    agent: str,
    principal: Principal,
    body: MessagesIn,
    emit: Emit | None = None,
    *,
    run_id: str | None = None,
    conversation: str | None = None,
) -> LettaResponseOut:
    """The reply (or the record) of `body`, as a run (Letta's: `run_id`'s, else a new one) that ends
    completed with its stop reason and usage, or failed; with `emit`, each message is told as it
    happens. Only the messages of the types the client asked for (`include_return_message_types`)
    are answered or told. `conversation`: sent to that conversation of the agent."""
    runs = service.memory.runs()
    run = runs.running(run_id) if run_id else runs.start(agent, background=False)
    told = None if emit is None else _only_wanted(emit, body)
    try:
        out = _sent(service, agent, principal, body, run.id, told, conversation)
    except Exception as exc:
        runs.fail(run.id, f"{type(exc).__name__}: {exc}")
        raise
    runs.finish(run.id, stop_reason=str(out.stop_reason.get("stop_reason")), usage=_counts(out.usage))
    return out.model_copy(update={"messages": [m for m in out.messages if body.wanted(m)]})


def _counts(usage: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in usage.items() if isinstance(v, int)}


def _sent(
    service: ServiceState,
    agent: str,
    principal: Principal,
    body: MessagesIn,
    run_id: str,
    told: Emit | None,
    conversation: str | None = None,
) -> LettaResponseOut:
    settings, _ = visible_agent(agent, principal, service)
    if settings.model or (conversation and service.memory.thread(agent, conversation).model()):
        messages, stream_tokens, shown_as = body.all_messages(), body.stream_tokens, body.use_assistant_message
        return _run_agent(
            service, agent, messages, body.session_id, run_id, told, stream_tokens, shown_as, conversation
        )
    plain = [m for m in body.all_messages() if isinstance(m, MessageIn)]
    if len(plain) < len(body.all_messages()):
        raise InvalidInputError("this agent has no model: no tool call of its waits for an approval")
    out = _record_only(service, agent, plain, body.session_id, run_id, conversation)
    if told is not None:
        for message in out.messages:
            told(message)
    return out


async def streamed(
    service: ServiceState,
    request: Request,
    agent: str,
    principal: Principal,
    body: MessagesIn,
    conversation: str | None = None,
) -> Response:
    await run_in_threadpool(visible_agent, agent, principal, service)  # 404 before the stream begins
    ticket = ticket_of(request, principal, agent, body)
    if (replayed := await claimed_stream(service, agent, ticket)) is not None:
        return replayed
    sending = partial(send, service, agent, principal, body, conversation=conversation)
    reply = recorded_reply(service, ticket, sending)
    stream = await run_or_drop(service, ticket, lambda: stream_reply(service, agent, reply, request=request))
    # None: the client left while the agent was busy
    return nobody_listening() if stream is None else stream


async def answered(
    service: ServiceState,
    request: Request,
    agent: str,
    principal: Principal,
    body: MessagesIn,
    conversation: str | None = None,
) -> Response:
    """The reply of a send as one answer, in the agent's slot (the client gone meanwhile: not run);
    a retry gets the first attempt's answer (memvec.service.retries)."""

    async def run() -> LettaResponseOut | None:
        async with service.agent_slot(agent):
            if await request.is_disconnected():
                return None
            return await run_in_threadpool(partial(send, service, agent, principal, body, conversation=conversation))

    return await answered_once(service, request, agent, ticket_of(request, principal, agent, body), run)


async def compacted(service: ServiceState, agent: str, conversation: str | None = None) -> CompactionOut:
    """Compact the agent's context (or its conversation's) in the agent's slot, as a send would hold it."""
    timeout = service.memory.config.llm_timeout_s
    async with service.agent_slot(agent):
        done = await run_in_threadpool(
            partial(compact, service.memory, agent, conversation=conversation, timeout_s=timeout)
        )
    return CompactionOut(num_messages_before=done.before, num_messages_after=done.after, summary=done.summary)
