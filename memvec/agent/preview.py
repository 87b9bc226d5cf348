"""What the agent's model would be sent next, without sending it: the context (system prompt with
core memory and files, the messages in context) and the tools it is offered (Letta's raw payload
preview). Nothing is stored."""

from __future__ import annotations

from typing import Any

from memvec.agent.context import MainContext, Message
from memvec.agent.rules import RuleState
from memvec.memory import Memory
from memvec.tools.catalogue import agent_tools


def _context(memory: Memory, agent: str, conversation: str | None = None) -> MainContext:
    """The agent's own context, or that of one of its conversations (its messages and summary)."""
    settings, state = memory.get_agent(agent)
    if conversation is not None:
        state = memory.conversations().get(conversation).state
    return MainContext(memory, settings, state, count=lambda _: 0, summarize=lambda previous, _: previous)


def system_prompt(memory: Memory, agent: str, conversation: str | None = None) -> str:
    """The system message as the agent's next model call gets it (built afresh for every call), in
    its own thread or in `conversation`."""
    return str(_context(memory, agent, conversation).system_message()["content"])


def raw_payload(memory: Memory, agent: str, messages: list[Message]) -> dict[str, Any]:
    """The chat-completion request the next step would make with `messages` added to the context."""
    context = _context(memory, agent)
    offered = agent_tools(memory, context.settings)
    allowed = set(RuleState(context.settings.tool_rules).allowed([t.name for t in offered]))
    return {
        "model": context.settings.model or "",
        "messages": context.messages(messages),
        "tools": [t.schema for t in offered if t.name in allowed],
    }
