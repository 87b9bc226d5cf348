"""The memory tools the model calls, as OpenAI/litellm tool schemas, and their execution.

Every failure (unknown tool, bad arguments, unknown block, over the limit, budget spent) comes back
to the model as a readable tool error; nothing here raises into the loop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memvec.errors import MemvecError
from memvec.guard import fence
from memvec.memory import Memory
from memvec.types import MAX_TEXT_CHARS, Hit, describe_validation_error

SEARCH_TOOLS = frozenset({"archival_memory_search", "conversation_search"})


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    request_heartbeat: bool = Field(default=True, description="Continue thinking after this tool returns.")


class CoreAppendArgs(_Args):
    label: str = Field(description="Core memory block, e.g. 'human' or 'persona'.")
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)


class CoreReplaceArgs(_Args):
    label: str
    old_content: str = Field(min_length=1, description="Exact text to replace.")
    new_content: str = Field(description="Replacement (empty to delete).")


class ArchivalInsertArgs(_Args):
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    tags: list[str] = Field(default_factory=list)


class ArchivalSearchArgs(_Args):
    query: str = Field(min_length=1)
    top_k: int = Field(default=5, ge=1, le=50)
    tags: list[str] = Field(default_factory=list)


class ConversationSearchArgs(_Args):
    query: str = Field(min_length=1)
    roles: list[str] = Field(default_factory=lambda: ["user", "assistant"])
    start_date: date | datetime | None = Field(default=None, description="ISO date or datetime, inclusive")
    end_date: date | datetime | None = Field(default=None, description="ISO date or datetime, inclusive")
    limit: int = Field(default=5, ge=1, le=50)


class SendMessageArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, description="The message shown to the user.")


ARGUMENTS: dict[str, type[BaseModel]] = {
    "core_memory_append": CoreAppendArgs, "core_memory_replace": CoreReplaceArgs,
    "archival_memory_insert": ArchivalInsertArgs, "archival_memory_search": ArchivalSearchArgs,
    "conversation_search": ConversationSearchArgs, "send_message": SendMessageArgs,
}
DESCRIPTIONS = {
    "core_memory_append": "Append text to a core memory block (always visible to you).",
    "core_memory_replace": "Replace exact text in a core memory block.",
    "archival_memory_insert": "Save a passage to long-term archival memory.",
    "archival_memory_search": "Search archival memory (hybrid keyword + semantic). Uses one page-in.",
    "conversation_search": ("Search past messages in recall memory (those not already in your context), optionally "
                            "by role and date. Uses one page-in."),
    "send_message": "Send a message to the user. Ends your turn.",
}


def tool_schemas() -> list[dict[str, Any]]:
    schemas = []
    for name, model in ARGUMENTS.items():
        parameters = model.model_json_schema()
        parameters.pop("title", None)
        schemas.append({"type": "function",
                        "function": {"name": name, "description": DESCRIPTIONS[name], "parameters": parameters}})
    return schemas


@dataclass
class ToolOutcome:
    content: str
    ok: bool = True
    heartbeat: bool = True
    sent_message: str | None = None
    page_in: bool = False


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(content=json.dumps({"error": message}), ok=False)


def day_bound(value: date | datetime | None, *, end: bool) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.combine(value, time.max if end else time.min, tzinfo=UTC)


def hits_for_model(hits: list[Hit], max_chars: int = 8_000) -> str:
    """Search results as the model sees them: citations included, untrusted text fenced, and the
    lowest-ranked hits dropped until the result fits `max_chars` (a share of the context window)."""
    def shown(hit: Hit) -> str:
        text = hit.text if len(hit.text) <= max_chars // 2 else hit.text[: max_chars // 2] + " [...]"
        return fence(text, record_id=hit.id) if hit.untrusted else text

    rows: list[dict[str, Any]] = [
        {"id": h.id, "role": h.role, "text": shown(h), "untrusted": h.untrusted,
         "created_at": h.created_at.isoformat(timespec="seconds"),
         "citation": h.citation.model_dump(exclude_none=True), "score": round(h.score, 3)} for h in hits]
    dropped = 0
    while True:
        text = json.dumps({"count": len(rows), "dropped_for_space": dropped, "results": rows}, ensure_ascii=False)
        if len(text) <= max_chars or len(rows) <= 1:
            return text
        rows.pop()
        dropped += 1


class ToolBox:
    def __init__(self, memory: Memory, agent: str, *, session_id: str | None, turn: int,
                 in_context: list[int] | None = None, result_chars: int = 8_000) -> None:
        self.memory, self.agent = memory, agent
        self.result_chars = result_chars
        self.session_id, self.turn = session_id, turn
        # messages already in the main context are not paged in again
        self.in_context = in_context if in_context is not None else []
        self._handlers: dict[str, Callable[[Any], ToolOutcome]] = {
            "core_memory_append": self._core_append, "core_memory_replace": self._core_replace,
            "archival_memory_insert": self._archival_insert, "archival_memory_search": self._archival_search,
            "conversation_search": self._conversation_search, "send_message": self._send_message,
        }

    def run(self, name: str, raw_arguments: str | None) -> ToolOutcome:
        if name not in self._handlers:
            return _error(f"unknown tool {name!r}; available: {', '.join(self._handlers)}")
        try:
            args = ARGUMENTS[name].model_validate(json.loads(raw_arguments or "{}"))
        except json.JSONDecodeError as exc:
            return _error(f"arguments of {name} are not valid JSON: {exc}")
        except ValidationError as exc:
            return _error(f"bad arguments for {name}: {describe_validation_error(exc)}")
        try:
            outcome = self._handlers[name](args)
        except (MemvecError, ValidationError, ValueError) as exc:
            text = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
            return _error(f"{name} failed: {text}")
        outcome.heartbeat = getattr(args, "request_heartbeat", False) and name != "send_message"
        return outcome

    def _core_append(self, args: CoreAppendArgs) -> ToolOutcome:
        block = self.memory.core(self.agent).append(args.label, args.content)
        return ToolOutcome(json.dumps({"ok": True, "block": block.label, "chars": f"{len(block.value)}/{block.limit}"}))

    def _core_replace(self, args: CoreReplaceArgs) -> ToolOutcome:
        block = self.memory.core(self.agent).replace(args.label, args.old_content, args.new_content)
        return ToolOutcome(json.dumps({"ok": True, "block": block.label, "chars": f"{len(block.value)}/{block.limit}"}))

    def _archival_insert(self, args: ArchivalInsertArgs) -> ToolOutcome:
        result = self.memory.archival(self.agent).insert(args.content, tags=args.tags, session_id=self.session_id,
                                                         turn_id=self.turn)
        return ToolOutcome(json.dumps({"ok": True, "id": result.record.id, "duplicate": not result.created,
                                       "untrusted": result.record.untrusted}))

    def _archival_search(self, args: ArchivalSearchArgs) -> ToolOutcome:
        hits = self.memory.archival(self.agent).search(args.query, k=args.top_k, tags=args.tags)
        return ToolOutcome(hits_for_model(hits, self.result_chars), page_in=True)

    def _conversation_search(self, args: ConversationSearchArgs) -> ToolOutcome:
        visible = set(self.in_context)
        hits = self.memory.recall(self.agent).search(args.query, k=args.limit + len(visible), roles=args.roles,
                                                     start=day_bound(args.start_date, end=False),
                                                     end=day_bound(args.end_date, end=True))
        kept = [h for h in hits if h.id not in visible][:args.limit]
        return ToolOutcome(hits_for_model(kept, self.result_chars), page_in=True)

    def _send_message(self, args: SendMessageArgs) -> ToolOutcome:
        return ToolOutcome(json.dumps({"ok": True}), heartbeat=False, sent_message=args.message)
