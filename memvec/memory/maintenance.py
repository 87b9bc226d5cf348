"""`Memory`'s upkeep: rebuild, verify, sweep, backup, and what the home holds and costs."""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from memvec.config import IndexSettings, MemoryConfig
from memvec.embed import Backend, load_embedder
from memvec.embed.base import Embedder
from memvec.engine.documents import delete_orphans
from memvec.engine.engine import Engine
from memvec.engine.home import MODEL_META_KEY, requested_model, serving_embedder
from memvec.engine.maintenance import describe_partitions, rebuild_partitions, verify_partitions
from memvec.errors import InvalidInputError
from memvec.exchange.reports import (
    IndexUsage,
    OrphanDocument,
    PartitionStats,
    RebuildReport,
    Stats,
    VerifyReport,
)
from memvec.store import STORE_FILE
from memvec.store.backup import BackupManifest, backup_store
from memvec.store.base import Store
from memvec.types import VERSION, Tier


class MaintenanceMethods:
    """A mixin of `Memory` (its store, engine and settings)."""

    _store: Store
    _engine: Engine
    config: MemoryConfig
    home: Path
    model_id: str
    index_settings: IndexSettings

    def requested_model(self, name: str | None, backend: Backend | None) -> str | None:
        """The model id that `name` and `backend` ask for (None: neither given). What is not given
        comes from the home: its model name, and its backend (so `--model X` on a torch home stays torch)."""
        return requested_model(self._store, name, backend)

    def sweep(self, *, agent: str | None = None) -> int:
        """Purge every record past its `expires_at` or its tier's retention (every read does this for
        what it reads; run it to purge what nobody reads); returns how many."""
        return sum(self._engine.sweep(part_agent, tier) for part_agent, tier in self._partitions(agent))

    def _partitions(self, agent: str | None) -> list[tuple[str, Tier]]:
        parts = self._store.partitions()
        return [p for p in parts if agent is None or p[0] == agent]

    def backup(self, dest: str | os.PathLike[str]) -> BackupManifest:
        """A consistent copy of the home's SQLite store into the new or empty folder `dest`, taken
        while servers keep writing, with its manifest (`backup.json`: version, schema, model,
        counts, sha256). Indexes are derived: :meth:`restore` rebuilds them."""
        return backup_store(self._store, Path(dest), memvec_version=VERSION, model_key=MODEL_META_KEY)

    def rebuild(
        self, *, agent: str | None = None, model: str | None = None, backend: Backend | None = None
    ) -> list[RebuildReport]:
        """Rebuild indexes from the store; with a new `model` or `backend`, re-embed the whole home first."""
        model = self.requested_model(model, backend)
        if model and model != self.model_id:
            if agent is not None:
                raise InvalidInputError("a model change re-embeds the whole home; omit --agent")
            return self._rebuild_with(load_embedder(model, batch_size=self.config.embed_batch_size), None)
        return self._rebuild_with(self._engine.embedder, agent)

    def _rebuild_with(self, embedder: Embedder, agent: str | None) -> list[RebuildReport]:
        reports = rebuild_partitions(self._engine, embedder, self._partitions(agent), self.index_settings)
        if embedder.model_id != self.model_id:
            self._store.set_meta(MODEL_META_KEY, embedder.model_id)
            self.model_id = embedder.model_id
            self._close_serving()  # the old model's batcher thread goes with it
            self._engine.embedder = serving_embedder(embedder, self.config)
        return reports

    def verify(self, *, agent: str | None = None, repair: bool = False) -> VerifyReport:
        """Disagreements between the saved index files and the store, and the indexes merely behind
        the store's change log. With `repair`, every index is opened first (which replays what it is
        behind, or rebuilds it from the store if it disagrees) and saved, then checked."""
        if repair:
            delete_orphans(self._engine)
            for part_agent, tier in self._partitions(agent):
                self._engine.tier_index(part_agent, tier).save()
        self.save()
        report = verify_partitions(self._engine, self._partitions(agent), model_id=self.model_id)
        report.orphans = [
            OrphanDocument(document_id=d.id, owner=d.owner, name=d.name) for d in self._store.orphan_documents()
        ]
        return report

    def index_usage(self) -> IndexUsage:
        return self._engine.index_usage()

    def healthy(self) -> bool:
        """Whether the store answers right now (never raises)."""
        return self._store.healthy()

    def connection_stats(self) -> dict[str, int]:
        """The store's connections in this process: opened, failed, lost (empty for SQLite)."""
        return self._store.connection_stats()

    def totals(self) -> tuple[int, int]:
        """(records, agents) in the whole home: cheap enough for a health check."""
        return sum(self._store.count(a, t) for a, t in self._store.partitions()), len(self._store.agents())

    @property
    def store_location(self) -> str:
        """Where the records live (the SQLite file, or the database URL without its password)."""
        url = self.config.store
        if url is None:
            return str(self.home / STORE_FILE)
        scheme, _, rest = url.partition("://")
        return f"{scheme}://{rest.rpartition('@')[2]}"

    @property
    def embedding_dim(self) -> int:
        """The embedding model's dimension (loads the model if it is not loaded yet)."""
        return self._engine.embedder.dim

    def stats(self) -> Stats:
        return Stats(
            home=str(self.home),
            model_id=self.model_id,
            store_bytes=self._store.storage_bytes(),
            indexes=self._engine.index_usage(),
            partitions=self.partition_stats(),
        )

    def partition_stats(self, agents: Collection[str] | None = None) -> list[PartitionStats]:
        """Each tier's records and saved index (kind, size, the change it was saved at) vs the store's
        last change, for `agents` (None: every agent), listing the home's partitions once."""
        return describe_partitions(self._engine, agents)

    def save(self) -> None:
        self._engine.save()

    def _close_serving(self) -> None:
        close_batcher = getattr(self._engine.embedder, "close", None)
        if close_batcher is not None:
            close_batcher()
