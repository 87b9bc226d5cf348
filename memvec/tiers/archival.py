"""Archival memory: long-term passages an agent (or an app) inserts and searches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvec.search.engine import Engine
from memvec.types import (
    Fusion,
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchMode,
    SearchRequest,
    Tier,
)


class ArchivalMemory:
    tier = Tier.ARCHIVAL

    def __init__(self, engine: Engine, agent: str) -> None:
        self._engine = engine
        self.agent = agent

    def insert(self, text: str, *, tags: Sequence[str] = (), source_url: str | None = None,
               session_id: str | None = None, turn_id: str | int | None = None,
               created_at: datetime | None = None) -> InsertResult:
        record = NewRecord.model_validate({
            "agent": self.agent, "tier": self.tier, "text": text, "tags": list(tags),
            "created_at": created_at,
            "citation": {"session_id": session_id, "turn_id": turn_id, "source_url": source_url}})
        return self._engine.insert([record])[0]

    def insert_many(self, records: Sequence[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(self, query: str, *, k: int = 10, mode: SearchMode | str = SearchMode.HYBRID,
               tags: Sequence[str] = (), tag_match: str = "any", start: datetime | None = None,
               end: datetime | None = None, fusion: Fusion | str | None = None,
               vector_weight: float | None = None) -> list[Hit]:
        filters = SearchFilters.model_validate({"tags": list(tags), "tag_match": tag_match,
                                                "start": start, "end": end})
        return self._engine.search(SearchRequest.model_validate({
            "agent": self.agent, "tier": self.tier, "query": query, "k": k, "mode": mode,
            "fusion": fusion, "vector_weight": vector_weight, "filters": filters}))

    def list(self, *, limit: int = 50, offset: int = 0, newest_first: bool = False) -> list[Record]:
        return self._engine.list_records(self.agent, self.tier, limit=limit, offset=offset, newest_first=newest_first)

    def get(self, record_id: int) -> Record:
        return self._engine.get(self.agent, record_id)

    def delete(self, record_id: int) -> Record:
        return self._engine.delete(self.agent, record_id)

    def count(self) -> int:
        return self._engine.store.count(self.agent, self.tier)



