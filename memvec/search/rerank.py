"""The second ranking stage: a small learned model over the hybrid candidates.

Hybrid fusion finds the evidence among its top 50 far more often than it ranks it first (LoCoMo:
R@50 0.95, R@1 0.41). The ranker re-orders those candidates from features that mean the same thing
on any data: the raw scores and their gaps to the best candidate, the session's and the
neighbouring turns' scores, whether the query names the record's speaker, its length, whether it
holds time words (for a "when" question), asks a question itself or follows one. The model is a
small ensemble of boosted trees (memvec.search.trees) per kind of record: conversation turns (the
recall tier), passages in sessions and documents without sessions (both archival), shipped in
`memvec/search/ranker.json` with its feature list, a version and the embedding models it was
fitted with (`make train-ranker` refits it); another model's ranker ships beside it as
`ranker-<model>.json` (the quality profile's). Trees rather than a linear model: held out, they
rank LoCoMo better, and their output is bounded by the leaves they learned, so a tier far from the
fitted data (two records, one speaker) cannot push a score past what was seen; a model with
pairwise products of the features did, and put an unrelated turn first on a two-record tier. A
home on any other model, a search with RRF fusion, a query sharing no word with any candidate, a
candidate set unlike the ones its trees were fitted on (their `support`: say notes a few words long
without sessions, or turns far longer than any fitted), or a package without the file ranks by
plain fusion.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memvec.index.facts import Facts
from memvec.search.compiled_trees import CompiledTrees
from memvec.search.trees import TreeEnsemble

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float64]

RANKER_FILE = "ranker.json"  # the default model's; another model's is ranker-<its name>.json
RANKER_FILES = "ranker*.json"
RANKER_FORMAT = "memvec-ranker"
RANKER_VERSION = 3  # 1: a logistic regression; 2: trees without prev_has_question
FEATURES = (
    "vector",
    "vector_gap",
    "bm25_share",
    "no_bm25",
    "fused",
    "fused_gap",
    "session_vector",
    "session_bm25_share",
    "prev_vector",
    "next_vector",
    "neighbour_bm25_share",
    "speaker_named",
    "other_speaker_named",
    "length_log",
    "session_best_vector",
    "session_best_bm25_share",
    "session_candidates_log",
    "time_words",
    "asks_time",
    "ends_question",
    "has_question",
    "prev_has_question",
)
_ASKS_TIME = re.compile(r"^\s*when\b|\bwhat (?:year|month|day|date)\b|\bhow long\b", re.IGNORECASE)


@dataclass(frozen=True)
class Candidates:
    """What hybrid search knows of its candidates (parallel arrays over the union, best fused first)."""

    ids: Ids
    vector: Scores
    bm25: Scores
    fused: Scores
    session_vector: Scores
    session_bm25: Scores
    neighbour_vector: tuple[Scores, Scores]  # previous and next record of the same session (0: none)
    neighbour_bm25: Scores  # the better of the two
    sessions: Ids  # each candidate's session row (-1: none)

    def first(self, count: int) -> Candidates:
        """The best `count` of them."""
        return Candidates(
            ids=self.ids[:count],
            vector=self.vector[:count],
            bm25=self.bm25[:count],
            fused=self.fused[:count],
            session_vector=self.session_vector[:count],
            session_bm25=self.session_bm25[:count],
            neighbour_vector=(self.neighbour_vector[0][:count], self.neighbour_vector[1][:count]),
            neighbour_bm25=self.neighbour_bm25[:count],
            sessions=self.sessions[:count],
        )


def _share(scores: Scores, best: float) -> Matrix:
    return np.asarray(scores, dtype=np.float64) / best if best > 0 else np.zeros(len(scores))


def _words(text: str) -> set[str]:
    """Letters and digits of any script: "[a-z0-9]+" split "José" into "jos", so a speaker with a
    name outside ASCII was never named."""
    return set(re.findall(r"[^\W_]+", text.casefold()))


def speakers_named(query: str, speakers: list[str | None]) -> tuple[Matrix, Matrix]:
    """(the query names this record's speaker, the query names another candidate's speaker only)."""
    folded = {role: (role or "").casefold() for role in set(speakers)}  # a few roles among the candidates
    roles = {role for role in folded.values() if role}
    named_roles = roles & _words(query) if roles else set()  # no roles: the query need not be read
    if not named_roles:
        return np.zeros(len(speakers)), np.zeros(len(speakers))
    named = np.array([folded[role] in named_roles for role in speakers], dtype=np.float64)
    return named, 1.0 - named


# up to this many candidates (the ranker's depth is 50) one n x n comparison is faster than sorting
SAME_SESSION_MATRIX_MAX = 128


def session_best(sessions: Ids, *scores: Matrix) -> tuple[list[Matrix], Matrix]:
    """For each of `scores`, the best score of another candidate in the same session (0: none), and
    how many candidates share each one's session; a candidate without a session (-1) is alone."""
    if not (sessions >= 0).any():  # every candidate alone
        return [np.zeros(len(sessions)) for _ in scores], np.ones(len(sessions))
    if len(sessions) > SAME_SESSION_MATRIX_MAX:
        return session_best_sorted(sessions, *scores)
    same = (sessions[:, None] == sessions[None, :]) & (sessions >= 0)[:, None]
    np.fill_diagonal(same, False)
    count = same.sum(axis=1) + 1.0
    if not scores:
        return [], count
    # every score at once: one (scores, n, n) pass instead of one per score
    best = np.where(same, np.stack(scores)[:, None, :], -np.inf).max(axis=2, initial=-np.inf)
    return list(np.where(count > 1, best, 0.0)), count


def session_best_sorted(sessions: Ids, *scores: Matrix) -> tuple[list[Matrix], Matrix]:
    """session_best for many candidates: sorted by session, then score (n log n, not n squared)."""
    best, count = zip(*(_best_sorted(sessions, s) for s in scores), strict=True) if scores else ((), ())
    return list(best), count[0] if count else np.ones(len(sessions))


def _best_sorted(sessions: Ids, scores: Matrix) -> tuple[Matrix, Matrix]:
    order = np.lexsort((-scores, sessions))
    ordered_sessions, ordered_scores = sessions[order], scores[order]
    starts = np.flatnonzero(np.r_[True, ordered_sessions[1:] != ordered_sessions[:-1]])
    group = np.cumsum(np.isin(np.arange(len(order)), starts)) - 1
    counts = np.diff(np.r_[starts, len(order)])
    second = np.where(counts > 1, ordered_scores[np.minimum(starts + 1, len(order) - 1)], 0.0)
    is_first = np.zeros(len(order), dtype=bool)
    is_first[starts] = True
    best, count = np.empty(len(order)), np.empty(len(order))
    best[order] = np.where(is_first, second[group], ordered_scores[starts][group])
    count[order] = counts[group]
    alone = sessions < 0
    best[alone], count[alone] = 0.0, 1.0
    return best, count


def feature_matrix(query: str, found: Candidates, facts: Facts, previous: Facts) -> Matrix:
    """One row per candidate, one column per name in FEATURES; `facts` of the candidates and of the
    records before them in their session (memvec.index.facts: none there, an empty text) come from
    the index, as it held them when the candidates were found."""
    if len(found.ids) == 0:
        return np.zeros((0, len(FEATURES)))
    best_bm25 = float(found.bm25.max(initial=0.0))
    named, other = speakers_named(query, facts.roles)
    vector, fused = found.vector.astype(np.float64), found.fused.astype(np.float64)
    columns = {
        "vector": vector,
        "vector_gap": vector - vector.max(initial=0.0),
        "bm25_share": _share(found.bm25, best_bm25),
        "no_bm25": (found.bm25 <= 0).astype(np.float64),
        "fused": fused,
        "fused_gap": fused - fused.max(initial=0.0),
        "session_vector": found.session_vector.astype(np.float64),
        "session_bm25_share": _share(found.session_bm25, best_bm25),
        "prev_vector": found.neighbour_vector[0].astype(np.float64),
        "next_vector": found.neighbour_vector[1].astype(np.float64),
        "neighbour_bm25_share": _share(found.neighbour_bm25, best_bm25),
        "speaker_named": named,
        "other_speaker_named": other,
        "length_log": np.log1p(facts.lengths.astype(np.float64)),
        "asks_time": np.full(len(found.ids), float(bool(_ASKS_TIME.search(query)))),
        "time_words": facts.time_words.astype(np.float64),
        "ends_question": facts.ends_question.astype(np.float64),
        "has_question": facts.has_question.astype(np.float64),
        # a turn that follows a question is often its answer (LoCoMo: R@1 +0.02 held out)
        "prev_has_question": previous.has_question.astype(np.float64),
    }
    (columns["session_best_vector"], columns["session_best_bm25_share"]), count = session_best(
        found.sessions, vector, columns["bm25_share"]
    )
    columns["session_candidates_log"] = np.log(count)
    return np.array([columns[name] for name in FEATURES]).T  # one copy, not one per column


def probabilities(logits: Matrix) -> Scores:
    """A sigmoid of the trees' log-odds, in float32: what search ranks by (and shows as the ranker score)."""
    result: Scores = (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
    return result


# What kind of records a search's candidates are, to tell whether the ranker was fitted on their
# like: the median indexed length (log of BM25 tokens) and the share of them that belong to a
# session. Trees fitted on LoCoMo's short turns alone re-ordered SciFact's abstracts (no sessions) and
# LongMemEval's long chat turns worse than fusion alone: trees serve only candidates like their own.
CONTEXT = ("length_log", "in_session")
# How far past the range seen in fitting a candidate set may lie and still be ranked: candidates
# half as long or twice as long as any fitted (log 2), and a fifth of them more or fewer in sessions.
CONTEXT_MARGIN = {"length_log": round(float(np.log(2.0)), 6), "in_session": 0.2}


# The trees a tier's search may use, first that fits: a file may hold trees for passages in sessions
# (LoCoMo's observations) and for standalone documents (SciFact's abstracts); they rank differently.
MODELS_FOR = {"recall": ("recall",), "archival": ("archival", "documents")}


def candidate_context(lengths: Scores, sessions: Ids) -> dict[str, float]:
    """The CONTEXT of a candidate set: `lengths` (indexed tokens) and `sessions` (rows, -1: none)."""
    if len(lengths) == 0:
        return {"length_log": 0.0, "in_session": 0.0}
    return {"length_log": log_median(lengths), "in_session": np.count_nonzero(sessions >= 0) / len(sessions)}


def log_median(lengths: Scores) -> float:
    """np.median(np.log1p(lengths)), to the bit, without its overhead (a tenth of the ranker's time):
    log1p keeps the order, so the middle values are picked first and only they are logged."""
    middle = len(lengths) // 2
    if len(lengths) % 2:
        return float(np.log1p(np.partition(lengths, middle)[middle]))
    low, high = np.log1p(np.partition(lengths, (middle - 1, middle))[middle - 1 : middle + 1])
    return float((low + high) / 2)


def context_support(contexts: list[dict[str, float]]) -> dict[str, tuple[float, float]]:
    """The range each CONTEXT statistic may take for a ranker fitted on candidate sets like these:
    what was seen, widened by CONTEXT_MARGIN."""
    support = {}
    for name in CONTEXT:
        values = [c[name] for c in contexts]
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        support[name] = (round(low - CONTEXT_MARGIN[name], 6), round(high + CONTEXT_MARGIN[name], 6))
    return support


@dataclass(frozen=True)
class Ranker:
    """One model per tier (conversation turns and distilled passages rank differently), the feature
    list and the embedding models it was fitted with."""

    version: int
    features: tuple[str, ...]
    models: tuple[str, ...]
    tiers: dict[str, TreeEnsemble]
    depth: int
    fusion: str = "convex"  # the first stage it was fitted on: its fused scores are features
    session_weight: float = 1.0  # and that stage's session weight (search uses it unless told otherwise)
    # per tier, the range of each CONTEXT statistic it ranks (absent: every candidate set)
    support: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    # the same trees compiled for ONNX Runtime (shipped beside the file); None: walked in numpy
    compiled: CompiledTrees | None = field(default=None, compare=False, repr=False)

    def applies_to(self, model_id: str, fusion: str) -> bool:
        """Fitted for this embedding model and this fusion (RRF's fused scores live on another
        scale than convex fusion's, so the trees would read them wrongly)."""
        return model_id in self.models and fusion == self.fusion and self.features == FEATURES

    def fits(self, context: dict[str, float], model: str) -> bool:
        """Whether candidates of this `context` are like those `model`'s trees were fitted on."""
        ranges = self.support.get(model, {})
        return model in self.tiers and all(low <= context[name] <= high for name, (low, high) in ranges.items())

    def model_for(self, context: dict[str, float], tier: str) -> str | None:
        """Which trees rank a `tier`'s candidates of this `context`: the tier's own, or for archival
        records without sessions the documents' (MODELS_FOR); None where none was fitted on their like."""
        return next((model for model in MODELS_FOR.get(tier, (tier,)) if self.fits(context, model)), None)

    def score(self, features: Matrix, model: str) -> Scores:
        """The probability-like score of each row (a sigmoid of the log-odds, so 0..1)."""
        if self.compiled is not None and model in self.compiled.tiers:
            return probabilities(self.compiled.raw_scores(features, model))
        return probabilities(self.tiers[model].raw_scores(features))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RANKER_FORMAT,
            "version": self.version,
            "features": list(self.features),
            "models": list(self.models),
            "depth": self.depth,
            "fusion": self.fusion,
            "session_weight": self.session_weight,
            "support": {
                tier: {name: list(bounds) for name, bounds in sorted(ranges.items())}
                for tier, ranges in sorted(self.support.items())
            },
            "tiers": {tier: model.to_json() for tier, model in sorted(self.tiers.items())},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ranker:
        if data.get("format") != RANKER_FORMAT:
            raise ValueError("not a memvec ranker file")
        if data.get("version") != RANKER_VERSION:
            raise ValueError(
                f"ranker file version {data.get('version')!r}; this memvec reads version "
                f"{RANKER_VERSION} (refit it with `make train-ranker`)"
            )
        features = tuple(data["features"])
        tiers = {tier: TreeEnsemble.from_json(m) for tier, m in data["tiers"].items()}
        if any(model.features_used > len(features) for model in tiers.values()):
            raise ValueError("a ranker tree splits on a feature the file does not list")
        support = {
            tier: {name: (float(low), float(high)) for name, (low, high) in ranges.items() if name in CONTEXT}
            for tier, ranges in data.get("support", {}).items()
        }
        return cls(
            version=int(data["version"]),
            features=features,
            models=tuple(data["models"]),
            tiers=tiers,
            depth=int(data["depth"]),
            fusion=str(data["fusion"]),
            session_weight=float(data["session_weight"]),
            support=support,
        )

    @classmethod
    def load(cls, path: Path) -> Ranker:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def shipped_rankers() -> tuple[Ranker, ...]:
    """Every ranker in the package: `ranker.json` for the default model, `ranker-<model>.json` for
    another (none when the files are absent: search ranks by fusion alone)."""
    try:
        entries = sorted(resources.files("memvec.search").iterdir(), key=lambda entry: entry.name)
    except (FileNotFoundError, OSError):
        return ()
    names = {entry.name: entry for entry in entries}
    rankers = []
    for entry in entries:
        if fnmatch(entry.name, RANKER_FILES):
            ranker = Ranker.from_json(json.loads(entry.read_text(encoding="utf-8")))
            compiled = _compiled(ranker, entry.name, names)
            rankers.append(replace(ranker, compiled=compiled) if compiled is not None else ranker)
    return tuple(rankers)


def _compiled(ranker: Ranker, ranker_file: str, names: dict[str, Traversable]) -> CompiledTrees | None:
    """The ranker's compiled trees from the package's `names`; None unless every tier has its graph."""
    graphs = {tier: names.get(compiled_name(ranker_file, tier)) for tier in ranker.tiers}
    if any(graph is None for graph in graphs.values()):
        return None
    return CompiledTrees.load({tier: graph.read_bytes() for tier, graph in graphs.items() if graph is not None})


def compiled_name(ranker_file: str, tier: str) -> str:
    """A tier's compiled trees beside a ranker file: `ranker.json`, recall -> `ranker.recall.onnx`."""
    return f"{ranker_file.removesuffix('.json')}.{tier}.onnx"


def shipped_ranker(model_id: str) -> Ranker | None:
    """The shipped ranker fitted for `model_id`, if any."""
    return next((ranker for ranker in shipped_rankers() if model_id in ranker.models), None)
