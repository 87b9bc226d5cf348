"""The vector and BM25 indexes of one (agent, tier), derived from the store and kept in step.

Every write goes to the store first; the index then applies the store's change log from the last
change it has seen (``catch_up``). The same path serves this process's writes, another
process's writes and a restart after a crash, so there is one way for an index to change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.config import IndexSettings
from memvec.embed.base import Embedder, embed_records
from memvec.errors import IndexFileError, OldIndexFormatError
from memvec.guard import checked_on_read
from memvec.index.facts import RecordFacts
from memvec.index.files import (
    FACTS_FILE,
    LEXICAL_FILE,
    SESSIONS_FILE,
    VECTOR_FILE,
    Manifest,
    check_files,
    directory_lock,
    read_manifest,
    sha256_file,
    write_atomically,
    write_manifest,
)
from memvec.index.lexical import BM25Index
from memvec.index.sessions import SessionTable
from memvec.index.tokenize import date_words, tokenize
from memvec.index.vector import HnswParams, VectorIndex
from memvec.store.base import Change, EmbeddingBatch, Store
from memvec.telemetry.metrics import CHANGES_APPLIED
from memvec.types import IndexKind, Record, SearchFilters, Tier

log = logging.getLogger("memvec.index")
Ids = npt.NDArray[np.int64]
INDEX_FILES = (VECTOR_FILE, LEXICAL_FILE, SESSIONS_FILE, FACTS_FILE)
AUTO_LARGE_KIND: IndexKind = "hnsw-sq8"  # kind 'auto' past auto_hnsw_from (benchmarks/results/scale.md)


@dataclass
class LoadReport:
    """How an index came to be in memory: loaded from disk, or rebuilt and why."""

    rebuilt: bool = False
    reason: str = ""
    changes_applied: int = 0
    reembedded: int = 0
    notes: list[str] = field(default_factory=list)


class PartitionIndex:
    def __init__(
        self, agent: str, tier: Tier, *, store: Store, embedder: Embedder, directory: Path, settings: IndexSettings
    ) -> None:
        self.agent = agent
        self.tier = tier
        self.store = store
        self.embedder = embedder
        self.directory = directory
        self.settings = settings
        self.lock = threading.RLock()
        self.vector = self._empty_vector(self.kind_for(0))
        self.lexical = self._empty_lexical()
        self.sessions = SessionTable(embedder.dim)
        self.facts = RecordFacts()
        self.applied = 0
        self.unsaved = 0

    def _empty_vector(self, kind: IndexKind = "flat") -> VectorIndex:
        s = self.settings
        return VectorIndex(
            self.embedder.dim, kind=kind, hnsw=HnswParams(s.hnsw_m, s.hnsw_ef_construction, s.hnsw_ef_search)
        )

    def kind_for(self, count: int, current: str | None = None) -> IndexKind:
        """The vector index kind for a tier of `count` records. Kind 'auto' switches at
        auto_hnsw_from, and back only below half of it, so a tier near the line does not flap."""
        kind = self.settings.kind or "flat"
        if kind != "auto":
            return kind
        big = self.settings.auto_hnsw_from
        if current == AUTO_LARGE_KIND and count >= big // 2:
            return AUTO_LARGE_KIND
        return AUTO_LARGE_KIND if count >= big else "flat"

    def _empty_lexical(self) -> BM25Index:
        return BM25Index(k1=self.settings.bm25_k1, b=self.settings.bm25_b)

    # -- opening --------------------------------------------------------------------------
    @classmethod
    def open(
        cls, agent: str, tier: Tier, *, store: Store, embedder: Embedder, directory: Path, settings: IndexSettings
    ) -> tuple[PartitionIndex, LoadReport]:
        index = cls(agent, tier, store=store, embedder=embedder, directory=directory, settings=settings)
        report = LoadReport()
        try:
            with directory_lock(directory, shared=True):
                index._load()
        except IndexFileError as exc:
            report.rebuilt, report.reason = True, str(exc)
            if isinstance(exc, OldIndexFormatError):
                log.warning(
                    "%s/%s: index files of an older memvec (%s); rebuilding them from the store", agent, tier.value, exc
                )
            elif (directory / "manifest.json").exists() or (directory / VECTOR_FILE).exists():
                log.warning("rebuilding %s/%s index from the store: %s", agent, tier.value, exc)
            report.reembedded = index.rebuild()
            return index, report
        report.changes_applied = index.catch_up()
        problem = index.settled_disagreement()
        if problem:
            log.warning("rebuilding %s/%s index: %s", agent, tier.value, problem)
            report.rebuilt, report.reason = True, problem
            report.reembedded = index.rebuild()
        return index, report

    def _load(self) -> None:
        manifest = read_manifest(self.directory)
        expected = self._manifest_fields()
        expected["index_kind"] = self.kind_for(manifest.record_count, current=manifest.index_kind)
        for key in (
            "agent",
            "tier",
            "model_id",
            "dim",
            "index_kind",
            "bm25_k1",
            "bm25_b",
            "context_weight",
            "index_dates",
            "vector_context",
        ):
            if getattr(manifest, key) != expected[key]:
                raise IndexFileError(f"index was built with {key}={getattr(manifest, key)!r}, now {expected[key]!r}")
        check_files(self.directory, manifest)
        try:
            self.vector = VectorIndex.load(self.directory / VECTOR_FILE)
            self.lexical = BM25Index.load(self.directory / LEXICAL_FILE)
            self.sessions = SessionTable.load(self.directory / SESSIONS_FILE)
            self.facts = RecordFacts.load(self.directory / FACTS_FILE)
        except (OSError, ValueError, KeyError) as exc:
            raise IndexFileError(f"cannot read index files in {self.directory}: {exc}") from exc
        self.applied = manifest.last_change

    def _manifest_fields(self) -> dict[str, object]:
        return {
            "agent": self.agent,
            "tier": self.tier.value,
            "model_id": self.embedder.model_id,
            "dim": self.embedder.dim,
            "index_kind": self.vector.kind,
            "bm25_k1": self.settings.bm25_k1,
            "bm25_b": self.settings.bm25_b,
            "context_weight": self.settings.context_weight,
            "index_dates": self.settings.index_dates,
            "vector_context": self.settings.vector_context,
        }

    def disagreement(self) -> str:
        """Empty when the in-memory indexes hold exactly the store's ids; else what differs."""
        return id_disagreement(self.store.ids(self.agent, self.tier), self.vector, self.lexical)

    def settled_disagreement(self, attempts: int = 3) -> str:
        """:meth:`disagreement`, not counting writes that land while it is checked: a difference
        that goes away once the index catches up again was a concurrent write, not a fault."""
        for _ in range(attempts):
            problem = self.disagreement()
            if not problem or self.catch_up() == 0:
                return problem
        return self.disagreement()

    # -- keeping in step ------------------------------------------------------------------
    def catch_up(self) -> int:
        """Apply the store's changes since the last applied one; returns how many."""
        with self.lock:
            changes = self.store.changes_since(self.agent, self.tier, self.applied)
            if not changes:
                return 0
            CHANGES_APPLIED.inc(len(changes))
            final: dict[int, str] = {}
            for change in changes:
                final[change.record_id] = change.op
            removed = [i for i, op in final.items() if op == "delete" and i in self.lexical]
            added = [i for i, op in final.items() if op == "add" and i not in self.lexical]
            removed_ids = np.array(removed, dtype=np.int64)
            self.sessions.remove(removed_ids, self.vector.vectors_for(removed_ids))
            self.facts.remove(removed_ids)
            self.vector.remove(removed_ids)
            self.lexical.remove(removed)
            for batch in self.store.embeddings(self.agent, self.tier, added):
                self._add_batch(batch)
            self.applied = changes[-1].seq
            self.unsaved += len(changes)
            if self.vector.tombstone_fraction > 0.25 or self.kind_for(len(self), self.vector.kind) != self.vector.kind:
                self.rebuild()
            elif self.unsaved >= max(self.settings.save_every, len(self) // 8):
                # A save rewrites the whole index, so past 16,000 records it waits for changes worth an
                # eighth of it: saving costs O(1) per change, and a crash replays at most that many
                # changes from the store's log (read back, never re-embedded).
                self.save()
            return len(changes)

    def _add_batch(self, batch: EmbeddingBatch) -> int:
        """Add a batch from the store, re-embedding rows stored under another model."""
        stale = [i for i, m in enumerate(batch.models) if m != self.embedder.model_id]
        vectors = batch.vectors
        if stale:
            contexts = [batch.contexts[i] if self.settings.vector_context else None for i in stale]
            texts = [batch.texts[i] for i in stale]
            fresh = embed_records(self.embedder, texts, contexts, windows=self.settings.long_text_windows)
            self.store.set_embeddings([int(batch.ids[i]) for i in stale], fresh, self.embedder.model_id)
            if vectors.shape[1] != self.embedder.dim:
                vectors = np.zeros((len(batch.ids), self.embedder.dim), dtype=np.float32)
            vectors = vectors.copy()
            vectors[stale] = fresh
        self.vector.add(batch.ids, vectors)
        self.sessions.add(batch.ids, batch.sessions, vectors)
        self.facts.add(batch.ids, batch.roles, batch.texts)
        for row, record_id in enumerate(batch.ids.tolist()):
            self.lexical.add_fields(record_id, self._lexical_fields(batch, row), group=self.sessions.row_of(record_id))
        return len(stale)

    def _lexical_fields(self, batch: EmbeddingBatch, row: int) -> list[tuple[list[str], float]]:
        """BM25 fields of a record: its text, its date (so "in May 2023" matches), its context."""
        fields = [(tokenize(batch.texts[row]), 1.0)]
        if self.settings.index_dates:
            fields.append((tokenize(date_words(batch.created_at[row])), 1.0))
        context = batch.contexts[row]
        if context and self.settings.context_weight > 0:
            fields.append((tokenize(context), self.settings.context_weight))
        return fields

    def rebuild(self) -> int:
        """Rebuild both indexes from the store and save them; returns how many were re-embedded."""
        with self.lock:
            self.applied = self.store.last_change(self.agent, self.tier)
            kind = self.kind_for(self.store.count(self.agent, self.tier), current=self.vector.kind)
            self.vector, self.lexical = self._empty_vector(kind), self._empty_lexical()
            self.sessions = SessionTable(self.embedder.dim)
            self.facts = RecordFacts()
            reembedded = sum(self._add_batch(b) for b in self.store.embeddings(self.agent, self.tier))
            self.catch_up()  # anything written while we read
            self.save()
            return reembedded

    # -- saving ---------------------------------------------------------------------------
    def save(self) -> None:
        with self.lock, directory_lock(self.directory):
            write_atomically(self.directory / VECTOR_FILE, self.vector.save)
            write_atomically(self.directory / LEXICAL_FILE, self.lexical.save)
            write_atomically(self.directory / SESSIONS_FILE, self.sessions.save)
            write_atomically(self.directory / FACTS_FILE, self.facts.save)
            fields = self._manifest_fields()
            manifest = Manifest.model_validate(
                {
                    **fields,
                    "record_count": len(self.lexical),
                    "last_change": self.applied,
                    "checksums": {name: sha256_file(self.directory / name) for name in INDEX_FILES},
                }
            )
            write_manifest(self.directory, manifest)
            self.unsaved = 0

    def __len__(self) -> int:
        return len(self.lexical)

    # -- what a search reads (memvec.search.parts.SearchableTier) ---------------------------
    def texts(self, filters: SearchFilters) -> Iterator[tuple[int, str]]:
        return self.store.texts(self.agent, self.tier, filters)

    def records(self, ids: Sequence[int]) -> list[Record]:
        return checked_on_read(self.store.get(self.agent, ids))

    def exact_vectors(self, ids: Ids) -> npt.NDArray[np.float32]:
        """The float32 vectors of `ids` as stored (the index may hold them quantized); rows of ids
        the store no longer holds, or holds under another model, come from the index."""
        out = np.zeros((len(ids), self.vector.dim), dtype=np.float32)
        row_of = {int(record_id): row for row, record_id in enumerate(ids.tolist())}
        missing = set(row_of.values())
        for batch in self.store.embeddings(self.agent, self.tier, list(row_of)):
            for record_id, vector, model in zip(batch.ids.tolist(), batch.vectors, batch.models, strict=True):
                if model == self.embedder.model_id:
                    out[row_of[record_id]] = vector
                    missing.discard(row_of[record_id])
        if missing:
            rows = np.array(sorted(missing), dtype=np.int64)
            out[rows] = self.vector.vectors_for(ids[rows])
        return out


@dataclass
class DiskCheck:
    """What `verify_on_disk` found: disagreements, and how far the saved index is behind the store.

    Being behind is not a disagreement: the next open replays those changes from the store's log
    (nothing is re-embedded), so it is reported apart from the problems."""

    problems: list[str] = field(default_factory=list)
    behind: int = 0
    saved_at: int = 0
    old_format: str = ""  # files of an older memvec: rebuilt on open, not a disagreement


def verify_on_disk(agent: str, tier: Tier, *, store: Store, directory: Path, model_id: str) -> DiskCheck:
    """Compare the saved index files with the store as the next open would see them, i.e. with the
    store's pending changes replayed on top. Nothing is repaired: this only reads."""
    try:
        with directory_lock(directory, shared=True):
            manifest = read_manifest(directory)
            check_files(directory, manifest)
            vector = VectorIndex.load(directory / VECTOR_FILE)
            lexical = BM25Index.load(directory / LEXICAL_FILE)
    except OldIndexFormatError as exc:
        return DiskCheck(old_format=str(exc))
    except (IndexFileError, OSError, ValueError, KeyError) as exc:
        return DiskCheck(problems=[str(exc)])
    check = DiskCheck(saved_at=manifest.last_change)
    if manifest.model_id != model_id:
        check.problems.append(f"index embedded with {manifest.model_id!r}, the home uses {model_id!r}")
    if manifest.dim != vector.dim:
        check.problems.append(f"manifest dim {manifest.dim} != vector index dim {vector.dim}")
    if manifest.record_count != len(lexical):
        check.problems.append(f"manifest counts {manifest.record_count} records, the BM25 index holds {len(lexical)}")
    pending = store.changes_since(agent, tier, manifest.last_change)
    check.behind = len(pending)
    mismatch = id_disagreement(store.ids(agent, tier), vector, lexical, pending)
    if mismatch:
        check.problems.append(mismatch)
    elif not check.problems:
        touched = {change.record_id for change in pending}
        check.problems += _vector_mismatches(agent, tier, store, vector, model_id, skip=touched)
    return check


def id_disagreement(store_ids: Ids, vector: VectorIndex, lexical: BM25Index, pending: Sequence[Change] = ()) -> str:
    """Empty when both indexes hold exactly the store's ids once `pending` changes are replayed on
    them (as `PartitionIndex.catch_up` would); else what differs."""
    final = {change.record_id: change.op for change in pending}
    added = np.array([i for i, op in final.items() if op == "add"], dtype=np.int64)
    deleted = np.array([i for i, op in final.items() if op == "delete"], dtype=np.int64)
    store_ids = np.sort(store_ids)
    replaying = f" after replaying {len(pending)} pending store changes" if pending else ""
    for name, saved in (("vector", vector.ids()), ("bm25", lexical.ids())):
        ids = np.union1d(np.setdiff1d(saved, deleted), added) if pending else saved
        if not np.array_equal(ids, store_ids):
            missing = len(np.setdiff1d(store_ids, ids))
            extra = len(np.setdiff1d(ids, store_ids))
            return (
                f"{name} index has {len(ids)} records{replaying}, the store has {len(store_ids)} "
                f"({missing} missing, {extra} extra)"
            )
    return ""


def _vector_mismatches(
    agent: str, tier: Tier, store: Store, vector: VectorIndex, model_id: str, *, skip: set[int]
) -> list[str]:
    """Indexed vectors that differ from the store's, leaving out records with pending changes
    (the replay reads those from the store)."""
    wrong = 0
    tolerance = vector.tolerance
    for batch in store.embeddings(agent, tier):
        if any(m != model_id for m in batch.models):
            return [f"store holds embeddings from a model other than {model_id!r}"]
        keep = np.array([int(i) not in skip for i in batch.ids.tolist()], dtype=bool)
        if not keep.any():
            continue
        indexed = vector.vectors_for(batch.ids[keep])
        wrong += int((np.abs(indexed - batch.vectors[keep]).max(axis=1) > tolerance).sum())
    return [f"{wrong} vectors in the index differ from the store's embeddings"] if wrong else []
