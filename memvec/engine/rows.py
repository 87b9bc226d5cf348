"""What a write stores: records made into rows for the store, embedded, with their contexts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memvec.config import IndexSettings
from memvec.embed.base import Embedder, checked_vectors, embed_records
from memvec.engine.repeats import near_key
from memvec.guard import looks_untrusted
from memvec.store.base import PreparedRecord, Store
from memvec.types import NewRecord, Tier, WrittenBy


def prepared_rows(
    store: Store,
    embedder: Embedder,
    settings: IndexSettings,
    target: tuple[str, Tier],
    records: Sequence[NewRecord],
    vectors: npt.NDArray[np.float32] | None = None,
    written_by: WrittenBy | None = None,
) -> list[PreparedRecord]:
    """Rows for `store.insert`, embedded (or with `vectors`, checked), with their contexts; one
    (agent, tier) group. Writes nothing: a caller can prepare everything before its transaction."""
    agent, tier = target
    if vectors is not None:
        vectors = checked_vectors(vectors, len(records), embedder.dim)
    contexts = record_contexts(store, agent, tier, list(records))
    if vectors is None:
        vector_contexts = contexts if settings.vector_context else [None] * len(contexts)
        vectors = embed_records(
            embedder, [record.text for record in records], vector_contexts, windows=settings.long_text_windows
        )
    now = store.clock()
    return [
        PreparedRecord(
            record=record,
            dedup_key=record.dedup_key(),
            created_at=record.created_at or now,
            embedding=vector,
            model_id=embedder.model_id,
            context=context,
            untrusted=written_by is None and looks_untrusted(record.text),
            written_by=written_by,
            near_key=near_key(tier, record),
        )
        for record, vector, context in zip(records, vectors, contexts, strict=True)
    ]


def record_contexts(store: Store, agent: str, tier: Tier, records: list[NewRecord]) -> list[str | None]:
    """Each record's context: its own, else, for a recall message, the previous message of its
    session (in this batch, else in the store), so a reply is indexed with what it answers.
    Archival passages get none by default: two passages saved in one session need not be related."""
    previous: dict[str, str | None] = {}
    contexts: list[str | None] = []
    for record in records:
        session = record.citation.session_id
        if record.context or session is None or tier is not Tier.RECALL:
            contexts.append(record.context)
            continue
        if session not in previous:
            previous[session] = store.last_in_session(agent, tier, session)
        contexts.append(previous[session])
        previous[session] = record.text
    return contexts
