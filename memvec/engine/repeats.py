"""Which archival rows of an insert repeat a current passage, or an earlier row of the same batch
(`DedupSettings`): a cosine of at least `near_cosine` and near-identical words
(`memvec.index.duplicates.near_identical`).

Candidates come two ways, both bounded so that bulk ingest stays linear at any tier size:
- the content key (`content_key`: case, punctuation, function words and fillers folded away), an
  indexed lookup in the store, whatever the tier's size;
- for repeats with a typo, the vector index's 3 nearest current passages, where one search is cheap:
  an HNSW index, or a flat one of at most `SCAN_LIMIT` records (the whole insert batch in one matrix
  product). A larger flat tier (a kind set by hand; `auto` switches to HNSW at 50,000) catches
  key-level repeats only.
Within a batch: the same content key, or, for batches of at most `BATCH_SCAN_LIMIT` rows, the earlier
rows' vectors.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from memvec.config import DedupSettings
from memvec.engine.partition_index import PartitionIndex
from memvec.index.duplicates import content_key, near_identical
from memvec.store.base import PreparedRecord, Store
from memvec.types import NewRecord, Tier

SCAN_LIMIT = 20_000  # records of a flat index searched for each insert batch (one matrix product)
BATCH_SCAN_LIMIT = 1_000  # rows of one insert compared with each other by vector
Target = tuple[str, int]  # ("record", a passage id) or ("row", an earlier row of the batch)


def near_key(tier: Tier, record: NewRecord) -> str | None:
    """What `PreparedRecord.near_key` holds: the content key of an archival passage (a document's chunk
    has none: no passage is taken for a repeat of it)."""
    return content_key(record.text) if tier is Tier.ARCHIVAL and record.citation.document is None else None


def find_repeats(
    store: Store,
    index: PartitionIndex | None,
    closed: npt.NDArray[np.int64],
    agent: str,
    tier: Tier,
    rows: list[PreparedRecord],
    dedup: DedupSettings,
) -> dict[int, Target]:
    """Rows (by position) that repeat something, and what. `index`: the tier's, None when it never
    held a record; `closed`: its versions that are not current (never a target)."""
    threshold = dedup.near_cosine
    if threshold is None or not rows:
        return {}
    now = store.clock()
    by_key = store.near_key_ids(agent, tier, [r.near_key for r in rows if r.near_key], now) if index else {}
    batch = np.array([row.embedding for row in rows], dtype=np.float32)
    nearest = (
        _nearest_all(store, agent, index, batch, closed, threshold)
        if index is not None and (index.vector.is_hnsw or len(index) <= SCAN_LIMIT)
        else None
    )
    first_with_key: dict[str, int] = {}
    repeats: dict[int, Target] = {}
    for position, row in enumerate(rows):
        if row.record.supersedes is not None or row.record.citation.document is not None:
            continue  # a new version, or a chunk of a file: stored as it is
        target = _keyed(index, row, by_key, threshold) or (
            _nearest(row, nearest[0][position], nearest[1], dedup) if nearest is not None else None
        )
        earlier = first_with_key.get(row.near_key or "")
        if target is None and earlier is not None and float(batch[earlier] @ batch[position]) >= threshold:
            target = ("row", earlier)
        if target is None and len(rows) <= BATCH_SCAN_LIMIT:
            target = _earlier_row(rows, position, batch[:position] @ batch[position], repeats, threshold, dedup)
        if target is None:
            first_with_key.setdefault(row.near_key or "", position)
        else:
            repeats[position] = target
    return repeats


def _keyed(
    index: PartitionIndex | None, row: PreparedRecord, by_key: dict[str, int], threshold: float
) -> Target | None:
    record_id = by_key.get(row.near_key or "")
    if index is None or record_id is None:
        return None
    cosine = float(index.exact_vectors(np.array([record_id], dtype=np.int64))[0] @ row.embedding)
    return ("record", record_id) if cosine >= threshold else None


def _nearest_all(
    store: Store,
    agent: str,
    index: PartitionIndex,
    batch: npt.NDArray[np.float32],
    closed: npt.NDArray[np.int64],
    threshold: float,
) -> tuple[list[list[int]], dict[int, str]]:
    """For every row, its nearest current passages (up to 3) at the threshold or above, found in one
    search, and the texts of all of them, read in one go."""
    with index.lock:
        ids, scores = index.vector.search_many(batch, 3, excluded=closed if len(closed) else None)
    close = [
        [int(i) for i, score in zip(row_ids, row_scores, strict=True) if i >= 0 and score >= threshold]
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist(), strict=True)
    ]
    wanted = sorted({i for row in close for i in row})
    # a document's chunk is never what a passage repeats: deleting the file would take the passage with it
    texts = {r.id: r.text for r in store.get(agent, wanted) if r.citation.document is None} if wanted else {}
    return close, texts


def _nearest(row: PreparedRecord, close: list[int], texts: dict[int, str], dedup: DedupSettings) -> Target | None:
    for record_id in close:  # one deleted since the index saw it has no text: skipped
        if record_id in texts and near_identical(row.record.text, texts[record_id], new_words=dedup.new_words):
            return ("record", record_id)
    return None


def _earlier_row(
    rows: list[PreparedRecord],
    position: int,
    cosines: npt.NDArray[np.float32],
    repeats: dict[int, Target],
    threshold: float,
    dedup: DedupSettings,
) -> Target | None:
    """An earlier row of the batch (not itself a repeat) that this one repeats; `cosines` to each."""
    for earlier in np.flatnonzero(cosines >= threshold).tolist():
        if earlier in repeats or rows[earlier].record.supersedes is not None:
            continue
        if near_identical(rows[position].record.text, rows[earlier].record.text, new_words=dedup.new_words):
            return ("row", earlier)
    return None
