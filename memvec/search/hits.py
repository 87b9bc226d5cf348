"""Ranked records read back as hits, each with its score parts and its relevance."""

from __future__ import annotations

from memvec.search.hybrid import Ranked
from memvec.search.parts import SearchableTier
from memvec.search.relevance import Calibration
from memvec.types import Hit


def to_hits(index: SearchableTier, ranked: Ranked, calibration: Calibration | None = None) -> list[Hit]:
    """The ranked records as hits, each with its relevance where `calibration` can judge it."""
    records = {r.id: r for r in index.records(ranked.ids.tolist())}
    hits = []
    parts = ranked.method_scores()
    relevance = _relevance(index, ranked, calibration)
    for record_id, score, scores, judged in zip(
        ranked.ids.tolist(), ranked.score.tolist(), parts, relevance, strict=True
    ):
        record = records.get(record_id)
        if record is None:  # deleted between ranking and fetching
            continue
        # vars(): the record's fields as they are (model_dump and dict(record) rebuild them: thrice the time)
        hits.append(Hit(**vars(record), score=score, scores=scores, relevance=judged))
    return hits


def _relevance(index: SearchableTier, ranked: Ranked, calibration: Calibration | None) -> list[float | None]:
    """Each row's probability of relevance; None where there is no calibration or no cosine (bm25, token)."""
    if calibration is None or ranked.vector is None or ranked.coverage is None:
        return [None] * len(ranked.ids)
    lengths = index.lexical.lengths_for(ranked.ids)
    judged: list[float | None] = calibration.probability(ranked.vector, ranked.coverage, ranked.known, lengths).tolist()
    return judged
