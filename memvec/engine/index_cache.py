"""The home's loaded indexes: each (agent, tier) index opened on first use and caught up with the
store at every use; past a budget, the least recently used are saved and unloaded."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from memvec.config import IndexSettings
from memvec.embed.base import Embedder
from memvec.engine.partition_index import LoadReport, PartitionIndex
from memvec.exchange.reports import IndexUsage
from memvec.index.heap import release_freed_memory
from memvec.store.base import Store
from memvec.telemetry.metrics import INDEX_EVICTIONS, INDEX_LOADS, INDEXES_LOADED
from memvec.types import Tier


class IndexCache:
    def __init__(
        self, *, store: Store, embedder: Embedder, root: Path, settings: IndexSettings, budget: int | None
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.root = root
        self.settings = settings
        self.budget = budget  # how many indexes may stay loaded; None: no limit
        self.load_reports: dict[tuple[str, Tier], LoadReport] = {}
        self._indexes: OrderedDict[tuple[str, Tier], PartitionIndex] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._loads = self._evictions = 0

    def directory(self, agent: str, tier: Tier) -> Path:
        return self.root / agent / tier.value

    def get(self, agent: str, tier: Tier) -> PartitionIndex:
        """The (agent, tier) index, loaded on first use and caught up with the store."""
        key = (agent, tier)
        with self._lock:
            loaded = key not in self._indexes
            if loaded:
                self._indexes[key], self.load_reports[key] = PartitionIndex.open(
                    agent,
                    tier,
                    store=self.store,
                    embedder=self.embedder,
                    directory=self.directory(agent, tier),
                    settings=self.settings,
                )
                self._loads += 1
                INDEX_LOADS.inc()
            self._indexes.move_to_end(key)
            index = self._indexes[key]
            evicted = self._over_budget()
            if loaded:
                INDEXES_LOADED.set(len(self._indexes))
        sizes = self._save_and_drop(evicted) + ([len(index)] if loaded else [])
        if sizes:
            release_freed_memory(max(sizes))
        if not self.store.in_transaction():  # an index follows committed changes only: a rollback
            index.catch_up()  # would leave it holding records the store never kept
            with self._lock:
                dropped = self._indexes.get(key) is not index
            if dropped and index.unsaved:  # evicted and saved by another thread while it caught up: the
                index.save()  # changes it caught up with would otherwise be saved by no one
        return index

    @staticmethod
    def _save_and_drop(evicted: list[PartitionIndex]) -> list[int]:
        """Save the unloaded indexes (outside the lock: a reload meanwhile catches up from the
        store) and drop the last references to them; returns their sizes."""
        sizes = []
        while evicted:
            old = evicted.pop()
            sizes.append(len(old))
            if old.unsaved:
                old.save()
        return sizes

    def _over_budget(self) -> list[PartitionIndex]:
        """Unload the least recently used indexes past the budget (caller holds the lock)."""
        evicted = []
        while self.budget is not None and len(self._indexes) > self.budget:
            key, old = self._indexes.popitem(last=False)
            self.load_reports.pop(key, None)
            evicted.append(old)
            self._evictions += 1
            INDEX_EVICTIONS.inc()
        return evicted

    def usage(self) -> IndexUsage:
        with self._lock:
            return IndexUsage(
                loaded=len(self._indexes), budget=self.budget, loads=self._loads, evictions=self._evictions
            )

    def loaded(self) -> list[PartitionIndex]:
        with self._lock:
            return list(self._indexes.values())

    def save(self) -> None:
        """Persist every index that has changes not yet on disk."""
        for index in self.loaded():
            if index.unsaved:
                index.save()

    def unload(self, agent: str, tier: Tier) -> None:
        """Drop the (agent, tier) index from memory unsaved: its records were deleted, or a rebuild replaces it."""
        with self._lock:
            self._indexes.pop((agent, tier), None)
