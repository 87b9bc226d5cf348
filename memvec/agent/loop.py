"""The agent loop: call the model, run its memory tools, repeat until it sends a message.

Per reply: every step recounts the context; past `pressure` of the window the model gets one
memory-pressure alert, past the window the oldest messages are evicted into the recursive summary;
searches are limited by the page-in budget, model calls by `max_steps`. The returned trace shows
what paging cost, like a page-fault count.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from memvec.agent import llm
from memvec.agent.cancel import CancelWatch
from memvec.agent.context import MainContext, Message, model_summary
from memvec.agent.events import Event
from memvec.agent.identity import MessageIds, new_otid
from memvec.agent.prompts import BUDGET_SPENT, PRESSURE_ALERT
from memvec.agent.rules import RuleState
from memvec.agent.scratch import assistant_message, elide_tool_results, parsed_arguments
from memvec.agent.stream import TokenRelay
from memvec.agent.tools import SEARCH_TOOLS, ToolBox, ToolOutcome
from memvec.agent.trace import Reply, Step, StopReason, Trace
from memvec.errors import InvalidInputError, ModelCallError, NotFoundError
from memvec.memory import Memory
from memvec.tools.catalogue import agent_tools
from memvec.types import PendingToolCall, Record, ToolAnswer, WrittenBy
from memvec.types.messages import MessageMeta, ToolCallMeta, tool_row


class Agent:
    def __init__(
        self,
        memory: Memory,
        name: str,
        *,
        model: str | None = None,
        session_id: str | None = None,
        on_event: Callable[[Event], None] | None = None,
        stream_tokens: bool = False,
        conversation: str | None = None,
    ) -> None:
        """`on_event`: told each event of a reply as it happens (a stream); with `stream_tokens` also the
        partial chunks of the model's text as the provider streams them (memvec.agent.stream).
        `conversation`: reply in that conversation of the agent (its own context and session; Letta's
        conversations) instead of the agent's own."""
        self.on_event, self.stream_tokens = on_event, stream_tokens
        try:
            self.settings, _ = memory.get_agent(name)
        except NotFoundError:
            raise NotFoundError(f"no agent {name!r}; create it first (memvec agent create {name} ...)") from None
        self.memory = memory
        self._thread = memory.thread(name, conversation)
        self.state = self._thread.read()
        self._recorded: list[int] = []
        self._stored_settings = self.settings  # a model given here is for this chat, not kept
        model = model or self._thread.model()
        if model:
            self.settings = self.settings.model_copy(update={"model": model})
        if not self.settings.model:
            raise InvalidInputError(f"agent {name!r} has no model; pass one (e.g. --model openai/gpt-4o-mini)")
        self.session_id = session_id or conversation or datetime.now(UTC).strftime("session-%Y%m%d-%H%M%S")

    @property
    def model(self) -> str:
        assert self.settings.model is not None
        return self.settings.model

    # -- one reply ------------------------------------------------------------------------
    def reply(self, text: str, *, role: str = "user", otid: str | None = None, run_id: str | None = None) -> Reply:
        """One reply, holding the agent's lease: another server's (or thread's) reply for the same
        agent waits for it, and this one starts from the conversation state that one left. `otid`:
        the client's id for the message, `run_id` the run it is part of (Letta's), kept with what it writes."""
        with self.memory.agent_lease(self.settings.name):
            self.state = self._thread.read()
            return self._reply(text, role, otid=otid, run_id=run_id)

    def resume(self, answers_for: Callable[[list[str]], Sequence[ToolAnswer]], *, run_id: str | None = None) -> Reply:
        """Go on with the reply that stopped for the client (`requires_approval`). `answers_for` is
        given the ids of the waiting calls (as read under the lease) and gives the return of each
        tool the client ran, or approves (the server runs it) or denies each call."""
        with self.memory.agent_lease(self.settings.name):
            self.state = self._thread.read()
            if not self.state.pending_calls:
                raise InvalidInputError("no tool call of this agent waits for an answer")
            waiting = [c.id for c in self.state.pending_calls]
            answers = answers_for(waiting)
            if {a.tool_call_id for a in answers} != set(waiting) or len(answers) != len(waiting):
                raise InvalidInputError(f"answer each waiting tool call once: {', '.join(sorted(waiting))}")
            return self._reply(None, "user", answers, run_id=run_id)

    def _reply(
        self,
        text: str | None,
        role: str,
        answers: Sequence[ToolAnswer] = (),
        *,
        otid: str | None = None,
        run_id: str | None = None,
    ) -> Reply:
        self.state.turn += 1
        self._ids = MessageIds(run_id)
        self._cancel = CancelWatch(self.memory, run_id)
        self._ids.new_step()
        # written before anything of the turn: a server killed mid-reply leaves this turn id used, so
        # the next reply (on any server) takes a new one instead of giving two messages the same
        self._thread.write(self._stored_settings, self.state)
        self._recorded = []
        trace = Trace()
        context = MainContext(
            self.memory,
            self.settings,
            self.state,
            count=lambda messages: llm.count_tokens(self.model, messages),
            summarize=lambda prev, evicted: self._summarize(prev, evicted, trace),
        )
        if text is not None:
            self._remember(
                role, text, in_context=True, meta=MessageMeta(otid=otid or new_otid(), run_id=self._ids.run_id)
            )
        rules = RuleState(self.settings.tool_rules)
        tools = ToolBox(
            self.memory,
            self.settings.name,
            session_id=self.session_id,
            turn=self.state.turn,
            in_context=self.state.in_context,
            result_chars=self.settings.context_window,  # ~1/4 of the window, at ~4 chars a token
            offered=agent_tools(self.memory, self.settings),
            execution=self.memory.config.tool_execution,
            approval_needed=rules.needs_approval(),
        )
        sent: list[str] = []
        self._pending: list[PendingToolCall] = []
        try:
            scratch = self._answered(tools, trace, answers, rules) if answers else []
            trace.stopped_by = self._run(context, tools, trace, sent, rules, scratch)
        except ModelCallError:
            if trace.tool_calls == 0:  # the model never answered: the turn did nothing, so it keeps nothing
                self._unremember()  # (a retry of the same message would otherwise store it twice)
            raise
        finally:
            self.state.pending_calls = self._pending
            self._thread.write(self._stored_settings, self.state)
        return Reply(
            message=sent[-1] if sent else None,
            messages=sent,
            session_id=self.session_id,
            turn=self.state.turn,
            trace=trace,
            recorded=self._recorded,
        )

    def _answered(self, tools: ToolBox, trace: Trace, answers: Sequence[ToolAnswer], rules: RuleState) -> list[Message]:
        """The waiting calls and their answers, as the messages the model reads next."""
        given = {a.tool_call_id: a for a in answers}
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in self.state.pending_calls
        ]
        scratch: list[Message] = [{"role": "assistant", "content": None, "tool_calls": calls}]
        for call in self.state.pending_calls:
            content, ok = _answer_content(tools, call, given[call.id])
            meta = self._ids.meta(call.id, ToolCallMeta(name=call.name, arguments=call.arguments, id=call.id))
            row = tool_row(call.name, call.arguments, content)
            stored = self._remember("tool", row, in_context=False, own=True, meta=meta)
            event = Event(
                kind="tool_return", name=call.name, text=content, tool_call_id=call.id, ok=ok, record_id=stored.id
            )
            self._emit(trace, event)
            scratch.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
            rules.record(call.name, content)
            trace.tool_calls += 1
        return scratch

    def _run(
        self,
        context: MainContext,
        tools: ToolBox,
        trace: Trace,
        sent: list[str],
        rules: RuleState,
        scratch: list[Message],
    ) -> StopReason:
        budget_left = self.settings.page_in_budget
        for step in range(self.settings.max_steps):
            if self._cancel.cancelled(fresh=True):  # a client cancelled the run: stop between steps
                return "cancelled"
            if step or scratch:  # the first step of a reply that answered waiting calls is a new step too
                self._ids.new_step()
            offered = [tools.offered[name].schema for name in rules.allowed(list(tools.offered))]
            tokens = self._fit(context, scratch, trace)
            trace.model_calls += 1
            trace.add(Step(kind="model_call", tokens_in_context=tokens, name=self.model))
            relay = None
            if self.stream_tokens and self.on_event:
                relay = TokenRelay(self._announce_chunk, text_is_answer="send_message" not in tools.offered)
            message = llm.complete(
                self.model,
                context.messages(scratch),
                tools=offered or None,
                timeout=self.memory.config.llm_timeout_s,
                on_delta=relay.feed if relay else None,
                on_usage=trace.count_tokens,
                response_format=self.settings.response_format,
            )
            if self._cancel.cancelled(fresh=True):  # cancelled while the model answered: dropped
                return "cancelled"
            calls = list(message.tool_calls or [])
            if not calls:
                if message.content:  # the answer itself, unless it was relayed in chunks as it streamed
                    relayed_answer = relay is not None and relay.relayed_text
                    sent.append(self._say(str(message.content), trace, announce=not relayed_answer))
                return "no_tool_call" if "send_message" in tools.offered else "text"
            if message.content:  # already relayed in chunks when tokens stream
                self._emit(trace, Event(kind="reasoning", text=str(message.content)), announce=relay is None)
            scratch.append(assistant_message(message.content, calls))
            relayed = relay is not None and relay.relayed_message
            heartbeat, budget_left = self._run_calls(
                calls, tools, trace, scratch, sent, budget_left, tokens, relayed=relayed, rules=rules
            )
            names = {c.function.name for c in calls}
            if self._pending:
                return "requires_approval"
            if sent and "send_message" in names:
                return "send_message"
            if names & rules.exits():
                return "tool_rule"
            if not heartbeat:
                return "no_heartbeat"
        return "max_steps"

    def _run_calls(
        self,
        calls: list[Any],
        tools: ToolBox,
        trace: Trace,
        scratch: list[Message],
        sent: list[str],
        budget_left: int,
        tokens: int,
        *,
        relayed: bool = False,
        rules: RuleState,
    ) -> tuple[bool, int]:
        """`relayed`: the sent message's text already went out in chunks (not announced again whole)."""
        heartbeat = False
        for call in calls:
            name, raw = call.function.name, call.function.arguments
            outcome = tools.run(name, raw) if tools.goes_to_client(name) else None
            if outcome is not None and outcome.for_client:
                self._emit(
                    trace, Event(kind="approval_request", name=name, arguments=raw or "{}", tool_call_id=call.id)
                )
                pending = PendingToolCall(id=call.id, name=name, arguments=raw or "{}", run_by=tools.runner_of(name))
                self._pending.append(pending)
                continue
            self._emit(trace, Event(kind="tool_call", name=name, arguments=raw or "{}", tool_call_id=call.id))
            if name in SEARCH_TOOLS and budget_left <= 0:
                outcome = ToolOutcome(
                    json.dumps({"error": BUDGET_SPENT.format(budget=self.settings.page_in_budget)}), ok=False
                )
                trace.add(Step(kind="budget_spent", tokens_in_context=tokens, name=name))
            else:
                outcome = outcome or tools.run(name, raw)
                budget_left -= int(outcome.page_in)
            trace.tool_calls += 1
            trace.page_ins += int(outcome.page_in)
            trace.add(
                Step(
                    kind="tool",
                    tokens_in_context=tokens,
                    name=name,
                    arguments=parsed_arguments(raw),
                    ok=outcome.ok,
                    detail=None if outcome.ok else outcome.content,
                )
            )
            stored = None
            status = "success" if outcome.ok else "error"
            made = ToolCallMeta(name=name, arguments=raw or "{}", id=call.id, status=status)
            if outcome.sent_message is None:  # a sent message is stored as the assistant's instead
                meta = self._ids.meta(call.id, made)
                row = tool_row(name, raw or "", outcome.content)
                stored = self._remember("tool", row, in_context=False, own=True, meta=meta)
            self._emit(
                trace,
                Event(
                    kind="tool_return",
                    name=name,
                    text=outcome.content,
                    tool_call_id=call.id,
                    ok=outcome.ok,
                    record_id=stored.id if stored else None,
                    stdout=outcome.stdout,
                    stderr=outcome.stderr,
                ),
            )
            if outcome.sent_message is not None:
                sent.append(self._say(outcome.sent_message, trace, announce=not relayed, call=made))
            scratch.append({"role": "tool", "tool_call_id": call.id, "name": name, "content": outcome.content})
            rules.record(name, outcome.content)
            heartbeat = heartbeat or outcome.heartbeat or name in rules.continues()
        if budget_left == 0 and any(c.function.name in SEARCH_TOOLS for c in calls):
            scratch.append({"role": "user", "content": BUDGET_SPENT.format(budget=self.settings.page_in_budget)})
        return heartbeat, budget_left

    # -- memory pressure ------------------------------------------------------------------
    def _fit(self, context: MainContext, scratch: list[Message], trace: Trace) -> int:
        """Warn once past the pressure threshold; evict past the window. Returns the token count."""
        window = self.settings.context_window
        tokens = context.tokens(scratch)
        if tokens > self.settings.pressure * window and not trace.pressure_warnings:
            scratch.append(
                {"role": "user", "content": PRESSURE_ALERT.format(used=tokens, window=window, fraction=tokens / window)}
            )
            trace.pressure_warnings += 1
            tokens = context.tokens(scratch)
            trace.add(Step(kind="pressure_warning", tokens_in_context=tokens))
        if tokens > window:
            evicted = context.evict(scratch)
            tokens = elide_tool_results(context, scratch, window)
            trace.evicted_messages += evicted
            trace.add(Step(kind="eviction", tokens_in_context=tokens, detail=f"{evicted} messages to recall"))
        return tokens

    def _summarize(self, previous: str, evicted: list[Record], trace: Trace) -> str:
        trace.model_calls += 1
        return model_summary(
            self.model,
            previous,
            evicted,
            limit=max(400, self.settings.context_window),
            timeout=self.memory.config.llm_timeout_s,
        )

    # -- recall ---------------------------------------------------------------------------
    def _remember(
        self, role: str, text: str, *, in_context: bool, own: bool = False, meta: MessageMeta | None = None
    ) -> Record:
        """Store a message of the turn; `own`: the agent's own (its words, its tool calls and their
        returns), trusted by who wrote it. What it is sent, whatever role the sender named, is not."""
        recall = self.memory.recall(self.settings.name)
        written_by: WrittenBy | None = "agent" if own else None
        result = recall.append(
            role, text, session_id=self.session_id, turn_id=self.state.turn, written_by=written_by, meta=meta
        )
        record = result.record
        if result.created:
            self._recorded.append(record.id)
        if in_context and record.id not in self.state.in_context:
            self.state.in_context.append(record.id)
        return record

    def _unremember(self) -> None:
        for record_id in self._recorded:
            self.memory.delete_record(self.settings.name, record_id)
        self.state.in_context = [i for i in self.state.in_context if i not in self._recorded]
        self._recorded = []

    def _say(self, text: str, trace: Trace, *, announce: bool = True, call: ToolCallMeta | None = None) -> str:
        """Store and show what the agent says: plain text, or sent with send_message (`call`)."""
        meta = self._ids.meta("send_message" if call else "assistant", call)
        record = self._remember("assistant", text, in_context=True, own=True, meta=meta)
        event = Event(kind="assistant", text=text, record_id=record.id, sent_by_tool=call is not None)
        self._emit(trace, event, announce=announce)
        return text

    def _announce_chunk(self, event: Event) -> None:
        assert self.on_event is not None
        if self._cancel.cancelled():  # a cancelled run's answer is dropped: its chunks stop going out
            return
        self.on_event(self._ids.stamp(event))

    def _emit(self, trace: Trace, event: Event, *, announce: bool = True) -> None:
        event = self._ids.stamp(event)
        trace.events.append(event)
        if announce and self.on_event is not None:
            self.on_event(event)


def _answer_content(tools: ToolBox, call: PendingToolCall, answer: ToolAnswer) -> tuple[str, bool]:
    """What the model reads for a waiting call: the client's return, the approved call's, or the denial."""
    if answer.tool_return is not None:
        return answer.tool_return, answer.status == "success"
    if answer.approve:
        outcome = tools.run(call.name, call.arguments, approved=True)
        return outcome.content, outcome.ok
    return json.dumps({"error": f"the user denied {call.name}: {answer.reason or 'no reason given'}"}), False
