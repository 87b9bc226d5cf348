"""Search modes over one (agent, tier): ``hybrid``, ``vector``, ``bm25`` and the ``token`` baseline.

Hybrid over-fetches candidates from FAISS and from BM25, takes the UNION, scores every member
with both methods (the vector score is read back from the index, the BM25 score from the query's
sparse scores), and fuses: a document that only one method found can still win.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from memvec.config import SearchSettings
from memvec.index.lexical import QueryScores, top_k
from memvec.index.tokenize import plain_tokens
from memvec.search.fuse import convex, rrf
from memvec.search.parts import SearchableTier
from memvec.search.rerank import Candidates, Matrix, Ranker, candidate_context, feature_matrix
from memvec.search.spread import spread_sessions, spreads
from memvec.types import Fusion, MethodScores, SearchMode, SearchRequest

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]
# fusion alone ranks LoCoMo best with the session means at this weight (benchmarks/results/ablation.md)
FUSION_SESSION_WEIGHT = 1.0


@dataclass(frozen=True)
class Ranked:
    """Ranked ids with their fused score and raw per-method scores (parallel arrays)."""

    ids: Ids
    score: npt.NDArray[np.float32]
    vector: npt.NDArray[np.float32] | None = None
    bm25: npt.NDArray[np.float32] | None = None
    token: npt.NDArray[np.float32] | None = None
    fused: npt.NDArray[np.float32] | None = None
    ranker: npt.NDArray[np.float32] | None = None
    session_vector: npt.NDArray[np.float32] | None = None
    session_bm25: npt.NDArray[np.float32] | None = None
    period: npt.NDArray[np.float32] | None = None  # NaN where a row has no such part
    coverage: npt.NDArray[np.float32] | None = None
    known: float = 1.0  # the share of the query's BM25 ceiling from words some record holds (relevance reads it)

    def method_scores(self) -> list[MethodScores]:
        """Each row's score parts: those it has (not NaN), read as Python floats once per column."""
        columns = [(name, arr.tolist()) for name in SCORE_PARTS if (arr := getattr(self, name)) is not None]
        return [
            MethodScores(**{name: value for name, values in columns if (value := values[row]) == value})
            for row in range(len(self.ids))
        ]


SCORE_PARTS = ("vector", "bm25", "token", "fused", "ranker", "session_vector", "session_bm25", "period", "coverage")


def needs_query_vector(request: SearchRequest) -> bool:
    return request.mode in (SearchMode.VECTOR, SearchMode.HYBRID)


@dataclass(frozen=True)
class Scope:
    """Which records a search may return: only `allowed` ids when set (a filter), never `excluded`
    ones (versions that are no longer current)."""

    allowed: Ids | None = None
    excluded: Ids | None = None


EVERYTHING = Scope()


def rank(
    index: SearchableTier,
    request: SearchRequest,
    settings: SearchSettings,
    scope: Scope = EVERYTHING,
    query_vector: npt.NDArray[np.float32] | None = None,
    ranker: Ranker | None = None,
    *,
    lexical: QueryScores | None = None,
    score_tail: bool = True,
) -> Ranked:
    """`query_vector` (the query embedded by the index's model) may be computed beforehand, so that
    the forward pass runs outside the index lock; it is embedded here when needed and not given.
    `lexical`: the query's BM25 scores over this index as it stands, when already computed.
    With a `ranker`, hybrid search re-orders its best fused candidates with it; `score_tail` False:
    the hits past its depth (in fusion's order either way) get no ranker score, for a caller that
    reads only their places."""
    if request.mode is SearchMode.TOKEN:
        return _token(index, request)
    lexical = index.lexical.query_scores(request.query) if lexical is None else lexical
    if request.mode is SearchMode.BM25:
        ids, scores = index.lexical.search_scored(lexical, request.k, scope.allowed, scope.excluded)
        return Ranked(ids, scores, bm25=scores, coverage=coverage(scores, lexical), known=known(lexical))
    if query_vector is None:
        query_vector = index.embedder.embed_query(request.query)
    if request.mode is SearchMode.VECTOR:
        ranked = _vector(index, request.k, settings, scope, query_vector)
        shares = coverage(index.lexical.scores_for(lexical, ranked.ids), lexical)
        return replace(ranked, coverage=shares, known=known(lexical))
    return _hybrid(index, request, settings, scope, query_vector, ranker, lexical, score_tail)


def coverage(bm25: Scores, lexical: QueryScores) -> Scores:
    """Each BM25 score over the query's ceiling: how much of the query a record covers, weighted by
    each word's rarity, on a 0-1 scale that no other record moves (0 for a query without words)."""
    return (bm25 / lexical.ceiling if lexical.ceiling > 0 else np.zeros_like(bm25)).astype(np.float32)


def known(lexical: QueryScores) -> float:
    """The share of the query's ceiling from words the index holds (0 for a query without words)."""
    return 1.0 - lexical.unseen / lexical.ceiling if lexical.ceiling > 0 else 0.0


def _vector(
    index: SearchableTier, k: int, settings: SearchSettings, scope: Scope, query_vector: npt.NDArray[np.float32]
) -> Ranked:
    """Vector search over the same pool for any k up to candidate_pool (ties, say between repeated
    texts, then break by id alike); on a compact index the pool's candidates are ranked again by
    their exact vectors from the store, so quantization costs next to no recall."""
    pool = max(k, settings.candidate_pool)
    if index.vector.quantizer is None:
        ids, scores = index.vector.search(query_vector, pool, scope.allowed, scope.excluded)
        ids, scores = top_k(ids, scores, k)
        return Ranked(ids, scores, vector=scores)
    candidates, _ = index.vector.search(query_vector, pool * settings.refine_factor, scope.allowed, scope.excluded)
    ids, scores = top_k(candidates, index.exact_vectors(candidates) @ query_vector, k)
    return Ranked(ids, scores, vector=scores)


@dataclass(frozen=True)
class _Fused:
    """Every hybrid candidate (the union) with its scores, in the union's id order."""

    union: Ids
    vector: Scores
    bm25: Scores
    fused: Scores
    session_vector: Scores
    session_bm25: Scores
    lexical: QueryScores
    sessions: Ids  # each one's session row (-1: none)
    ranker: Ranker | None  # the ranker that will re-order them (None: fusion alone ranks)
    model: str = ""  # which of its trees: the kind of record the candidates are (Ranker.model_for)


def _hybrid(
    index: SearchableTier,
    request: SearchRequest,
    settings: SearchSettings,
    scope: Scope,
    query_vector: npt.NDArray[np.float32],
    ranker: Ranker | None = None,
    lexical: QueryScores | None = None,
    score_tail: bool = True,
) -> Ranked:
    found = _fuse(index, request, settings, scope, query_vector, ranker, lexical)
    order = np.lexsort((found.union, -found.fused))
    spread = settings.session_spread if spreads(request.spread_sessions, request.query) else 0.0
    if found.ranker is not None:
        top = order[: max(found.ranker.depth, request.k)]
        return _rerank(index, request, found, top, found.ranker, query_vector, spread, score_tail)
    order = _first_k(index, found.union, order, found.fused, spread, request.k)
    return Ranked(
        found.union[order],
        np.minimum.accumulate(found.fused[order]) if spread and len(order) else found.fused[order],
        vector=found.vector[order],
        bm25=found.bm25[order],
        session_vector=_shown_session(found.session_vector[order], found.sessions[order]),
        session_bm25=_shown_session(found.session_bm25[order], found.sessions[order]),
        coverage=coverage(found.bm25[order], found.lexical),
        known=known(found.lexical),
    )


def _shown_session(scores: Scores, rows: Ids) -> Scores:
    """A session part only for hits in a session: a record without one is its own session, so its part
    would repeat its own score as if it were another (NaN: no such part)."""
    return np.where(rows >= 0, scores, np.float32(np.nan)).astype(np.float32)


def _session_weight(request: SearchRequest, settings: SearchSettings, ranker: Ranker | None) -> float:
    """The request's, else the settings', else the one the ranker was fitted with (when it will
    re-order: its features read the fused scores), else FUSION_SESSION_WEIGHT."""
    for weight in (request.session_weight, settings.session_weight, ranker.session_weight if ranker else None):
        if weight is not None:
            return weight
    return FUSION_SESSION_WEIGHT


def _fuse(
    index: SearchableTier,
    request: SearchRequest,
    settings: SearchSettings,
    scope: Scope,
    query_vector: npt.NDArray[np.float32],
    ranker: Ranker | None = None,
    lexical: QueryScores | None = None,
) -> _Fused:
    # One pool for every k up to candidate_pool: fusion scales scores over the pool, so a pool that
    # grew with k would change the order of the top hits (SciFact's top 10 differed at k=10 and k=100).
    depth = max(request.k, settings.candidate_pool)
    vector_ids, _ = index.vector.search(query_vector, depth, scope.allowed, scope.excluded)
    lexical = index.lexical.query_scores(request.query) if lexical is None else lexical
    bm25_ids, _ = index.lexical.search_scored(lexical, depth, scope.allowed, scope.excluded)
    union = np.union1d(vector_ids, bm25_ids).astype(np.int64)
    vector = index.vector.vectors_for(union) @ query_vector
    bm25 = index.lexical.scores_for(lexical, union)
    sessions = index.sessions.rows_for(union)
    session_vector, session_bm25 = _session_scores(index, sessions, vector, bm25, query_vector, lexical)
    # A query sharing no word with any candidate is outside what the ranker was fitted on (every
    # LoCoMo question shares some): its text features would re-order what only the vector can judge,
    # so it ranks by fusion alone, fused as fusion alone fuses. So do candidates unlike the ones it
    # was fitted on (documents without sessions, turns much longer than the fitted ones).
    matched = bool(len(union)) and bm25.max() > 0
    model = ranker.model_for(_context(index, union, sessions), request.tier.value) if ranker and matched else None
    if model is None:
        ranker = None
    weight = _session_weight(request, settings, ranker)
    with_vector, with_bm25 = (
        (vector + weight * session_vector, bm25 + weight * session_bm25) if weight > 0 else (vector, bm25)
    )
    if (request.fusion or settings.fusion) is Fusion.RRF:
        fused = rrf(
            with_vector,
            with_bm25,
            settings.rrf_k,
            in_vector=np.isin(union, vector_ids),
            in_bm25=np.isin(union, bm25_ids) & _matched(bm25),
        )
    else:
        vector_weight = settings.vector_weight if request.vector_weight is None else request.vector_weight
        fused = convex(with_vector, with_bm25, vector_weight)
    return _Fused(union, vector, bm25, fused, session_vector, session_bm25, lexical, sessions, ranker, model or "")


def _context(index: SearchableTier, union: Ids, sessions: Ids) -> dict[str, float]:
    """What kind of records the candidates are (rerank.CONTEXT): read only where a ranker may apply."""
    return candidate_context(index.lexical.lengths_for(union), sessions)


def _matched(bm25: Scores) -> npt.NDArray[np.bool_]:
    """The records BM25 found: a score of at least 1% of the best one. Below that a record matches
    only words that nearly every record has (their IDF is ~0), which says nothing about it; such
    records, often a large tied block, must not take BM25's next ranks in RRF."""
    return bm25 > 0.01 * float(bm25.max(initial=0.0))


def _session_scores(
    index: SearchableTier, rows: Ids, vector: Scores, bm25: Scores, query_vector: Scores, lexical: QueryScores
) -> tuple[Scores, Scores]:
    """Each candidate's session mean scores (memvec.index.sessions), given their session `rows`; a
    record without a session is its own session. Hits still report their own scores; the fused
    score adds the session's."""
    sessions = index.sessions
    if len(sessions) == 0 or len(rows) == 0:
        return vector, bm25
    vector_means = sessions.vector_means(query_vector, rows)
    bm25_means = sessions.score_means(lexical.groups, lexical.scores, rows)
    return sessions.spread(rows, vector_means, vector), sessions.spread(rows, bm25_means, bm25)


def candidate_table(
    index: SearchableTier,
    request: SearchRequest,
    settings: SearchSettings,
    scope: Scope,
    query_vector: npt.NDArray[np.float32],
    depth: int,
    ranker: Ranker | None = None,
) -> tuple[Ids, Matrix, dict[str, float]]:
    """The best `depth` fused candidates, their ranker features (what the ranker is fitted on) and
    the candidate set's context (what its support is made of), fused as a search with `ranker` fuses them."""
    found = _fuse(index, request, settings, scope, query_vector, ranker)
    ids, features = _featured(index, request, found, np.lexsort((found.union, -found.fused))[:depth], query_vector)
    return ids, features, _context(index, found.union, found.sessions)


def _rerank(
    index: SearchableTier,
    request: SearchRequest,
    found: _Fused,
    top: Ids,
    ranker: Ranker,
    query_vector: Scores,
    spread: float = 0.0,
    score_tail: bool = True,
) -> Ranked:
    """The ranker re-orders the best `ranker.depth` fused candidates, whatever k is asked (so the top
    hits do not depend on k: their features are read among those candidates only); hits past that
    depth follow in fusion's order, scored by the ranker only with `score_tail` (else NaN). A hit's
    score is the ranker's, capped at the score of the hit above it, so scores never rise down the
    list. `spread`: the first hits spread over sessions."""
    head = min(ranker.depth, len(top))
    ids, features = _featured(index, request, found, top if score_tail else top[:head], query_vector, head)
    learned = ranker.score(features, found.model)
    if len(ids) < len(top):
        ids, learned = found.union[top], np.concatenate([learned, np.full(len(top) - head, np.nan, dtype=np.float32)])
    order = np.concatenate([np.lexsort((ids[:head], -learned[:head])), np.arange(head, len(ids))])
    order = _first_k(index, ids, order, learned, spread, request.k, pool=head)
    shown = np.fmin.accumulate(learned[order]) if len(order) else learned[order]
    return Ranked(
        ids[order],
        shown,
        vector=found.vector[top][order],
        bm25=found.bm25[top][order],
        fused=found.fused[top][order],
        ranker=learned[order],
        session_vector=_shown_session(found.session_vector[top][order], found.sessions[top][order]),
        session_bm25=_shown_session(found.session_bm25[top][order], found.sessions[top][order]),
        coverage=coverage(found.bm25[top][order], found.lexical),
        known=known(found.lexical),
    )


def _first_k(
    index: SearchableTier, ids: Ids, order: Ids, scores: Scores, spread: float, k: int, pool: int | None = None
) -> Ids:
    """The first k positions of `order` (into `ids` and `scores`), the first hits spread over
    sessions when `spread` is set, picked among the first `pool` of `order` (all: None). The
    ranker's pool is its depth: past it scores are not comparable, and a k that reaches past it
    must not change the first hits."""
    if spread:
        picked = spread_sessions(order[:pool], scores, index.sessions.rows_for(ids), spread)
        order = np.r_[picked, order[len(picked) :]]
    return order[:k]


def _featured(
    index: SearchableTier,
    request: SearchRequest,
    found: _Fused,
    top: Ids,
    query_vector: Scores,
    head: int | None = None,
) -> tuple[Ids, Matrix]:
    """The chosen candidates' ids and ranker features (the same for a search and for fitting), their
    facts looked up once: the first `head` rows read among those candidates only, the rest (the
    tail's own scores) among every candidate shown; `head` None: every row among all of them."""
    candidates, previous = _candidates(index, found, top, query_vector)
    count = len(candidates.ids)
    both = index.facts.of(np.concatenate([candidates.ids, previous]))  # one lookup for both
    facts, before = both.first(count), both.after(count)
    if head is None or head >= len(candidates.ids):
        return candidates.ids, feature_matrix(request.query, candidates, facts, before)
    first = feature_matrix(request.query, candidates.first(head), facts.first(head), before.first(head))
    whole = feature_matrix(request.query, candidates, facts, before)
    return candidates.ids, np.vstack([first, whole[head:]])


def _candidates(index: SearchableTier, found: _Fused, top: Ids, query_vector: Scores) -> tuple[Candidates, Ids]:
    """The chosen candidates with their neighbours' scores: the records just before and after each
    in the same session (ids in between belong to other sessions or tiers); and the id of the
    record before each in its session (-1: none)."""
    ids, rows = found.union[top], found.sessions[top]
    before, after, neighbour_bm25, previous = _neighbours(index, found.lexical, ids, rows, query_vector)
    return Candidates(
        ids=ids,
        vector=found.vector[top],
        bm25=found.bm25[top],
        fused=found.fused[top],
        session_vector=found.session_vector[top],
        session_bm25=found.session_bm25[top],
        neighbour_vector=(before, after),
        neighbour_bm25=neighbour_bm25,
        sessions=rows,
    ), previous


def _neighbours(
    index: SearchableTier, lexical: QueryScores, ids: Ids, rows: Ids, query_vector: Scores
) -> tuple[Scores, Scores, Scores, Ids]:
    """The vector scores of the records before and after each of `ids` in its session (0: none),
    the better of their BM25 scores, and the id of the one before (-1: none)."""
    count = len(ids)
    if not (rows >= 0).any():  # no sessions (documents, notes): no neighbours to look up
        return np.zeros(count, np.float32), np.zeros(count, np.float32), np.zeros(count, np.float32), np.full(count, -1)
    near = np.concatenate([ids - 1, ids + 1])  # the records before, then after
    twice = np.concatenate([rows, rows])
    same = (twice >= 0) & (index.sessions.rows_for(near) == twice)
    near_vector = np.zeros(len(near), dtype=np.float32)
    near_vector[same] = index.vector.vectors_for(near[same]) @ query_vector  # held ids only: one C++ batch
    near_bm25 = np.where(same, index.lexical.scores_for(lexical, near), 0.0)
    neighbour_bm25 = np.maximum(near_bm25[:count], near_bm25[count:]).astype(np.float32)
    return near_vector[:count], near_vector[count:], neighbour_bm25, np.where(same[:count], near[:count], -1)


def _token(index: SearchableTier, request: SearchRequest) -> Ranked:
    """The naive baseline: how many distinct lowercase words a record shares with the query.
    It reads the texts from the store with the filters applied there, so it needs no id set."""
    query = plain_tokens(request.query)
    texts = index.texts(request.filters)
    rows = [(rid, len(query & plain_tokens(text))) for rid, text in texts]
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    counts = np.array([r[1] for r in rows], dtype=np.float32)
    keep = counts > 0
    ids, counts = top_k(ids[keep], counts[keep], request.k)
    return Ranked(ids, counts, token=counts)
