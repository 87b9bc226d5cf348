"""What `Memory`'s maintenance methods do with the derived indexes: rebuild them from the store,
check the saved files against it, and describe each (agent, tier) partition."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from memvec.config import IndexSettings
from memvec.embed.base import Embedder
from memvec.engine.engine import Engine
from memvec.engine.partition_index import PartitionIndex, verify_on_disk
from memvec.errors import IndexFileError
from memvec.exchange.reports import (
    IndexBehind,
    NotLoaded,
    OldFormat,
    PartitionStats,
    RebuildReport,
    VerifyProblem,
    VerifyReport,
)
from memvec.index.files import MANIFEST_FILE, Manifest, read_manifest
from memvec.types import Tier


def rebuild_partitions(
    engine: Engine, embedder: Embedder, partitions: Sequence[tuple[str, Tier]], settings: IndexSettings
) -> list[RebuildReport]:
    """Each partition's index built again from the store with `embedder` (re-embedding only where its
    model differs from the stored vectors'), saved, and dropped from memory to be loaded afresh."""
    reports = []
    for agent, tier in partitions:
        started = time.perf_counter()
        index = PartitionIndex(
            agent,
            tier,
            store=engine.store,
            embedder=embedder,
            directory=engine.index_dir(agent, tier),
            settings=settings,
        )
        reembedded = index.rebuild()
        reports.append(
            RebuildReport(
                agent=agent,
                tier=tier,
                records=len(index),
                reembedded=reembedded,
                seconds=time.perf_counter() - started,
            )
        )
        engine.unload(agent, tier)
    return reports


def verify_partitions(engine: Engine, partitions: Sequence[tuple[str, Tier]], *, model_id: str) -> VerifyReport:
    """Disagreements between each partition's saved files and the store, the indexes merely behind
    its change log, those never saved here and those in an older format."""
    report = VerifyReport(problems=[], behind=[])
    for agent, tier in partitions:
        directory = engine.index_dir(agent, tier)
        if not (directory / MANIFEST_FILE).exists() and not any(directory.glob("*.npz")):
            report.not_loaded.append(NotLoaded(agent=agent, tier=tier))
            continue
        check = verify_on_disk(agent, tier, store=engine.store, model_id=model_id, directory=directory)
        if check.old_format:
            report.old_format.append(OldFormat(agent=agent, tier=tier, detail=check.old_format))
        report.problems += [VerifyProblem(agent=agent, tier=tier, problem=p) for p in check.problems]
        if check.behind and not check.problems:
            report.behind.append(
                IndexBehind(agent=agent, tier=tier, changes=check.behind, saved_at_change=check.saved_at)
            )
    return report


def describe_partitions(engine: Engine, agents: Collection[str] | None = None) -> list[PartitionStats]:
    """Each tier's records and saved index vs the store's last change, for `agents` (None: all)."""
    store = engine.store
    parts = []
    existing = set(store.agents())  # a deleted agent's change log outlives it
    for owner, tier in store.partitions():
        if owner not in existing or (agents is not None and owner not in agents):
            continue
        directory = engine.index_dir(owner, tier)
        try:
            manifest: Manifest | None = read_manifest(directory)
        except IndexFileError:
            manifest = None
        parts.append(
            PartitionStats(
                agent=owner,
                tier=tier,
                records=store.count(owner, tier),
                model_id=manifest.model_id if manifest else None,
                dim=manifest.dim if manifest else None,
                index_kind=manifest.index_kind if manifest else None,
                index_bytes=sum(p.stat().st_size for p in directory.glob("*.npz")) if directory.exists() else 0,
                last_change=store.last_change(owner, tier),
                indexed_change=manifest.last_change if manifest else None,
            )
        )
    return parts
