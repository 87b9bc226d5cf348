"""A time expression in the query as a ranking signal ("what did I buy two weeks ago?").

A hybrid search whose query names a period (memvec.search.when) and does not filter by it ranks twice:
over everything and over the records of that period, and the two rankings are fused by reciprocal rank
(the two lists count alike, with the settings' rrf_k). A record of the period that the first ranking
also finds rises; one that only the period's ranking finds can enter; nothing is dropped, because a
question's period is often not when its evidence was said ("the museum I visited in December",
told in January)."""

from __future__ import annotations

from datetime import UTC, datetime

from memvec.search.when import Period, period_in
from memvec.types import Hit, SearchMode, SearchRequest


def boost_period(request: SearchRequest) -> Period | None:
    """The period a hybrid search's query names, when it is to lift that period's records."""
    if not request.boost_dates_in_query or request.dates_in_query or request.mode is not SearchMode.HYBRID:
        return None
    return period_in(request.query, request.reference_time or datetime.now(UTC))


def with_period(everything: list[Hit], in_period: list[Hit], k: int, rrf_k: int) -> list[Hit]:
    """The first k of both rankings fused by reciprocal rank. A hit's score is its fused value, and
    `scores.period` the part the period's ranking gave it; ties keep the order over everything."""
    place = {hit.id: n for n, hit in enumerate(everything)}
    period_part = {hit.id: 1.0 / (rrf_k + n + 1) for n, hit in enumerate(in_period)}
    hits = {hit.id: hit for hit in in_period} | {hit.id: hit for hit in everything}
    fused = {
        record: (1.0 / (rrf_k + place[record] + 1) if record in place else 0.0) + period_part.get(record, 0.0)
        for record in hits
    }
    order = sorted(hits, key=lambda record: (-fused[record], place.get(record, len(place)), record))
    return [_lifted(hits[record], fused[record], period_part.get(record)) for record in order[:k]]


def _lifted(hit: Hit, score: float, period: float | None) -> Hit:
    """The hit with its new score; where its own score was the fused one (no ranker re-ordered), that
    stays readable as `scores.fused`."""
    parts = {"period": period}
    if hit.scores.fused is None and hit.scores.ranker is None:
        parts["fused"] = hit.score
    return hit.model_copy(update={"score": score, "scores": hit.scores.model_copy(update=parts)})
