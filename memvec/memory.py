"""The Python API: one `Memory` per home, with core, recall and archival tiers per agent.

from memvec import Memory
with Memory.open("./indexes") as mem:
    mem.archival("my-app").insert("Paris is the capital of France", source_url="https://...")
    hits = mem.archival("my-app").search("capital of France")
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import TypeAdapter

from memvec.config import MemoryConfig
from memvec.embed import Backend, load_embedder
from memvec.embed.base import Embedder
from memvec.engine.consolidation import apply_run, undo_run
from memvec.engine.engine import Engine
from memvec.engine.home import (
    MODEL_META_KEY,
    home_index_settings,
    home_model,
    lazy_embedder,
    prepare_home,
    requested_model,
    serving_embedder,
)
from memvec.engine.lease import agent_lease
from memvec.engine.maintenance import describe_partitions, rebuild_partitions, verify_partitions
from memvec.engine.transfer import export_agent, import_agents
from memvec.errors import AgentExistsError, InvalidInputError, NotFoundError
from memvec.exchange.consolidation import ConsolidationProposal, ConsolidationRun
from memvec.exchange.export import AgentExport, ImportReport
from memvec.exchange.reports import (
    IndexUsage,
    PartitionStats,
    RebuildReport,
    Stats,
    VerifyReport,
)
from memvec.search.rerank import shipped_ranker
from memvec.store import STORE_FILE, open_store
from memvec.store.backup import BackupManifest, backup_store, restore_store
from memvec.store.schema import LATEST_VERSION, pending
from memvec.store.sqlite import applied_migrations
from memvec.tiers.archival import ArchivalMemory
from memvec.tiers.core import CoreMemory
from memvec.tiers.documents import Documents
from memvec.tiers.folders import Folders
from memvec.tiers.recall import RecallMemory
from memvec.tiers.shared import SharedBlocks
from memvec.types import (
    VERSION,
    AgentName,
    AgentSettings,
    AgentState,
    CoreBlock,
    DocumentReport,
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchRequest,
    Tier,
)

_agent_name: TypeAdapter[str] = TypeAdapter(AgentName)


def validate_agent(agent: str) -> str:
    try:
        return _agent_name.validate_python(agent)
    except ValueError as exc:
        raise InvalidInputError(
            f"invalid agent name {agent!r}: 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit"
        ) from exc


STORE_SCHEMA_VERSION = LATEST_VERSION  # the schema this memvec writes (`memvec --version`)


class Memory:
    def __init__(self, config: MemoryConfig, *, embedder: Embedder | None = None) -> None:
        self.config = config
        self._closed = False
        # a new SQLite home is worth a word: a mistyped --home or MEMVEC_HOME would look like an empty one
        self.created_home = config.store is None and not (Path(config.home) / STORE_FILE).exists()
        self.home = prepare_home(config.home)
        self._store = open_store(self.home, config.store, timeout=config.store_timeout)
        requested = embedder.model_id if embedder else self.requested_model(config.model, config.embed_backend)
        self.model_id = home_model(self._store, self.home, requested)
        self.index_settings = home_index_settings(self._store, config.index)
        self._engine = Engine(
            store=self._store,
            embedder=serving_embedder(embedder or lazy_embedder(self.model_id, config), config),
            index_root=self.home / "index",
            index_settings=self.index_settings,
            search_settings=config.search,
            max_loaded_indexes=config.max_loaded_indexes,
            ranker=shipped_ranker(self.model_id) if config.search.rerank else None,
            dedup=config.dedup,
            retention={tier: timedelta(days=days) for tier, days in config.retention_days.items()},
        )

    @classmethod
    def open(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        model: str | None = None,
        embedder: Embedder | None = None,
        **settings: Any,
    ) -> Memory:
        """Open (creating if needed) the memory home; see :class:`MemoryConfig` for settings."""
        return cls(MemoryConfig.resolve(home=home, model=model, **settings), embedder=embedder)

    @staticmethod
    def pending_migrations(config: MemoryConfig) -> list[tuple[int, str]] | None:
        """What opening the home's SQLite store would migrate (version, what it adds), read without
        opening it; None for a PostgreSQL store (its schema is brought up to date on open) or a home
        with no store yet (it is created at the latest schema)."""
        store_file = Path(config.home) / STORE_FILE
        if config.store is not None or not store_file.exists():
            return None
        return pending(applied_migrations(store_file))

    def requested_model(self, name: str | None, backend: Backend | None) -> str | None:
        """The model id that `name` and `backend` ask for (None: neither given). What is not given
        comes from the home: its model name, and its backend (so `--model X` on a torch home stays torch)."""
        return requested_model(self._store, name, backend)

    # -- tiers ----------------------------------------------------------------------------
    def archival(self, agent: str) -> ArchivalMemory:
        return ArchivalMemory(self._engine, validate_agent(agent))

    def recall(self, agent: str) -> RecallMemory:
        return RecallMemory(self._engine, validate_agent(agent))

    def core(self, agent: str, *, actor: str = "python") -> CoreMemory:
        """The agent's core blocks; `actor` is recorded with every change made through it."""
        return CoreMemory(self._store, validate_agent(agent), actor=actor)

    def documents(self, agent: str) -> Documents:
        """The files added to the agent's archival memory (see `add_document`)."""
        return Documents(self._engine, validate_agent(agent))

    def add_document(
        self,
        agent: str,
        source: str | os.PathLike[str],
        content: str | bytes | None = None,
        *,
        media_type: str | None = None,
        tags: Sequence[str] = (),
        chunk_overlap: int = 32,
    ) -> DocumentReport:
        """Add a file to the agent's archival memory as chunks citing it (see `Documents.add`): the
        file at `source`, or `content` (text or bytes) named `source`. The same content again adds
        nothing; a changed file of the same name replaces the old one's chunks as new versions."""
        return self.documents(agent).add(source, content, media_type=media_type, tags=tags, chunk_overlap=chunk_overlap)

    def folders(self) -> Folders:
        """The home's folders (Letta's): sets of files attached to agents, whose chunks they hold."""
        return Folders(self._engine)

    def shared_blocks(self, *, actor: str = "python") -> SharedBlocks:
        """The home's shared blocks (made once, attached to several agents); `actor` as for `core`."""
        return SharedBlocks(self._store, actor=actor)

    def insert(self, records: list[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(self, request: SearchRequest) -> list[Hit]:
        return self._engine.search(request)

    def tier(self, agent: str, tier: Tier) -> ArchivalMemory | RecallMemory:
        return self.archival(agent) if tier is Tier.ARCHIVAL else self.recall(agent)

    def delete_record(self, agent: str, record_id: int) -> Record:
        """Delete one record of the agent, whatever its tier."""
        return self._engine.delete(validate_agent(agent), record_id)

    def forget(
        self,
        agent: str,
        *,
        tier: Tier | None = None,
        ids: Sequence[int] = (),
        tags: Sequence[str] = (),
        tag_match: str = "any",
        start: datetime | None = None,
        end: datetime | None = None,
        session_id: str | None = None,
        roles: Sequence[str] = (),
        as_of: datetime | None = None,
    ) -> int:
        """Delete the agent's records that match every criterion given (ids, tags, a time range, a
        session, roles, the versions that held `as_of`; one tier or both) and return how many. An id
        takes every version of its passage; filters match old versions too. At least one criterion is
        required: `delete_agent` forgets everything. The store deletes them in one transaction and the
        indexes are saved without them."""
        filters = SearchFilters.model_validate(
            {
                "tags": list(tags),
                "tag_match": tag_match,
                "start": start,
                "end": end,
                "session_id": session_id,
                "roles": list(roles),
                "as_of": as_of,
            }
        )
        if filters.is_empty() and not ids:
            raise InvalidInputError(
                "forget needs ids or a filter (tags, dates, session, roles); to forget the whole agent, delete it"
            )
        tiers = [tier] if tier is not None else list(Tier)
        return self._engine.delete_matching(validate_agent(agent), tiers, filters, ids)

    def agent_lease(
        self, agent: str, *, wait_s: float | None = None, ttl_s: float | None = None
    ) -> AbstractContextManager[str]:
        """Hold the agent's lease (one reply loop at a time across servers; see memvec.engine.lease),
        waiting up to `wait_s` (default: the home's `lease_wait_s`) before AgentBusyError; it expires
        `ttl_s` (default `lease_ttl_s`) after its holder stops renewing it."""
        wait = self.config.lease_wait_s if wait_s is None else wait_s
        ttl = self.config.lease_ttl_s if ttl_s is None else ttl_s
        return agent_lease(self._store, validate_agent(agent), wait_s=wait, ttl_s=ttl)

    # -- consolidation (memvec.agent.consolidate asks the model; these write and revert) ----
    def apply_consolidation(
        self, agent: str, proposal: ConsolidationProposal, *, model: str, through_message: int | None
    ) -> ConsolidationRun:
        """Write a consolidation run in one transaction (checked whole first) and log it as a diff."""
        return apply_run(self._engine, validate_agent(agent), proposal, model=model, through_message=through_message)

    def consolidation_runs(self, agent: str) -> list[ConsolidationRun]:
        """The agent's consolidation runs, oldest first: what each added, superseded and edited, and why."""
        return self._store.runs(validate_agent(agent))

    def undo_consolidation(self, agent: str, run_id: int) -> ConsolidationRun:
        """Revert a run whole (see memvec.engine.consolidation.undo_run)."""
        return undo_run(self._engine, validate_agent(agent), run_id)

    def sweep(self, *, agent: str | None = None) -> int:
        """Purge every record past its `expires_at` or its tier's retention (every read does this for
        what it reads; run it to purge what nobody reads); returns how many."""
        return sum(self._engine.sweep(part_agent, tier) for part_agent, tier in self._partitions(agent))

    # -- agents ---------------------------------------------------------------------------
    def agents(self) -> list[str]:
        """Every agent with settings, core blocks or records in this home."""
        return self._store.agents()

    def has_agent(self, agent: str) -> bool:
        """Whether the agent exists: it has settings, core blocks or records (the one definition)."""
        return self._store.has_agent(validate_agent(agent))

    def get_agent(self, agent: str) -> tuple[AgentSettings, AgentState]:
        """Its settings and conversation state; an agent written only through its tiers or blocks
        (no settings yet) has the defaults. NotFoundError when it does not exist."""
        name = validate_agent(agent)
        found = self._store.get_agent(name)
        if found is not None:
            return found
        if self._store.has_agent(name):
            return AgentSettings(name=name), AgentState()
        raise NotFoundError(f"agent {name!r} not found")

    def create_agent(
        self,
        settings: AgentSettings,
        *,
        blocks: Sequence[CoreBlock] = (),
        exist_ok: bool = False,
        actor: str = "python",
    ) -> AgentSettings:
        """Create an agent with `blocks` (default: persona and human). An existing one raises
        AgentExistsError, or with `exist_ok` gets these settings (its state and blocks kept, the
        default blocks added if missing)."""
        name = validate_agent(settings.name)
        if not exist_ok and self._store.has_agent(name):
            raise AgentExistsError(f"agent {name!r} already exists")
        self._store.put_agent(settings, AgentState() if self._store.get_agent(name) is None else None)
        core = self.core(name, actor=actor)
        for block in blocks:
            core.put(block)
        if not blocks:
            core.ensure_defaults()
        return settings

    def update_agent(self, settings: AgentSettings, state: AgentState | None = None) -> None:
        """Write an existing agent's settings (and its conversation state, when given)."""
        self.get_agent(settings.name)
        self._store.put_agent(settings, state)

    def delete_agent(self, agent: str) -> int:
        """Delete an agent, its blocks and all its records; returns how many records went."""
        deleted = self._store.delete_agent(validate_agent(agent))
        self._store.checkpoint()
        for tier in Tier:
            self._engine.tier_index(agent, tier).save()  # applies the deletions from the change log
        return len(deleted)

    def export_agent(self, agent: str, *, with_embeddings: bool = True) -> AgentExport:
        """The agent, its blocks and all its passages and messages (with their embeddings)."""
        settings, state = self.get_agent(agent)
        return export_agent(self._engine, settings, state, model_id=self.model_id, with_embeddings=with_embeddings)

    def import_agents(self, docs: Sequence[tuple[AgentExport, str]]) -> list[ImportReport]:
        """Restore exported agents, each under the name given: all of them or none (see `memvec.engine.transfer`)."""
        named = [(doc, validate_agent(name)) for doc, name in docs]
        return import_agents(self._engine, named, model_id=self.model_id)

    def import_agent(self, doc: AgentExport, *, name: str | None = None) -> ImportReport:
        return self.import_agents([(doc, name or doc.agent.name)])[0]

    # -- maintenance ----------------------------------------------------------------------
    def _partitions(self, agent: str | None) -> list[tuple[str, Tier]]:
        parts = self._store.partitions()
        return [p for p in parts if agent is None or p[0] == agent]

    def backup(self, dest: str | os.PathLike[str]) -> BackupManifest:
        """A consistent copy of the home's SQLite store into the new or empty folder `dest`, taken
        while servers keep writing, with its manifest (`backup.json`: version, schema, model,
        counts, sha256). Indexes are derived: :meth:`restore` rebuilds them."""
        return backup_store(self._store, Path(dest), memvec_version=VERSION, model_key=MODEL_META_KEY)

    @classmethod
    def restore(
        cls,
        src: str | os.PathLike[str],
        home: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        **settings: Any,
    ) -> Memory:
        """Open a new home made from the backup folder `src` (checked against its manifest; a home
        that already has a store is refused), its indexes rebuilt from the restored store."""
        config = MemoryConfig.resolve(home=home, **settings)
        if config.store is not None:
            raise InvalidInputError("restore makes a SQLite home; a PostgreSQL store is restored with pg_restore")
        restore_store(Path(src), prepare_home(config.home) / STORE_FILE)
        memory = cls(config, embedder=embedder)
        memory.rebuild()
        return memory

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
            for part_agent, tier in self._partitions(agent):
                self._engine.tier_index(part_agent, tier).save()
        self.save()
        return verify_partitions(self._engine, self._partitions(agent), model_id=self.model_id)

    def index_usage(self) -> IndexUsage:
        return self._engine.index_usage()

    def revoke_session(self, nonce: str, expires_at: datetime) -> None:
        """End a memory-browser session on every server of this store (signing out)."""
        self._store.revoke_session(nonce, expires_at)

    def session_revoked(self, nonce: str) -> bool:
        return self._store.session_revoked(nonce)

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

    # -- lifecycle ------------------------------------------------------------------------
    def save(self) -> None:
        self._engine.save()

    def close(self) -> None:
        """Save the indexes and close the store (SQLite checkpoints and truncates its WAL); once."""
        if self._closed:
            return
        self._closed = True
        self.save()
        self._store.close()
        self._close_serving()

    def _close_serving(self) -> None:
        close_batcher = getattr(self._engine.embedder, "close", None)
        if close_batcher is not None:
            close_batcher()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
