"""What is deleted on purpose stays deleted, also after a restore: the tombstones a delete or forget
leaves in the home's forget log (memvec.store.forget_log), and their application to a store restored
from a backup taken before them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from memvec.engine.documents import delete_documents, saved_without
from memvec.engine.engine import Engine
from memvec.exchange.reports import ForgetApplied
from memvec.store.forget_log import Tombstone, content_hash
from memvec.types import Tier


def apply_tombstones(engine: Engine, tombstones: Sequence[Tombstone], *, log: str, taken_at: datetime) -> ForgetApplied:
    """Delete again, in the restored store, what each tombstone newer than the backup names, where the
    content still matches its hash (an id alone could name something else in another store)."""
    newer = [t for t in tombstones if t.at > taken_at]
    done = ForgetApplied(log=log, backup_taken_at=taken_at, tombstones=len(newer))
    for agent in sorted({t.agent for t in newer if t.kind == "agent"}):
        if engine.store.has_agent(agent):
            engine.store.delete_agent(agent)
            done.agents += 1
    documents = [int(t.ref) for t in newer if t.kind == "document" and _document_matches(engine, t)]
    if documents:
        _, holders = delete_documents(engine, documents)
        saved_without(engine, holders)
        done.documents = len(documents)
    done.records = _records(engine, [t for t in newer if t.kind == "record"])
    for t in newer:
        if t.kind == "block_history":
            engine.store.forget_block_history(t.agent, t.ref or None)
            done.block_histories += 1
    return done


def _document_matches(engine: Engine, tombstone: Tombstone) -> bool:
    document = engine.store.document(int(tombstone.ref))
    return document is not None and document.content_hash == tombstone.content_hash


def _records(engine: Engine, tombstones: list[Tombstone]) -> int:
    by_agent: dict[str, set[int]] = defaultdict(set)
    hashes = {(t.agent, int(t.ref)): t.content_hash for t in tombstones}
    for agent, record_id in hashes:
        by_agent[agent].add(record_id)
    deleted = 0
    for agent, ids in by_agent.items():
        found = engine.store.get(agent, sorted(ids))
        for tier in Tier:
            matching = [r.id for r in found if r.tier is tier and content_hash(r.text) == hashes[(agent, r.id)]]
            deleted += engine.purge(agent, tier, matching)
    return deleted
