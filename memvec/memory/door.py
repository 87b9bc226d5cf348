"""The `Memory` class: the one door every surface goes through."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from memvec.config import MemoryConfig
from memvec.embed.base import Embedder
from memvec.engine.consolidation import apply_run, undo_run
from memvec.engine.engine import Engine
from memvec.engine.forgetting import apply_tombstones
from memvec.engine.home import (
    home_index_settings,
    home_model,
    lazy_embedder,
    prepare_home,
    serving_embedder,
)
from memvec.engine.lease import agent_lease
from memvec.errors import InvalidInputError
from memvec.exchange.consolidation import ConsolidationProposal, ConsolidationRun
from memvec.exchange.reports import ForgetApplied
from memvec.memory.agents import AgentMethods
from memvec.memory.maintenance import MaintenanceMethods
from memvec.memory.names import validate_agent
from memvec.memory.tools import ToolMethods
from memvec.search.relevance import shipped_calibration
from memvec.search.rerank import shipped_ranker
from memvec.store import STORE_FILE, open_store
from memvec.store.backup import restore_store
from memvec.store.forget_log import FORGET_LOG
from memvec.store.forget_log import read as read_forget_log
from memvec.store.schema import LATEST_VERSION, pending
from memvec.store.sqlite import applied_migrations
from memvec.tiers.archival import ArchivalMemory
from memvec.tiers.conversations import Conversations, Thread
from memvec.tiers.core import CoreMemory
from memvec.tiers.documents import Documents
from memvec.tiers.folders import Folders
from memvec.tiers.open_files import AgentFiles
from memvec.tiers.recall import RecallMemory
from memvec.tiers.runs import AgentRuns
from memvec.tiers.shared import SharedBlocks
from memvec.types import (
    AgentSettings,
    Clock,
    DocumentReport,
    Hit,
    InsertResult,
    NewRecord,
    Record,
    SearchFilters,
    SearchRequest,
    Tier,
)

STORE_SCHEMA_VERSION = LATEST_VERSION  # the schema this memvec writes (`memvec --version`)


class Memory(AgentMethods, MaintenanceMethods, ToolMethods):
    """One home: its tiers per agent, its agents, its upkeep (see the package's docstring)."""

    def __init__(self, config: MemoryConfig, *, embedder: Embedder | None = None, clock: Clock | None = None) -> None:
        """`clock`: what "now" is for record times, validity, expiry and relative time words (default:
        the wall clock; a test's makes time pass without sleeping)."""
        self.config = config
        self._closed = False
        self.forget_applied: ForgetApplied | None = None  # what a restore deleted again (Memory.restore)
        # a new SQLite home is worth a word: a mistyped --home or MEMVEC_HOME would look like an empty one
        self.created_home = config.store is None and not (Path(config.home) / STORE_FILE).exists()
        self.home = prepare_home(config.home)
        self._store = open_store(self.home, config.store, timeout=config.store_timeout)
        if clock is not None:
            self._store.clock = clock
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
            calibration=shipped_calibration(self.model_id),
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
        clock: Clock | None = None,
        **settings: Any,
    ) -> Memory:
        """Open (creating if needed) the memory home; see :class:`MemoryConfig` for settings."""
        return cls(MemoryConfig.resolve(home=home, model=model, **settings), embedder=embedder, clock=clock)

    @staticmethod
    def pending_migrations(config: MemoryConfig) -> list[tuple[int, str]] | None:
        """What opening the home's SQLite store would migrate (version, what it adds), read without
        opening it; None for a PostgreSQL store (its schema is brought up to date on open) or a home
        with no store yet (it is created at the latest schema)."""
        store_file = Path(config.home) / STORE_FILE
        if config.store is not None or not store_file.exists():
            return None
        return pending(applied_migrations(store_file))

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

    def open_files(self, agent: str, *, settings: AgentSettings | None = None) -> AgentFiles:
        """The files of the agent's folders as it sees them (Letta's file blocks): open or closed, and
        the lines of each open one that its prompt shows. `settings`: the agent's, when the caller has
        read them already (they set how many files are open and how much of each is shown)."""
        settings = settings or self.get_agent(validate_agent(agent))[0]
        max_open, char_limit = settings.file_limits()
        return AgentFiles(self._engine, agent, max_open=max_open, char_limit=char_limit)

    def conversations(self) -> Conversations:
        """Letta's conversations: threads of an agent, each with its own context over its memory."""
        return Conversations(self._engine)

    def thread(self, agent: str, conversation: str | None = None) -> Thread:
        """Where a reply to the agent reads and writes its context: its own, or `conversation`'s."""
        return Thread(self._store, validate_agent(agent), conversation)

    def runs(self) -> AgentRuns:
        """Letta's runs: one per send to an agent over HTTP, with how it ended."""
        return AgentRuns(self._engine)

    def shared_blocks(self, *, actor: str = "python") -> SharedBlocks:
        """The home's shared blocks (made once, attached to several agents); `actor` as for `core`."""
        return SharedBlocks(self._store, actor=actor)

    def insert(self, records: list[NewRecord]) -> list[InsertResult]:
        return self._engine.insert(records)

    def search(self, request: SearchRequest) -> list[Hit]:
        return self._engine.search(request)

    @property
    def default_min_score(self) -> float | None:
        """The relevance below which a hit is "no relevant memory" for the home's model (what the
        agent's memory tools pass as `min_score`); None when memvec ships no calibration for it."""
        calibration = self._engine.calibration
        return calibration.min_score if calibration else None

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

    @classmethod
    def restore(
        cls,
        src: str | os.PathLike[str],
        home: str | os.PathLike[str] | None = None,
        *,
        embedder: Embedder | None = None,
        forget_log: str | os.PathLike[str] | None = None,
        **settings: Any,
    ) -> Memory:
        """Open a new home made from the backup folder `src` (checked against its manifest; a home
        that already has a store is refused), its indexes rebuilt from the restored store. What the
        forget log says was deleted or forgotten after the backup was taken is deleted again: the
        home's own log (`forgotten.jsonl`, kept beside the store it lost), or `forget_log` (another
        home's); `memory.forget_applied` says what that removed (None: there was no log)."""
        config = MemoryConfig.resolve(home=home, **settings)
        if config.store is not None:
            raise InvalidInputError("restore makes a SQLite home; a PostgreSQL store is restored with pg_restore")
        log = Path(forget_log) if forget_log is not None else Path(config.home) / FORGET_LOG
        if forget_log is not None and not log.is_file():
            raise InvalidInputError(f"no forget log {str(log)!r}")
        manifest = restore_store(Path(src), prepare_home(config.home) / STORE_FILE)
        memory = cls(config, embedder=embedder)
        if log.is_file():
            memory.forget_applied = apply_tombstones(
                memory._engine, read_forget_log(log), log=str(log), taken_at=manifest.created_at
            )
        memory.rebuild()
        return memory

    def revoke_session(self, nonce: str, expires_at: datetime) -> None:
        """End a memory-browser session on every server of this store (signing out)."""
        self._store.revoke_session(nonce, expires_at)

    def session_revoked(self, nonce: str) -> bool:
        return self._store.session_revoked(nonce)

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Save the indexes and close the store (SQLite checkpoints and truncates its WAL); once."""
        if self._closed:
            return
        self._closed = True
        self.save()
        self._store.close()
        self._close_serving()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
