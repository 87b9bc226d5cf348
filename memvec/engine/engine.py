"""The engine: writes go to the store, indexes follow the store's change log, searches read both."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.config import DedupSettings, IndexSettings, SearchSettings
from memvec.embed.base import Embedder, checked_vectors
from memvec.engine import searching
from memvec.engine.index_cache import IndexCache
from memvec.engine.partition_index import LoadReport, PartitionIndex
from memvec.engine.repeats import Target, find_repeats
from memvec.engine.rows import prepared_rows
from memvec.errors import NotFoundError, VersionConflictError
from memvec.exchange.reports import IndexUsage
from memvec.guard import checked_on_read
from memvec.search.relevance import Calibration
from memvec.search.rerank import Matrix, Ranker
from memvec.store.base import PreparedRecord, Store
from memvec.store.forget_log import record_tombstones
from memvec.types import (
    LATEST,
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchRequest,
    Tier,
    WrittenBy,
)

log = logging.getLogger("memvec.engine")


class Engine:
    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        index_root: Path,
        index_settings: IndexSettings,
        search_settings: SearchSettings,
        max_loaded_indexes: int | None = None,
        ranker: Ranker | None = None,
        calibration: Calibration | None = None,
        retention: Mapping[Tier, timedelta] | None = None,
        dedup: DedupSettings | None = None,
    ) -> None:
        self.store = store
        self.dedup = dedup or DedupSettings()
        self.retention = dict(retention or {})  # per tier: records older than this are purged
        self.embedder = embedder
        self.index_settings = index_settings
        self.search_settings = search_settings
        self.ranker = ranker  # the second ranking stage; used only for the models it was fitted with
        self.calibration = calibration  # each hit's relevance (memvec.search.relevance); None: none for this model
        self.indexes = IndexCache(
            store=store, embedder=embedder, root=index_root, settings=index_settings, budget=max_loaded_indexes
        )
        # per tier: (the index's applied change, its closed version ids, when the next valid_to passes)
        self._closed_cache: dict[tuple[str, Tier], tuple[int, npt.NDArray[np.int64], datetime]] = {}

    def index_dir(self, agent: str, tier: Tier) -> Path:
        return self.indexes.directory(agent, tier)

    def tier_index(self, agent: str, tier: Tier) -> PartitionIndex:
        """The (agent, tier) index, loaded on first use and caught up with the store."""
        return self.indexes.get(agent, tier)

    @property
    def load_reports(self) -> dict[tuple[str, Tier], LoadReport]:
        return self.indexes.load_reports

    def index_usage(self) -> IndexUsage:
        return self.indexes.usage()

    # -- writes ---------------------------------------------------------------------------
    def insert(
        self,
        records: Sequence[NewRecord],
        vectors: npt.NDArray[np.float32] | None = None,
        *,
        merge_repeats: bool = True,
        written_by: WrittenBy | None = None,
    ) -> list[InsertResult]:
        """Insert records (any mix of agents and tiers); a repeat (exact, or for archival passages near)
        returns the record it repeats, not stored, with its tags and missing citation fields merged
        in unless `merge_repeats` is False. `vectors` (one row per record, from this home's model)
        skips embedding, e.g. on import; they are checked (shape, finite) and re-normalized first.
        `written_by="agent"`: the agent loop's own records, trusted by who wrote them (the guard reads
        only what comes from outside); no request from outside may set it."""
        if vectors is not None:
            vectors = checked_vectors(vectors, len(records), self.embedder.dim)
        groups: dict[tuple[str, Tier], list[int]] = defaultdict(list)
        for position, record in enumerate(records):
            groups[(record.agent, record.tier)].append(position)
        results: dict[int, InsertResult] = {}
        for (agent, tier), positions in groups.items():
            given = None if vectors is None else {p: vectors[p] for p in positions}
            group = [(p, records[p]) for p in positions]
            results.update(self._insert_group(agent, tier, group, given, merge_repeats, written_by))
        return [results[p] for p in range(len(records))]

    def prepare(
        self,
        agent: str,
        tier: Tier,
        records: Sequence[NewRecord],
        vectors: npt.NDArray[np.float32] | None = None,
        written_by: WrittenBy | None = None,
    ) -> list[PreparedRecord]:
        """Rows for `store.insert`, embedded (or with `vectors`, checked), with their contexts; one
        (agent, tier) group. Writes nothing: a caller can prepare everything before its transaction."""
        target = (agent, tier)
        return prepared_rows(self.store, self.embedder, self.index_settings, target, records, vectors, written_by)

    def _insert_group(
        self,
        agent: str,
        tier: Tier,
        items: list[tuple[int, NewRecord]],
        given: dict[int, npt.NDArray[np.float32]] | None,
        merge_repeats: bool,
        written_by: WrittenBy | None = None,
    ) -> dict[int, InsertResult]:
        keys = [record.dedup_key() for _, record in items]
        existing = self.store.existing_ids(agent, tier, keys)
        fresh: dict[str, tuple[int, NewRecord]] = {}
        for key, item in zip(keys, items, strict=True):
            if item[1].supersedes is not None:  # a new version, even of the same text: the store decides
                existing.pop(key, None)
            if key not in existing:
                fresh.setdefault(key, item)
        vectors = None if given is None else np.array([given[p] for p, _ in fresh.values()], dtype=np.float32)
        if vectors is not None and not fresh:
            vectors = None
        prepared = self.prepare(agent, tier, [record for _, record in fresh.values()], vectors, written_by)
        repeats = self._near_duplicates(agent, tier, prepared)
        fresh_keys = list(fresh)
        key_to_id = dict(existing)
        creator: dict[int, int] = {}  # record id -> position of the item that created it
        with self.store.transaction():
            repeats = self._still_there(agent, repeats)
            inserting = [row for row in range(len(prepared)) if row not in repeats]
            outcome = self.store.insert([prepared[row] for row in inserting])
            for row, (record_id, created) in zip(inserting, outcome, strict=True):
                key_to_id[fresh_keys[row]] = record_id
                if created:
                    creator[record_id] = fresh[fresh_keys[row]][0]
            for row, (kind, target) in sorted(repeats.items()):
                key_to_id[fresh_keys[row]] = target if kind == "record" else key_to_id[fresh_keys[target]]
            for key, (position, record) in zip(keys, items, strict=True):
                if merge_repeats and creator.get(key_to_id[key]) != position:
                    self.store.merge_into(agent, key_to_id[key], record.tags, record.citation)
        self.tier_index(agent, tier)  # catches up with what was just written
        stored = {r.id: r for r in checked_on_read(self.store.get(agent, list(set(key_to_id.values()))))}
        if gone := sorted(set(key_to_id.values()) - set(stored)):
            raise VersionConflictError(
                f"records {gone} were written, then deleted (a forget or delete ran at "
                "the same time) before they could be read back: they are not stored now"
            )
        results = {}
        for key, (position, _) in zip(keys, items, strict=True):
            record_id = key_to_id[key]
            created = creator.get(record_id) == position
            results[position] = InsertResult(
                record=stored[record_id], created=created, duplicate_of=None if created else record_id
            )
        return results

    def _near_duplicates(self, agent: str, tier: Tier, rows: list[PreparedRecord]) -> dict[int, Target]:
        """Rows that repeat a current passage or an earlier row (memvec.engine.repeats)."""
        if tier is not Tier.ARCHIVAL or self.dedup.near_cosine is None or not rows:
            return {}
        # a tier that never held a record has nothing to repeat: its index is not opened for it
        index = self.tier_index(agent, tier) if self.store.last_change(agent, tier) else None
        closed = self.closed_ids(index) if index is not None else np.zeros(0, dtype=np.int64)
        return find_repeats(self.store, index, closed, agent, tier, rows, self.dedup)

    def _still_there(self, agent: str, repeats: dict[int, Target]) -> dict[int, Target]:
        """The repeats whose passage still exists (read in the write transaction: a delete that came
        first makes the row an insert after all)."""
        targets = [target for kind, target in repeats.values() if kind == "record"]
        alive = {r.id for r in self.store.get(agent, targets)} if targets else set()
        return {row: t for row, t in repeats.items() if t[0] == "row" or t[1] in alive}

    def delete(self, agent: str, record_id: int) -> Record:
        """Delete a record with every other version of its passage (a deleted passage keeps no history).
        The chain is read inside the write transaction: an edit that committed first is in it, and one
        that comes after finds no version to supersede (NotFoundError), on any number of servers."""
        with self.store.transaction():
            chain = self.store.versions(agent, record_id)
            record = next((r for r in chain if r.id == record_id), None)
            if record is None:
                raise NotFoundError(f"agent {agent!r} has no record {record_id}")
            self.store.note_forgotten(record_tombstones(chain))  # written only if the delete commits
            self.delete_logged(agent, [r.id for r in chain])
        self.store.checkpoint()
        self.tier_index(agent, record.tier)
        return checked_on_read([record])[0]

    def versions(self, agent: str, tier: Tier, record_id: int) -> list[Record]:
        """Every version of the tier's passage that `record_id` is a version of, oldest first."""
        self.sweep(agent, tier)
        chain = self.store.versions(agent, record_id)
        if not any(r.id == record_id and r.tier is tier for r in chain):
            raise NotFoundError(f"agent {agent!r} has no {tier.value} record {record_id}")
        return checked_on_read(chain)

    def delete_matching(
        self, agent: str, tiers: Sequence[Tier], filters: SearchFilters, ids: Sequence[int] = ()
    ) -> int:
        """Delete every record of `tiers` that passes `filters` (and is among `ids`, when given); the
        indexes apply the deletions and are saved, so no index file keeps what was forgotten. What
        matches is read inside the write transaction, so an edit racing the forget is either forgotten
        with its passage or finds the passage gone."""
        forgotten: dict[Tier, list[int]] = {}
        count = 0
        with self.store.transaction():
            chains = [r.id for record_id in ids for r in self.store.versions(agent, int(record_id))]
            for tier in tiers:
                matching = self.store.filter_ids(agent, tier, filters, all_versions=True)
                if ids:  # an id names a passage: every version of it is forgotten
                    matching = np.intersect1d(matching, np.asarray(chains, dtype=np.int64))
                forgotten[tier] = matching.tolist()
                self.store.note_forgotten(record_tombstones(self.store.get(agent, forgotten[tier])))
                count += self.delete_logged(agent, forgotten[tier])
        for tier, gone in forgotten.items():
            self._saved_without(agent, tier, gone)
        return count

    def sweep(self, agent: str, tier: Tier) -> int:
        """Purge the tier's records past their `expires_at` or the tier's retention: from the store
        (one transaction, logged), then from the index, which is saved. Every read of a tier runs it
        first (one indexed query when nothing expired), so an expired record is never returned."""
        now = self.store.clock()
        keep = self.retention.get(tier)
        expired = self.store.expired_ids(agent, tier, now, now - keep if keep is not None else None)
        return self.purge(agent, tier, expired)

    def purge(self, agent: str, tier: Tier, ids: list[int]) -> int:
        """Delete `ids` from the store in one transaction, then save the index without them, so no
        index file keeps them either; returns how many were deleted."""
        with self.store.transaction():
            deleted = self.delete_logged(agent, ids)
        self._saved_without(agent, tier, ids)
        return deleted

    def delete_logged(self, agent: str, ids: list[int]) -> int:
        """Inside the caller's transaction: the records, their texts in consolidation runs' diffs, and
        the agent's answers kept for retries (they quote what they stored). Every delete goes through it."""
        if not ids:
            return 0
        deleted = self.store.delete_many(agent, ids)
        self.store.forget_in_runs(agent, ids)
        self.store.forget_requests(agent)  # an answer kept for a retry quotes what it stored
        return deleted

    def _saved_without(self, agent: str, tier: Tier, ids: list[int]) -> None:
        """After the deleting transaction committed: no log or index file keeps the deleted records."""
        if ids:
            self.store.checkpoint()
            self.tier_index(agent, tier).save()

    # -- reads ----------------------------------------------------------------------------
    def get(self, agent: str, tier: Tier, record_id: int) -> Record:
        found = self.get_many(agent, tier, [record_id])
        if not found:
            raise NotFoundError(f"agent {agent!r} has no {tier.value} record {record_id}")
        return found[0]

    def get_many(self, agent: str, tier: Tier, record_ids: Sequence[int]) -> list[Record]:
        """The tier's records among `record_ids`, in that order; absent ones (or another tier's) left out."""
        self.sweep(agent, tier)
        return checked_on_read([r for r in self.store.get(agent, record_ids) if r.tier is tier])

    def count(self, agent: str, tier: Tier) -> int:
        self.sweep(agent, tier)
        return self.store.count(agent, tier)

    def list_records(
        self,
        agent: str,
        tier: Tier,
        *,
        limit: int = 50,
        offset: int = 0,
        newest_first: bool = False,
        filters: SearchFilters | None = None,
        after: int | None = None,
        before: int | None = None,
    ) -> list[Record]:
        self.sweep(agent, tier)
        return checked_on_read(
            self.store.list_records(
                agent,
                tier,
                limit=limit,
                offset=offset,
                newest_first=newest_first,
                filters=filters,
                after=after,
                before=before,
            )
        )

    def search(self, request: SearchRequest) -> list[Hit]:
        return searching.search(self, request)

    def candidate_features(
        self, request: SearchRequest, depth: int
    ) -> tuple[npt.NDArray[np.int64], Matrix, dict[str, float]]:
        """What `make train-ranker` fits the ranker on (searching.candidate_features)."""
        return searching.candidate_features(self, request, depth)

    def closed_ids(self, index: PartitionIndex) -> npt.NDArray[np.int64]:
        """The tier's versions that are not current, read again only once the tier changed (its index
        applied another change) or a version's `valid_to` has passed since they were read."""
        now, key = self.store.clock(), (index.agent, index.tier)
        cached = self._closed_cache.get(key)
        if cached is not None and cached[0] == index.applied and now < cached[2]:
            return cached[1]
        closed = self.store.closed_ids(index.agent, index.tier, now)
        self._closed_cache[key] = (index.applied, closed, self.store.next_end(index.agent, index.tier, now) or LATEST)
        return closed

    # -- lifecycle ------------------------------------------------------------------------
    def loaded_indexes(self) -> list[PartitionIndex]:
        return self.indexes.loaded()

    def save(self) -> None:
        """Persist every index that has changes not yet on disk."""
        self.indexes.save()

    def unload(self, agent: str, tier: Tier) -> None:
        """Drop the (agent, tier) index from memory unsaved: its records were deleted, or a rebuild replaces it."""
        self.indexes.unload(agent, tier)
