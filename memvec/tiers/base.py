"""What the archival and recall tiers share: building records and requests for one agent's tier."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

from memvec.engine.engine import Engine
from memvec.types import Hit, InsertResult, NewRecord, Record, SearchFilters, SearchRequest, Tier, WrittenBy


class TierView:
    tier: ClassVar[Tier]

    def __init__(self, engine: Engine, agent: str) -> None:
        self._engine = engine
        self.agent = agent

    def _insert_one(
        self,
        text: str,
        *,
        role: str | None = None,
        tags: Sequence[str] = (),
        session_id: str | None = None,
        turn_id: str | int | None = None,
        source_url: str | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        written_by: WrittenBy | None = None,
        **version: Any,
    ) -> InsertResult:
        """`version`: valid_from, valid_to, supersedes (see NewRecord)."""
        record = NewRecord.model_validate(
            {
                "agent": self.agent,
                "tier": self.tier,
                "text": text,
                "role": role,
                "tags": list(tags),
                "created_at": created_at,
                "expires_at": expires_at,
                **version,
                "citation": {"session_id": session_id, "turn_id": turn_id, "source_url": source_url},
            }
        )
        return self._engine.insert([record], written_by=written_by)[0]

    def _search(self, query: str, *, k: int, mode: Any, filters: dict[str, Any], **fusion: Any) -> list[Hit]:
        return self._engine.search(
            SearchRequest.model_validate(
                {
                    "agent": self.agent,
                    "tier": self.tier,
                    "query": query,
                    "k": k,
                    "mode": mode,
                    "filters": SearchFilters.model_validate(filters),
                    **fusion,
                }
            )
        )

    def _list(
        self,
        *,
        limit: int,
        offset: int,
        newest_first: bool,
        filters: dict[str, Any] | None = None,
        after: int | None = None,
        before: int | None = None,
    ) -> list[Record]:
        return self._engine.list_records(
            self.agent,
            self.tier,
            limit=limit,
            offset=offset,
            newest_first=newest_first,
            filters=SearchFilters.model_validate(filters or {}),
            after=after,
            before=before,
        )

    def get(self, record_id: int) -> Record:
        """The record of this agent's tier (NotFoundError when it is in another tier, or absent)."""
        return self._engine.get(self.agent, self.tier, record_id)

    def get_many(self, record_ids: Sequence[int]) -> list[Record]:
        """The records of this tier among `record_ids`, in that order; absent ones are left out."""
        return self._engine.get_many(self.agent, self.tier, record_ids)

    def delete(self, record_id: int) -> Record:
        self.get(record_id)
        return self._engine.delete(self.agent, record_id)

    def count(self) -> int:
        return self._engine.count(self.agent, self.tier)

    def embeddings(self, record_ids: Sequence[int]) -> dict[int, list[float]]:
        """The vectors these records are stored with (a record not yet embedded is left out)."""
        found: dict[int, list[float]] = {}
        for batch in self._engine.store.embeddings(self.agent, self.tier, record_ids):
            for record_id, vector, model in zip(batch.ids, batch.vectors, batch.models, strict=True):
                if model is not None:
                    found[int(record_id)] = [float(x) for x in vector]
        return found
