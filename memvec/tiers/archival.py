"""Archival memory: long-term passages an agent (or an app) inserts and searches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvec.tiers.base import TierView
from memvec.types import Fusion, Hit, InsertResult, NewRecord, Record, SearchMode, Tier


class ArchivalMemory(TierView):
    tier = Tier.ARCHIVAL

    def insert(self, text: str, *, tags: Sequence[str] = (), source_url: str | None = None,
               session_id: str | None = None, turn_id: str | int | None = None,
               created_at: datetime | None = None, expires_at: datetime | None = None) -> InsertResult:
        """`expires_at`: from then on the passage is never returned, and it is purged."""
        return self._insert_one(text, tags=tags, source_url=source_url, session_id=session_id, turn_id=turn_id,
                                created_at=created_at, expires_at=expires_at)

    def insert_many(self, records: Sequence[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(self, query: str, *, k: int = 10, mode: SearchMode | str = SearchMode.HYBRID,
               tags: Sequence[str] = (), tag_match: str = "any", start: datetime | None = None,
               end: datetime | None = None, fusion: Fusion | str | None = None,
               vector_weight: float | None = None, rerank: bool | None = None) -> list[Hit]:
        """`rerank=False` ranks hybrid hits by fusion alone (default: the learned ranker, when the
        home's model has one)."""
        filters = {"tags": list(tags), "tag_match": tag_match, "start": start, "end": end}
        return self._search(query, k=k, mode=mode, filters=filters, fusion=fusion, vector_weight=vector_weight,
                            rerank=rerank)

    def list(self, *, limit: int = 50, offset: int = 0, newest_first: bool = False,
             after: int | None = None, before: int | None = None) -> list[Record]:
        """Passages in time order (oldest first unless `newest_first`); `after`/`before` are record-id cursors."""
        return self._list(limit=limit, offset=offset, newest_first=newest_first, after=after, before=before)
