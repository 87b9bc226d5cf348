"""The Python API: one `Memory` per home, with core, recall and archival tiers per agent.

    from memvec import Memory
    with Memory.open("./indexes") as mem:
        mem.archival("my-app").insert("Paris is the capital of France", source_url="https://...")
        hits = mem.archival("my-app").search("capital of France")
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel, TypeAdapter

from memvec.config import DEFAULT_MODEL, IndexSettings, MemoryConfig
from memvec.embed import Backend, backend_of, load_embedder, qualified_model_id, split_model_id
from memvec.embed.base import Embedder, LazyEmbedder
from memvec.embed.queries import MicroBatcher, QueryCache
from memvec.errors import IndexFileError, InvalidInputError, ModelMismatchError
from memvec.index.files import Manifest, read_manifest
from memvec.index.tier import TierIndex, verify_on_disk
from memvec.search.engine import Engine, IndexUsage
from memvec.search.rerank import shipped_ranker
from memvec.store import open_store
from memvec.tiers.archival import ArchivalMemory
from memvec.tiers.core import CoreMemory
from memvec.tiers.recall import RecallMemory
from memvec.types import AgentName, Hit, InsertResult, NewRecord, SearchRequest, Tier

MODEL_META_KEY = "embedding_model"
INDEX_KIND_META_KEY = "index_kind"
_agent_name: TypeAdapter[str] = TypeAdapter(AgentName)


class PartitionStats(BaseModel):
    agent: str
    tier: Tier
    records: int
    model_id: str | None
    dim: int | None
    index_kind: str | None
    index_bytes: int
    last_change: int
    indexed_change: int | None


class Stats(BaseModel):
    home: str
    model_id: str
    store_bytes: int
    indexes: IndexUsage
    partitions: list[PartitionStats]


class RebuildReport(BaseModel):
    agent: str
    tier: Tier
    records: int
    reembedded: int
    seconds: float


class VerifyProblem(BaseModel):
    agent: str
    tier: Tier
    problem: str


class IndexBehind(BaseModel):
    """A saved index that is behind the store's change log: not a fault, the next open (or
    ``verify --repair``) replays the changes from the store without re-embedding anything."""

    agent: str
    tier: Tier
    changes: int
    saved_at_change: int


class VerifyReport(BaseModel):
    problems: list[VerifyProblem]
    behind: list[IndexBehind]

    @property
    def ok(self) -> bool:
        return not self.problems


def validate_agent(agent: str) -> str:
    try:
        return _agent_name.validate_python(agent)
    except ValueError as exc:
        raise InvalidInputError(f"invalid agent name {agent!r}: 1-64 of A-Z a-z 0-9 _ . - "
                                "starting with a letter or digit") from exc


def prepare_home(home: Path) -> Path:
    """The memory home, created if needed; a path that is a file, lies under a file, or cannot be
    written (read-only file system, permissions) is refused as an input error naming it."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=home):
            pass
    except FileExistsError as exc:
        raise InvalidInputError(f"memory home {home} is not a directory (a file is in the way: "
                                f"{exc.filename or home})") from exc
    except NotADirectoryError as exc:
        raise InvalidInputError(f"memory home {home} lies under a file, not a directory") from exc
    except OSError as exc:
        raise InvalidInputError(f"memory home {home} cannot be written: {exc.strerror or exc}") from exc
    return home


class Memory:
    def __init__(self, config: MemoryConfig, *, embedder: Embedder | None = None) -> None:
        self.config = config
        self.home = prepare_home(config.home)
        self.store = open_store(self.home, config.store, timeout=config.store_timeout)
        self.model_id = self._resolve_model(embedder)
        self.index_settings = self._resolve_index_kind()
        self.engine = Engine(store=self.store, embedder=self._serving(embedder or self._lazy(self.model_id)),
                             index_root=self.home / "index", index_settings=self.index_settings,
                             search_settings=config.search, max_loaded_indexes=config.max_loaded_indexes,
                             ranker=shipped_ranker() if config.search.rerank else None)

    @classmethod
    def open(cls, home: str | os.PathLike[str] | None = None, *, model: str | None = None,
             embedder: Embedder | None = None, **settings: Any) -> Memory:
        """Open (creating if needed) the memory home; see :class:`MemoryConfig` for settings."""
        return cls(MemoryConfig.resolve(home=home, model=model, **settings), embedder=embedder)

    def _lazy(self, model_id: str) -> LazyEmbedder:
        batch = self.config.embed_batch_size
        return LazyEmbedder(model_id, lambda: load_embedder(model_id, batch_size=batch))

    def _serving(self, embedder: Embedder) -> Embedder:
        """The embedder searches go through: query vectors cached, and batched across threads if asked."""
        if self.config.query_batching:
            embedder = MicroBatcher(embedder)
        if self.config.query_cache_size:
            embedder = QueryCache(embedder, self.config.query_cache_size)
        return embedder

    def requested_model(self, name: str | None, backend: Backend | None) -> str | None:
        """The model id that `name` and `backend` ask for (None: neither given). What is not given
        comes from the home: its model name, and its backend (so `--model X` on a torch home stays torch)."""
        if name is None and backend is None:
            return None
        recorded = self.store.get_meta(MODEL_META_KEY)
        if name is None:
            name = split_model_id(recorded)[1] if recorded and backend_of(recorded) else DEFAULT_MODEL
        return qualified_model_id(name, backend, fallback=backend_of(recorded) if recorded else None)

    def _resolve_model(self, embedder: Embedder | None) -> str:
        recorded = self.store.get_meta(MODEL_META_KEY)
        requested = embedder.model_id if embedder else self.requested_model(self.config.model,
                                                                              self.config.embed_backend)
        if recorded is None:
            chosen = requested or qualified_model_id(DEFAULT_MODEL, None)
            self.store.set_meta(MODEL_META_KEY, chosen)
            return chosen
        if requested and requested != recorded:
            raise ModelMismatchError(
                f"the memory home {self.home} is embedded with {recorded!r}, not {requested!r}. "
                f"Run `memvec rebuild --model {requested}` to re-embed it, or drop "
                "--model/--embed-backend/MEMVEC_MODEL/MEMVEC_EMBED_BACKEND.")
        return recorded

    def _resolve_index_kind(self) -> IndexSettings:
        """An explicit kind is remembered for the home (its indexes rebuild on next load);
        otherwise the home's recorded kind, 'auto' for a new home."""
        recorded = self.store.get_meta(INDEX_KIND_META_KEY)
        kind = self.config.index.kind or recorded or "auto"
        if kind != recorded:
            self.store.set_meta(INDEX_KIND_META_KEY, kind)
        return self.config.index.model_copy(update={"kind": kind})

    # -- tiers ----------------------------------------------------------------------------
    def archival(self, agent: str) -> ArchivalMemory:
        return ArchivalMemory(self.engine, validate_agent(agent))

    def recall(self, agent: str) -> RecallMemory:
        return RecallMemory(self.engine, validate_agent(agent))

    def core(self, agent: str) -> CoreMemory:
        return CoreMemory(self.store, validate_agent(agent))

    def insert(self, records: list[NewRecord]) -> list[InsertResult]:
        return self.engine.insert(records)

    def search(self, request: SearchRequest) -> list[Hit]:
        return self.engine.search(request)

    def agents(self) -> list[str]:
        """Every agent with settings, core blocks or records in this home."""
        return self.store.agents()

    def delete_agent(self, agent: str) -> int:
        """Delete an agent, its blocks and all its records; returns how many records went."""
        deleted = self.store.delete_agent(validate_agent(agent))
        for tier in Tier:
            self.engine.tier_index(agent, tier).save()  # applies the deletions from the change log
        return len(deleted)

    # -- maintenance ----------------------------------------------------------------------
    def _partitions(self, agent: str | None) -> list[tuple[str, Tier]]:
        parts = self.store.partitions()
        return [p for p in parts if agent is None or p[0] == agent]

    def rebuild(self, *, agent: str | None = None, model: str | None = None,
                backend: Backend | None = None) -> list[RebuildReport]:
        """Rebuild indexes from the store; with a new `model` or `backend`, re-embed the whole home first."""
        model = self.requested_model(model, backend)
        if model and model != self.model_id:
            if agent is not None:
                raise InvalidInputError("a model change re-embeds the whole home; omit --agent")
            return self._rebuild_with(load_embedder(model, batch_size=self.config.embed_batch_size), None)
        return self._rebuild_with(self.engine.embedder, agent)

    def _rebuild_with(self, embedder: Embedder, agent: str | None) -> list[RebuildReport]:
        reports = []
        for part_agent, tier in self._partitions(agent):
            started = time.perf_counter()
            index = TierIndex(part_agent, tier, store=self.store, embedder=embedder,
                              directory=self.engine.index_dir(part_agent, tier), settings=self.index_settings)
            reembedded = index.rebuild()
            reports.append(RebuildReport(agent=part_agent, tier=tier, records=len(index), reembedded=reembedded,
                                         seconds=time.perf_counter() - started))
            self.engine.forget(part_agent, tier)
        if embedder.model_id != self.model_id:
            self.store.set_meta(MODEL_META_KEY, embedder.model_id)
            self.model_id = embedder.model_id
            self._close_serving()  # the old model's batcher thread goes with it
            self.engine.embedder = self._serving(embedder)
        return reports

    def verify(self, *, agent: str | None = None, repair: bool = False) -> VerifyReport:
        """Disagreements between the saved index files and the store, and the indexes merely behind
        the store's change log. With `repair`, every index is opened first (which replays what it is
        behind, or rebuilds it from the store if it disagrees) and saved, then checked."""
        if repair:
            for part_agent, tier in self._partitions(agent):
                self.engine.tier_index(part_agent, tier).save()
        self.save()
        report = VerifyReport(problems=[], behind=[])
        for part_agent, tier in self._partitions(agent):
            check = verify_on_disk(part_agent, tier, store=self.store, model_id=self.model_id,
                                   directory=self.engine.index_dir(part_agent, tier))
            report.problems += [VerifyProblem(agent=part_agent, tier=tier, problem=p) for p in check.problems]
            if check.behind and not check.problems:
                report.behind.append(IndexBehind(agent=part_agent, tier=tier, changes=check.behind,
                                                 saved_at_change=check.saved_at))
        return report

    def stats(self) -> Stats:
        parts = []
        for agent, tier in self._partitions(None):
            directory = self.engine.index_dir(agent, tier)
            try:
                manifest: Manifest | None = read_manifest(directory)
            except IndexFileError:
                manifest = None
            parts.append(PartitionStats(
                agent=agent, tier=tier, records=self.store.count(agent, tier),
                model_id=manifest.model_id if manifest else None, dim=manifest.dim if manifest else None,
                index_kind=manifest.index_kind if manifest else None,
                index_bytes=sum(p.stat().st_size for p in directory.glob("*.npz")) if directory.exists() else 0,
                last_change=self.store.last_change(agent, tier),
                indexed_change=manifest.last_change if manifest else None))
        return Stats(home=str(self.home), model_id=self.model_id, store_bytes=self.store.storage_bytes(),
                     indexes=self.engine.index_usage(), partitions=parts)

    # -- lifecycle ------------------------------------------------------------------------
    def save(self) -> None:
        self.engine.save()

    def close(self) -> None:
        self.save()
        self.store.close()
        self._close_serving()

    def _close_serving(self) -> None:
        close_batcher = getattr(self.engine.embedder, "close", None)
        if close_batcher is not None:
            close_batcher()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

