"""Recall memory: every conversation message, searchable by meaning, words, role and date."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvec.search.engine import Engine
from memvec.types import (
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchMode,
    SearchRequest,
    Tier,
)


class RecallMemory:
    tier = Tier.RECALL

    def __init__(self, engine: Engine, agent: str) -> None:
        self._engine = engine
        self.agent = agent

    def append(self, role: str, text: str, *, session_id: str | None = None,
               turn_id: str | int | None = None, source_url: str | None = None,
               tags: Sequence[str] = (), created_at: datetime | None = None) -> InsertResult:
        record = NewRecord.model_validate({
            "agent": self.agent, "tier": self.tier, "text": text, "role": role, "tags": list(tags),
            "created_at": created_at,
            "citation": {"session_id": session_id, "turn_id": turn_id, "source_url": source_url}})
        return self._engine.insert([record])[0]

    def append_many(self, records: Sequence[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(self, query: str, *, k: int = 10, mode: SearchMode | str = SearchMode.HYBRID,
               roles: Sequence[str] = (), start: datetime | None = None, end: datetime | None = None,
               session_id: str | None = None) -> list[Hit]:
        filters = SearchFilters.model_validate({"roles": list(roles), "start": start, "end": end,
                                                "session_id": session_id})
        return self._engine.search(SearchRequest.model_validate({
            "agent": self.agent, "tier": self.tier, "query": query, "k": k, "mode": mode,
            "filters": filters}))

    def list(self, *, limit: int = 50, offset: int = 0, newest_first: bool = False,
             roles: Sequence[str] = (), start: datetime | None = None,
             end: datetime | None = None) -> list[Record]:
        """Messages in time order (oldest first unless `newest_first`)."""
        filters = SearchFilters.model_validate({"roles": list(roles), "start": start, "end": end})
        return self._engine.list_records(self.agent, self.tier, limit=limit, offset=offset,
                                 newest_first=newest_first, filters=filters)

    def count(self) -> int:
        return self._engine.store.count(self.agent, self.tier)
