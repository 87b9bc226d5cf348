"""Letta's conversations (memvec.types.conversations): threads of one agent that share its core
blocks and archival tier, each with its own context (the messages in it, its recursive summary,
its turns). A conversation's messages are the agent's recall records whose session is its id, so
the agent's recall search finds them all, as a person remembers every conversation they had.

`Thread` is where a reply reads and writes its context: the agent's own (no conversation) or a
conversation's; the agent loop and the record-only path go through it and nothing else.
"""

from __future__ import annotations

import builtins
import uuid
from dataclasses import dataclass

from memvec.engine.engine import Engine
from memvec.errors import NotFoundError
from memvec.store.base import Store
from memvec.types import AgentSettings, AgentState
from memvec.types.conversations import Conversation


class Conversations:
    def __init__(self, engine: Engine) -> None:
        self._store: Store = engine.store

    def create(self, agent: str, *, summary: str | None = None, model: str | None = None) -> Conversation:
        """A new conversation of the agent (which must exist), its context empty."""
        found = self._store.get_agent(agent)
        if found is None:
            raise NotFoundError(f"agent {agent!r} not found")
        now = self._store.clock()
        conversation = Conversation(
            id=f"conv-{uuid.uuid4()}",
            agent=agent,
            summary=summary,
            model=model,
            created_at=now,
            updated_at=now,
            state=AgentState(created_at=now),
        )
        self._store.add_conversation(conversation)
        return conversation

    def get(self, conversation_id: str) -> Conversation:
        found = self._store.conversation(conversation_id)
        if found is None:
            raise NotFoundError(f"conversation {conversation_id!r} not found")
        return found

    def list(self, agents: builtins.list[str] | None, *, newest_first: bool = False) -> builtins.list[Conversation]:
        """The conversations of these agents (None: of every agent)."""
        return self._store.conversations(agents, newest_first=newest_first)

    def describe(self, conversation_id: str, *, summary: str | None, model: str | None) -> Conversation:
        """Set its summary and model (None clears either)."""
        if not self._store.describe_conversation(conversation_id, summary, model, self._store.clock()):
            raise NotFoundError(f"conversation {conversation_id!r} not found")
        return self.get(conversation_id)

    def delete(self, conversation_id: str) -> None:
        """Delete the conversation: its thread and context. Its messages stay in the agent's recall
        tier (they are the agent's memory, as those of any session; `forget` removes them)."""
        if not self._store.delete_conversation(conversation_id):
            raise NotFoundError(f"conversation {conversation_id!r} not found")


@dataclass(frozen=True)
class Thread:
    """Where a reply's context lives: the agent's own, or one conversation's (`conversation`)."""

    store: Store
    agent: str
    conversation: str | None = None

    def read(self) -> AgentState:
        if self.conversation is None:
            found = self.store.get_agent(self.agent)
            if found is None:
                raise NotFoundError(f"agent {self.agent!r} not found")
            return found[1]
        return self._conversation().state

    def write(self, settings: AgentSettings, state: AgentState) -> None:
        """Write the context only (the agent's settings, or the conversation's summary, stay as they
        are now); a conversation deleted meanwhile is a NotFoundError."""
        if self.conversation is None:
            if not self.store.put_agent_state(self.agent, state):
                self.store.put_agent(settings, state)
        elif not self.store.put_conversation_state(self.conversation, state, self.store.clock()):
            raise NotFoundError(f"conversation {self.conversation!r} not found")

    def model(self) -> str | None:
        """The conversation's own model, if it has one."""
        return self._conversation().model if self.conversation is not None else None

    def _conversation(self) -> Conversation:
        found = self.store.conversation(self.conversation or "")
        if found is None or found.agent != self.agent:
            raise NotFoundError(f"conversation {self.conversation!r} of agent {self.agent!r} not found")
        return found
