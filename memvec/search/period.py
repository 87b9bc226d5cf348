"""A time expression in the query as a ranking signal ("what did I buy two weeks ago?").

A hybrid search whose query names a period (memvec.search.when) and does not filter by it ranks twice:
over everything and over the records of that period, and the two rankings are fused by reciprocal rank
(the two lists count alike, with the settings' rrf_k). A record of the period that the first ranking
also finds rises; one that only the period's ranking finds can enter; nothing is dropped, because a
question's period is often not when its evidence was said ("the museum I visited in December",
told in January)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memvec.search.hybrid import SCORE_PARTS, Ranked, Scores
from memvec.search.when import Period, period_in
from memvec.types import SearchMode, SearchRequest


def boost_period(request: SearchRequest) -> Period | None:
    """The period a hybrid search's query names, when it is to lift that period's records."""
    if not request.boost_dates_in_query or request.dates_in_query or request.mode is not SearchMode.HYBRID:
        return None
    return period_in(request.query, request.reference_time or datetime.now(UTC))


def with_period(everything: Ranked, in_period: Ranked, k: int, rrf_k: int) -> Ranked:
    """The first k of both rankings fused by reciprocal rank. A row's score is its fused value, and
    `period` the part the period's ranking gave it; ties keep the order over everything. The
    other parts come from the ranking over everything, else the period's (NaN: neither has it)."""
    place = {int(record): n for n, record in enumerate(everything.ids)}
    inside = {int(record): n for n, record in enumerate(in_period.ids)}

    def fused(record: int) -> float:
        return sum(1.0 / (rrf_k + ranks[record] + 1) for ranks in (place, inside) if record in ranks)

    records = list(dict.fromkeys([*place, *inside]))
    order = sorted(records, key=lambda record: (-fused(record), place.get(record, len(place)), record))[:k]
    parts = {
        name: _part(name, order, (everything, place), (in_period, inside)) for name in SCORE_PARTS if name != "period"
    }
    return Ranked(
        np.array(order, dtype=np.int64),
        np.array([fused(record) for record in order], dtype=np.float32),
        **parts,
        period=np.array([1.0 / (rrf_k + inside[r] + 1) if r in inside else np.nan for r in order], dtype=np.float32),
    )


def _part(name: str, order: list[int], *sources: tuple[Ranked, dict[int, int]]) -> Scores | None:
    """One score part for the merged rows, from the first ranking that has it for the row (a ranking
    leaves the ranker's part NaN past the ranker's depth). Where a ranking's own score was the fused
    one (no ranker re-ordered), that stays readable as `fused`."""
    columns = [_column(ranked, name) for ranked, _ in sources]
    if all(column is None for column in columns):
        return None
    out = np.full(len(order), np.nan, dtype=np.float32)
    for row, record in enumerate(order):
        for column, (_, ranks) in zip(columns, sources, strict=True):
            if column is not None and record in ranks and not np.isnan(column[ranks[record]]):
                out[row] = column[ranks[record]]
                break
    return out


def _column(ranked: Ranked, name: str) -> Scores | None:
    if name == "fused" and ranked.fused is None and ranked.ranker is None:
        return ranked.score
    column: Scores | None = getattr(ranked, name)
    return column
