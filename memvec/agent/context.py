"""The main context: system instructions, core memory, memory statistics, the recursive summary,
then the FIFO of recent messages; and the eviction that keeps it inside the token window.

The FIFO persists between replies as recall-record ids (user messages and the agent's replies);
tool calls and their results live in the context only for the reply that made them (they are
stored in recall with role "tool", for audit and search).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memvec.agent import llm
from memvec.agent.directories import PREAMBLE, directories
from memvec.agent.prompts import SUMMARY_INSTRUCTIONS, SYSTEM_INSTRUCTIONS
from memvec.memory import Memory
from memvec.types import AgentSettings, AgentState, Record

log = logging.getLogger("memvec.agent")
Message = dict[str, Any]
TokenCounter = Callable[[list[Message]], int]


def record_message(record: Record) -> Message:
    role = "assistant" if record.role == "assistant" else "user"
    return {"role": role, "content": record.text}


class MainContext:
    def __init__(
        self,
        memory: Memory,
        settings: AgentSettings,
        state: AgentState,
        *,
        count: TokenCounter,
        summarize: Callable[[str, list[Record]], str],
    ) -> None:
        self.memory, self.settings, self.state = memory, settings, state
        self.count, self.summarize = count, summarize

    def system_message(self) -> Message:
        name = self.settings.name
        recall_n = self.memory.recall(name).count()
        archival_n = self.memory.archival(name).count()
        text = (
            f"{self.settings.system or SYSTEM_INSTRUCTIONS}\n\n### Memory statistics\n"
            f"{recall_n} messages are stored in recall memory and {archival_n} passages in archival memory "
            f"(not shown; search them).\n\n### Core memory\n{self.memory.core(name).render() or '(empty)'}\n\n"
            f"### Summary of earlier conversation\n{self.state.summary or '(nothing evicted yet)'}"
        )
        files = self.memory.open_files(name, settings=self.settings)
        folders = files.folders()
        if section := directories(folders, files.list(folders), files.max_open):
            text += f"\n\n{PREAMBLE}\n\n{section}"
        return {"role": "system", "content": text}

    def fifo_records(self) -> list[Record]:
        return self.memory.recall(self.settings.name).get_many(self.state.in_context)

    def messages(self, scratch: list[Message]) -> list[Message]:
        return [self.system_message(), *(record_message(r) for r in self.fifo_records()), *scratch]

    def tokens(self, scratch: list[Message]) -> int:
        return self.count(self.messages(scratch))

    def evict(self, scratch: list[Message]) -> int:
        """Move the oldest messages out until the context is at most half the window (keeping the
        last `keep_last`), folding them into the recursive summary. Returns how many left."""
        target = self.settings.context_window // 2
        evicted: list[Record] = []
        while len(self.state.in_context) > self.settings.keep_last and self.tokens(scratch) > target:
            evicted += self.memory.recall(self.settings.name).get_many([self.state.in_context.pop(0)])
        if evicted:
            self.state.summary = self._bounded(self.summarize(self.state.summary, evicted))
        while self.tokens(scratch) > self.settings.context_window and self.state.summary:
            self.state.summary = self.state.summary[: len(self.state.summary) // 2]  # last resort: shorter summary
        return len(evicted)

    def summary_limit(self) -> int:
        return summary_limit(self.settings.context_window)

    def _bounded(self, summary: str) -> str:
        return bounded_summary(summary, self.summary_limit())


def summary_limit(context_window: int) -> int:
    """The recursive summary's characters at most: ~1/4 of the window in tokens, at ~4 chars a token."""
    return max(400, context_window)


def bounded_summary(summary: str, limit: int) -> str:
    return summary if len(summary) <= limit else summary[: limit - 3] + "..."


def transcript(records: list[Record]) -> str:
    return "\n".join(f"[turn {r.citation.turn_id}] {r.role}: {r.text}" for r in records)


def extractive_summary(previous: str, evicted: list[Record], limit: int) -> str:
    """No model needed: the previous summary plus the first sentence of each evicted message."""
    lines = [previous] if previous else []
    for record in evicted:
        first = record.text.strip().split("\n")[0]
        first = first.split(". ")[0][:200]
        lines.append(f"[turn {record.citation.turn_id}] {record.role}: {first}")
    text = "\n".join(lines)
    return text if len(text) <= limit else "..." + text[-(limit - 3) :]


def model_summary(
    model: str | None, previous: str, evicted: list[Record], limit: int, *, timeout: float = llm.DEFAULT_TIMEOUT_S
) -> str:
    """Recursive summary made by the model, or the extractive one when no model can make it."""
    if model:
        messages = [
            {"role": "system", "content": SUMMARY_INSTRUCTIONS.format(limit=limit)},
            {
                "role": "user",
                "content": f"Previous summary:\n{previous or '(none)'}\n\n"
                f"Messages leaving the context:\n{transcript(evicted)}",
            },
        ]
        try:
            text = str(llm.complete(model, messages, timeout=timeout).content or "").strip()
            if text:
                return text
        except Exception as exc:  # any provider failure: keep going with the extractive summary
            log.warning("summary by %s failed (%s); using the extractive summary", model, exc)
    return extractive_summary(previous, evicted, limit)
