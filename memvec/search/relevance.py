"""How likely a hit is to be relevant, read from the hit's own scores only.

A hit's `score` orders one result list: fusion scales it over the query's candidates, and the
ranker's is comparable only within its depth, so a top hit of a query that memory cannot answer
still scores high. `relevance` is a probability that the hit is evidence for the query, a
logistic function of what no other hit moves: its cosine similarity to the query, its BM25
coverage of the query (its BM25 score over the most any record could score for the query's
words, memvec.search.hybrid.coverage), its length, and how many of the query's words the memory
holds at all (a question asked of the wrong memory names things it never saw). The weights are
fitted per embedding model on the dev data (`make fit-relevance`: LoCoMo, LongMemEval_S and SciFact
questions, each asked of its own memory and of the other families'; benchmarks/relevance.py),
shipped in `memvec/search/relevance.json` with the default threshold for "no relevant memory"
(`min_score`): the one that kept the evidence of 98% of the dev questions whose evidence was in the
first ten, in each family. A model without fitted weights has no relevance (None), and a search
that asks for a `min_score` on it is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

RELEVANCE_FILE = "relevance.json"
RELEVANCE_FORMAT = "memvec-relevance"
RELEVANCE_VERSION = 1
# The logistic's inputs, from a hit's cosine (v), coverage (c) and indexed length in tokens (n), and
# the share of the query's words the memory holds at all (k: one value for every hit of a query); the
# file lists those it uses. Length matters because a long record shares more with any query: LongMemEval's
# turns (~100 tokens) meet other people's questions at cosines that LoCoMo's (~20) reach only for evidence.
INPUTS = {
    "vector": lambda v, c, k, n: v,
    "coverage": lambda v, c, k, n: c,
    "sqrt_coverage": lambda v, c, k, n: np.sqrt(np.maximum(c, 0.0)),
    "known": lambda v, c, k, n: k,
    "log_length": lambda v, c, k, n: np.log1p(np.maximum(n, 0.0)),
}
Scores = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Calibration:
    """A logistic model of relevance for the embedding `models` it was fitted with."""

    models: tuple[str, ...]
    inputs: tuple[str, ...]
    weights: tuple[float, ...]  # the intercept, then one per input
    min_score: float  # the default threshold: below it a hit is "no relevant memory"

    def applies_to(self, model_id: str) -> bool:
        return model_id in self.models

    def probability(
        self, vector: npt.ArrayLike, coverage: npt.ArrayLike, known: npt.ArrayLike, length: npt.ArrayLike
    ) -> Scores:
        v, c = np.asarray(vector, dtype=np.float64), np.asarray(coverage, dtype=np.float64)
        k = np.broadcast_to(np.asarray(known, dtype=np.float64), v.shape)
        n = np.broadcast_to(np.asarray(length, dtype=np.float64), v.shape)
        logit = np.full(v.shape, self.weights[0])
        for name, weight in zip(self.inputs, self.weights[1:], strict=True):
            logit += weight * INPUTS[name](v, c, k, n)
        result: Scores = 1.0 / (1.0 + np.exp(-logit))
        return result

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RELEVANCE_FORMAT,
            "version": RELEVANCE_VERSION,
            "models": list(self.models),
            "inputs": list(self.inputs),
            "weights": list(self.weights),
            "min_score": self.min_score,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        if data.get("format") != RELEVANCE_FORMAT or data.get("version") != RELEVANCE_VERSION:
            raise ValueError("not a memvec relevance file of version 1 (refit it with `make fit-relevance`)")
        inputs = tuple(data["inputs"])
        if unknown := set(inputs) - set(INPUTS):
            raise ValueError(f"relevance inputs this memvec does not know: {sorted(unknown)}")
        weights = tuple(float(w) for w in data["weights"])
        if len(weights) != len(inputs) + 1:
            raise ValueError("a relevance file needs an intercept and one weight per input")
        return cls(tuple(data["models"]), inputs, weights, float(data["min_score"]))


@lru_cache(maxsize=1)
def shipped_calibrations() -> tuple[Calibration, ...]:
    """The package's fitted calibrations (none when the file is absent: hits have no relevance)."""
    try:
        text = resources.files("memvec.search").joinpath(RELEVANCE_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return ()
    return tuple(Calibration.from_json(entry) for entry in json.loads(text)["calibrations"])


def shipped_calibration(model_id: str) -> Calibration | None:
    """The shipped calibration fitted for `model_id`, if any."""
    return next((c for c in shipped_calibrations() if c.applies_to(model_id)), None)
