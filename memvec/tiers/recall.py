"""Recall memory: every conversation message, searchable by meaning, words, role and date."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvec.tiers.base import TierView
from memvec.types import Hit, InsertResult, NewRecord, Record, SearchMode, Tier, WrittenBy
from memvec.types.messages import MessageMeta


class RecallMemory(TierView):
    tier = Tier.RECALL

    def append(
        self,
        role: str,
        text: str,
        *,
        session_id: str | None = None,
        turn_id: str | int | None = None,
        source_url: str | None = None,
        tags: Sequence[str] = (),
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        written_by: WrittenBy | None = None,
        meta: MessageMeta | None = None,
    ) -> InsertResult:
        """One message; `written_by="agent"` when the agent loop writes it (its own messages and tool
        calls: trusted by who wrote them, never flagged for their text). `meta`: its Letta identity,
        written right after it (a crash between leaves the message without it, listed with none)."""
        result = self._insert_one(
            text,
            role=role,
            tags=tags,
            session_id=session_id,
            turn_id=turn_id,
            source_url=source_url,
            created_at=created_at,
            expires_at=expires_at,
            written_by=written_by,
        )
        if meta is not None and result.created:
            self.put_message_meta(result.record.id, meta)
        return result

    def put_message_meta(self, record_id: int, meta: MessageMeta) -> None:
        """Keep a message's Letta identity (one written without it, e.g. in a batch)."""
        self.get(record_id)  # this agent's message, or NotFoundError
        self._engine.store.put_message_meta(record_id, meta)

    def message_meta(self, record_ids: Sequence[int]) -> dict[int, MessageMeta]:
        """The Letta identity of those of these messages that have one."""
        return self._engine.store.message_meta(record_ids)

    def append_many(self, records: Sequence[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        roles: Sequence[str] = (),
        start: datetime | None = None,
        end: datetime | None = None,
        session_id: str | None = None,
        rerank: bool | None = None,
        dates_in_query: bool = False,
        boost_dates_in_query: bool = True,
        reference_time: datetime | None = None,
        spread_sessions: bool | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """`rerank=False` ranks hybrid hits by fusion alone (default: the learned ranker, when the
        home's model has one). `dates_in_query`: only messages from the period the query names
        ("what did I say yesterday"), resolved against `reference_time` (default now); otherwise that
        period's messages rise (`boost_dates_in_query`, memvec.search.period).
        `spread_sessions`: the first hits come from as many conversations as earn a place (a
        question about several sessions; memvec.search.spread); None: when the query asks for a
        count or a total ("how many times did I ..."). `min_score`: only hits whose relevance (a
        probability, comparable across queries) is at least this (`Memory.default_min_score` is the
        calibrated default)."""
        filters = {"roles": list(roles), "start": start, "end": end, "session_id": session_id}
        return self._search(
            query,
            k=k,
            mode=mode,
            filters=filters,
            rerank=rerank,
            dates_in_query=dates_in_query,
            boost_dates_in_query=boost_dates_in_query,
            reference_time=reference_time,
            spread_sessions=spread_sessions,
            min_score=min_score,
        )

    def list(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        newest_first: bool = False,
        roles: Sequence[str] = (),
        start: datetime | None = None,
        end: datetime | None = None,
        after: int | None = None,
        before: int | None = None,
        session_id: str | None = None,
    ) -> list[Record]:
        """Messages in time order (oldest first unless `newest_first`); `after`/`before` are record-id
        cursors; `session_id`: only that session's (a conversation's)."""
        return self._list(
            limit=limit,
            offset=offset,
            newest_first=newest_first,
            filters={"roles": list(roles), "start": start, "end": end, "session_id": session_id},
            after=after,
            before=before,
        )
