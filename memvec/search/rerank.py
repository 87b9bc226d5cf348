"""The second ranking stage: a small learned model over the hybrid candidates.

Hybrid fusion finds the evidence among its top 50 far more often than it ranks it first (LoCoMo:
R@50 0.95, R@1 0.41). The ranker re-orders those candidates from features that mean the same thing
on any data: the raw scores, their gaps and ranks among the candidates, the session's and the
neighbouring turns' scores, whether the query names the record's speaker, its length. The model is
a logistic regression whose weights ship in `memvec/search/ranker.json` with its feature list, a
version and the embedding models it was fitted with, one model per tier (`make train-ranker` refits
it). Linear on purpose: a model with pairwise products of the features ranked LoCoMo a little
better held out (R@1 0.503 vs 0.476) but put an unrelated turn first on a two-record tier, far from
the data it was fitted on; a linear model extrapolates sanely. A home on any
other model, or without the file, ranks by plain fusion.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float64]

RANKER_FILE = "ranker.json"
RANKER_FORMAT = "memvec-ranker"
FEATURES = (
    "vector", "vector_gap", "vector_rank_log", "bm25_share", "bm25_rank_log", "no_bm25",
    "fused", "fused_gap", "fused_rank_log", "session_vector", "session_bm25_share",
    "prev_vector", "next_vector", "neighbour_bm25_share", "speaker_named", "other_speaker_named",
    "length_log", "session_best_vector", "session_best_bm25_share", "session_candidates_log",
)


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


def _rank_log(scores: npt.NDArray[Any]) -> Matrix:
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    ranks = np.empty(len(order), dtype=np.float64)
    ranks[order] = np.arange(1, len(order) + 1)
    result: Matrix = np.log(ranks)
    return result


def _share(scores: Scores, best: float) -> Matrix:
    return np.asarray(scores, dtype=np.float64) / best if best > 0 else np.zeros(len(scores))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def _speakers(query: str, speakers: list[str | None]) -> tuple[Matrix, Matrix]:
    """(the query names this record's speaker, the query names another candidate's speaker only)."""
    words = _words(query)
    roles = [(role or "").casefold() for role in speakers]
    named = np.array([bool(role) and role in words for role in roles], dtype=np.float64)
    others = {role for role in roles if role and role in words}
    other = np.array([bool(others) and role not in others for role in roles], dtype=np.float64)
    return named, other


def _session_best(sessions: Ids, scores: Matrix) -> tuple[Matrix, Matrix]:
    """(the best score of another candidate in the same session, how many candidates share it);
    a candidate without a session (-1) is alone. Vectorized: candidates sorted by session, then score."""
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


def feature_matrix(query: str, found: Candidates, speakers: list[str | None], lengths: Matrix) -> Matrix:
    """One row per candidate, one column per name in FEATURES; `speakers` (roles) and `lengths`
    (characters) of the candidates come from the store (a record deleted meanwhile: None, 0)."""
    best_bm25 = float(found.bm25.max(initial=0.0))
    named, other = _speakers(query, speakers)
    vector, fused = found.vector.astype(np.float64), found.fused.astype(np.float64)
    columns = {
        "vector": vector, "vector_gap": vector - vector.max(initial=0.0), "vector_rank_log": _rank_log(vector),
        "bm25_share": _share(found.bm25, best_bm25), "bm25_rank_log": _rank_log(found.bm25),
        "no_bm25": (found.bm25 <= 0).astype(np.float64), "fused": fused, "fused_gap": fused - fused.max(initial=0.0),
        "fused_rank_log": _rank_log(fused), "session_vector": found.session_vector.astype(np.float64),
        "session_bm25_share": _share(found.session_bm25, best_bm25),
        "prev_vector": found.neighbour_vector[0].astype(np.float64),
        "next_vector": found.neighbour_vector[1].astype(np.float64),
        "neighbour_bm25_share": _share(found.neighbour_bm25, best_bm25),
        "speaker_named": named, "other_speaker_named": other, "length_log": np.log1p(lengths),
    }
    columns["session_best_vector"], count = _session_best(found.sessions, vector)
    columns["session_best_bm25_share"] = _session_best(found.sessions, columns["bm25_share"])[0]
    columns["session_candidates_log"] = np.log(count)
    return np.column_stack([columns[name] for name in FEATURES]) if len(found.ids) else np.zeros((0, len(FEATURES)))


@dataclass(frozen=True)
class TierModel:
    """A logistic regression over the standardized features of one tier."""

    mean: Matrix
    scale: Matrix
    weights: Matrix
    bias: float

    def logits(self, features: Matrix) -> Matrix:
        result: Matrix = ((features - self.mean) / self.scale) @ self.weights + self.bias
        return result

    def to_json(self) -> dict[str, Any]:
        return {"bias": self.bias, "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "weights": self.weights.tolist()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TierModel:
        return cls(mean=np.array(data["mean"], dtype=np.float64), scale=np.array(data["scale"], dtype=np.float64),
                   weights=np.array(data["weights"], dtype=np.float64), bias=float(data["bias"]))


@dataclass(frozen=True)
class Ranker:
    """One model per tier (conversation turns and distilled passages rank differently), the feature
    list and the embedding models it was fitted with."""

    version: int
    features: tuple[str, ...]
    models: tuple[str, ...]
    tiers: dict[str, TierModel]
    depth: int

    def applies_to(self, model_id: str) -> bool:
        return model_id in self.models and self.features == FEATURES

    def score(self, features: Matrix, tier: str) -> Scores:
        """The probability-like score of each row (a sigmoid of the log-odds, so 0..1)."""
        logits = self.tiers[tier].logits(features)
        result: Scores = (1.0 / (1.0 + np.exp(-logits))).astype(np.float32)
        return result

    def to_json(self) -> dict[str, Any]:
        return {"format": RANKER_FORMAT, "version": self.version, "features": list(self.features),
                "models": list(self.models), "depth": self.depth,
                "tiers": {tier: model.to_json() for tier, model in sorted(self.tiers.items())}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ranker:
        if data.get("format") != RANKER_FORMAT:
            raise ValueError("not a memvec ranker file")
        return cls(version=int(data["version"]), features=tuple(data["features"]), models=tuple(data["models"]),
                   tiers={tier: TierModel.from_json(m) for tier, m in data["tiers"].items()},
                   depth=int(data["depth"]))

    @classmethod
    def load(cls, path: Path) -> Ranker:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def shipped_ranker() -> Ranker | None:
    """The ranker in the package (None when the file is absent: search ranks by fusion alone)."""
    try:
        text = resources.files("memvec.search").joinpath(RANKER_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return Ranker.from_json(json.loads(text))
