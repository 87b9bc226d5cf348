"""Archival memory: long-term passages an agent (or an app) inserts and searches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memvec.tiers.base import TierView
from memvec.types import Fusion, Hit, InsertResult, NewRecord, Record, SearchMode, Tier


class ArchivalMemory(TierView):
    tier = Tier.ARCHIVAL

    def insert(
        self,
        text: str,
        *,
        tags: Sequence[str] = (),
        source_url: str | None = None,
        session_id: str | None = None,
        turn_id: str | int | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        supersedes: int | None = None,
    ) -> InsertResult:
        """`expires_at`: from then on the passage is never returned, and it is purged. `valid_from`/
        `valid_to`: when the fact held (event time; default from its record time, open-ended).
        `supersedes`: the id of the current version this passage replaces (see :meth:`update`)."""
        return self._insert_one(
            text,
            tags=tags,
            source_url=source_url,
            session_id=session_id,
            turn_id=turn_id,
            created_at=created_at,
            expires_at=expires_at,
            valid_from=valid_from,
            valid_to=valid_to,
            supersedes=supersedes,
        )

    def update(
        self,
        record_id: int,
        text: str,
        *,
        tags: Sequence[str] | None = None,
        source_url: str | None = None,
        session_id: str | None = None,
        turn_id: str | int | None = None,
        valid_from: datetime | None = None,
        expires_at: datetime | None = None,
    ) -> InsertResult:
        """Write a new version of the passage `record_id` (its current version) and close the old one
        at `valid_from` (default: now; InvalidInputError before the old one's). The new version keeps
        the old tags unless `tags` is given and the old `expires_at` unless one is given, and has its
        own citation. VersionConflictError when `record_id` is no longer current."""
        old = self.get(record_id)
        return self.insert(
            text,
            tags=old.tags if tags is None else tags,
            source_url=source_url,
            session_id=session_id,
            turn_id=turn_id,
            valid_from=valid_from,
            expires_at=expires_at,
            supersedes=record_id,
        )

    def history(self, record_id: int) -> list[Record]:
        """Every version of the passage `record_id` is a version of, oldest first."""
        return self._engine.versions(self.agent, self.tier, record_id)

    def insert_many(self, records: Sequence[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        tags: Sequence[str] = (),
        tag_match: str = "any",
        start: datetime | None = None,
        end: datetime | None = None,
        as_of: datetime | None = None,
        fusion: Fusion | str | None = None,
        vector_weight: float | None = None,
        rerank: bool | None = None,
        dates_in_query: bool = False,
        boost_dates_in_query: bool = True,
        reference_time: datetime | None = None,
        per_document: bool = False,
        spread_sessions: bool | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """`start`/`end` filter record time (created_at); `as_of` searches the versions that held at
        that event time (default: current versions only). `rerank=False` ranks hybrid hits by fusion
        alone (default: the learned ranker, when the home's model has one). `dates_in_query`: only
        records from the period the query names ("last week"), resolved against `reference_time`;
        otherwise that period's records rise (`boost_dates_in_query`, memvec.search.period).
        `per_document`: the best chunk of each document only (`k` documents). `spread_sessions`: the
        first hits spread over sessions (memvec.search.spread); None: when the query asks for a count
        or a total. `min_score`: only hits whose relevance (a probability, comparable across queries)
        is at least this: none may come back (`Memory.default_min_score` is the calibrated default)."""
        filters = {"tags": list(tags), "tag_match": tag_match, "start": start, "end": end, "as_of": as_of}
        return self._search(
            query,
            k=k,
            mode=mode,
            filters=filters,
            fusion=fusion,
            vector_weight=vector_weight,
            rerank=rerank,
            dates_in_query=dates_in_query,
            boost_dates_in_query=boost_dates_in_query,
            reference_time=reference_time,
            per_document=per_document,
            spread_sessions=spread_sessions,
            min_score=min_score,
        )

    def list(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        newest_first: bool = False,
        after: int | None = None,
        before: int | None = None,
        as_of: datetime | None = None,
        tags: Sequence[str] = (),
    ) -> list[Record]:
        """Current passages (or those that held `as_of`) in time order (oldest first unless
        `newest_first`), with any of `tags` when given; `after`/`before` are record-id cursors."""
        return self._list(
            limit=limit,
            offset=offset,
            newest_first=newest_first,
            after=after,
            before=before,
            filters={"as_of": as_of, "tags": list(tags)},
        )
