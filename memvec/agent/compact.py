"""Compaction on request (Letta's `summarize` / `compact`): fold a thread's in-context messages,
all but its last `keep_last`, into its recursive summary now, as eviction would when the context
fills. The folded messages stay in recall (searchable, listed); only the context changes."""

from __future__ import annotations

from dataclasses import dataclass

from memvec.agent.context import bounded_summary, model_summary, summary_limit
from memvec.memory import Memory


@dataclass(frozen=True)
class Compaction:
    before: int = 0  # messages in context before
    after: int = 0
    summary: str = ""


def compact(memory: Memory, agent: str, *, conversation: str | None = None, timeout_s: float) -> Compaction:
    """Compact the agent's own context (or `conversation`'s) under the agent's lease, so no reply
    is between reading and writing it. The summary is the agent's model's (an extractive one
    without a model, or when the model fails), bounded as eviction bounds it."""
    with memory.agent_lease(agent):
        settings, _ = memory.get_agent(agent)
        thread = memory.thread(agent, conversation)
        state = thread.read()
        before = len(state.in_context)
        folded = state.in_context[: max(0, before - settings.keep_last)]
        if folded:
            limit = summary_limit(settings.context_window)
            records = memory.recall(agent).get_many(folded)
            summary = model_summary(thread.model() or settings.model, state.summary, records, limit, timeout=timeout_s)
            state.summary = bounded_summary(summary, limit)
            state.in_context = state.in_context[len(folded) :]
            thread.write(settings, state)
        return Compaction(before=before, after=len(state.in_context), summary=state.summary)
