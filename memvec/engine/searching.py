"""A search over one tier: the period its query names lifted (memvec.search.period), both rankings
against one state of the index, the ranker's trees where they apply, only the first k read from
the store. Functions of the `Engine` (its store, indexes, settings and ranker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from memvec.engine.partition_index import PartitionIndex
from memvec.errors import InvalidInputError
from memvec.search.hits import to_hits
from memvec.search.hybrid import Ranked, Scope, candidate_table, needs_query_vector, rank
from memvec.search.per_document import best_per_document, widened
from memvec.search.period import boost_period, with_period
from memvec.search.rerank import Matrix, Ranker
from memvec.search.when import dated, narrowed_to
from memvec.telemetry.metrics import SEARCH_SECONDS, timed
from memvec.telemetry.tracing import span
from memvec.types import Hit, SearchMode, SearchRequest

if TYPE_CHECKING:
    from memvec.engine.engine import Engine


def search(engine: Engine, request: SearchRequest) -> list[Hit]:
    """The request's hits: ranked once, or twice and merged when its query names a period that
    divides the records it may see; those below its `min_score` dropped."""
    if request.min_score is None:
        return _search(engine, request)
    if engine.calibration is None:
        raise InvalidInputError(
            f"min_score: no relevance calibration for the model {engine.embedder.model_id!r} "
            "(memvec.search.relevance); search without it, or use a model memvec ships one for"
        )
    return [hit for hit in _search(engine, request) if (hit.relevance or 0.0) >= request.min_score]


def _search(engine: Engine, request: SearchRequest) -> list[Hit]:
    if request.per_document:
        return best_per_document(_search(engine, widened(request)), request.k)
    if request.reference_time is None:  # relative time words ("yesterday") read against the store's clock
        request = request.model_copy(update={"reference_time": engine.store.clock()})
    narrowed = dated(request)  # the period a time expression in the query names, when asked
    if narrowed is None:
        return []
    period = boost_period(narrowed)
    inside = None if period is None else narrowed_to(narrowed, period)
    if inside is None or not _divides(engine, narrowed, inside):
        index, (ranked,) = _rank(engine, narrowed)
        return to_hits(index, ranked, engine.calibration)
    return _with_period(engine, narrowed, inside)


def _divides(engine: Engine, request: SearchRequest, inside: SearchRequest) -> bool:
    """Whether the period holds some of the records the request may see but not all (by the span
    of their times): over none its ranking is empty, over all it is the plain one, and either way
    lifting it would change no hit's place."""
    span = engine.store.time_span(request.agent, request.tier)
    start, end = inside.filters.start, inside.filters.end
    if span is None or start is None or end is None or start > span[1] or end < span[0]:
        return False
    given = request.filters
    return start > max(span[0], given.start or span[0]) or end < min(span[1], given.end or span[1])


def _with_period(engine: Engine, request: SearchRequest, inside: SearchRequest) -> list[Hit]:
    """Both rankings at the candidate pool's depth (so the top k is the same whatever k up to it);
    only the merged first k are read from the store."""
    depth = {"k": max(request.k, engine.search_settings.candidate_pool)}
    index, (everything, in_period) = _rank(engine, request.model_copy(update=depth), inside.model_copy(update=depth))
    return to_hits(
        index, with_period(everything, in_period, request.k, engine.search_settings.rrf_k), engine.calibration
    )


def _rank(engine: Engine, request: SearchRequest, *also: SearchRequest) -> tuple[PartitionIndex, list[Ranked]]:
    """The request ranked, and `also` (the same query and tier, other filters: a hybrid search's
    period) against the same state of the index: the query embedded once, before taking the
    index lock (concurrent searches of one tier then share a forward pass), its BM25 scores
    computed once. Rankings that are to be merged read only places past the ranker's depth, so
    those hits get no ranker score."""
    labels = (request.tier.value, request.mode.value)
    with (
        span("memvec.search", **{"memvec.tier": labels[0], "memvec.mode": labels[1], "memvec.k": request.k}),
        timed(SEARCH_SECONDS, *labels, "total"),
    ):
        engine.sweep(request.agent, request.tier)
        index = engine.tier_index(request.agent, request.tier)
        requests = (request, *also)
        scopes = [_scope(engine, r, index) if r.mode is not SearchMode.TOKEN else Scope() for r in requests]
        query_vector = None
        if needs_query_vector(request):
            with span("memvec.search.embed"), timed(SEARCH_SECONDS, *labels, "embed"):
                query_vector = index.embedder.embed_query(request.query)
        with index.lock, span("memvec.search.rank"), timed(SEARCH_SECONDS, *labels, "rank"):
            lexical = index.lexical.query_scores(request.query) if also else None
            ranked = [
                rank(
                    index,
                    r,
                    engine.search_settings,
                    scope,
                    query_vector,
                    _ranker_for(engine, r),
                    lexical=lexical,
                    score_tail=not also,
                )
                for r, scope in zip(requests, scopes, strict=True)
            ]
        return index, ranked


def _ranker_for(engine: Engine, request: SearchRequest) -> Ranker | None:
    fusion = (request.fusion or engine.search_settings.fusion).value
    if (
        request.rerank is False
        or engine.ranker is None
        or not engine.ranker.applies_to(engine.embedder.model_id, fusion)
    ):
        return None
    return engine.ranker


def candidate_features(
    engine: Engine, request: SearchRequest, depth: int
) -> tuple[npt.NDArray[np.int64], Matrix, dict[str, float]]:
    """The best `depth` fused candidates of a hybrid search, their ranker features and the
    candidate set's context, computed exactly as a search computes them (`make train-ranker`
    fits the ranker and its support on these)."""
    index = engine.tier_index(request.agent, request.tier)
    scope = _scope(engine, request, index)
    query_vector = index.embedder.embed_query(request.query)
    with index.lock:
        return candidate_table(
            index, request, engine.search_settings, scope, query_vector, depth, _ranker_for(engine, request)
        )


def _scope(engine: Engine, request: SearchRequest, index: PartitionIndex) -> Scope:
    """The ids the request's filters allow, the versions valid now (or `as_of`) among them; with no
    filter, every id but the versions no longer current."""
    if request.filters.is_empty():
        closed = engine.closed_ids(index)
        return Scope(excluded=closed if len(closed) else None)
    return Scope(allowed=engine.store.filter_ids(request.agent, request.tier, request.filters))
