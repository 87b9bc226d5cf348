"""How much headroom is left on LoCoMo? Upper bounds for the hybrid scorer, per tier.

For every question one hybrid search with k=1000 returns every record with its raw vector and BM25
scores (`Hit.scores`). From those, without touching the engine again:

- the *ceiling*: questions with at least one record citing an evidence turn (a question whose
  evidence has no record can never be answered; on the archival tier many have no fact);
- R@10/20/50 of the default ranking (its own k=10 search for R@10, so the default is exact);
- an *oracle* fusion weight: per question, the best of 21 convex weights (0, 0.05, ..., 1). No
  setting of the fusion stage can beat it, so it bounds what tuning the weight can reach;
- fusion variants computed from the same raw scores (without the session-level score, z-score,
  theoretical minimum as in Bruch et al. 2022);
- the misses split by where their best evidence record ranks and whether it shares any BM25 term
  with the question.

`python -m benchmarks.headroom [--locomo PATH] [--out DIR]` (run by `make bench-headroom`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import numpy.typing as npt

from benchmarks import datasets
from benchmarks.harness import MeasuredEmbedder, load_task
from benchmarks.tables import markdown_table
from memvec import Memory, SearchRequest
from memvec.embed import load_embedder
from memvec.search.fuse import min_max

Array = npt.NDArray[np.float64]
WEIGHTS = np.linspace(0.0, 1.0, 21)
DEPTHS = (10, 20, 50)


@dataclass
class Scored:
    """One question: every record's key, session and raw scores, plus the default top 10."""

    keys: list[str]
    sessions: npt.NDArray[np.str_]
    vector: Array
    bm25: Array
    evidence: set[str]
    default_tops: dict[int, list[str]]  # k -> keys of a default search with that k


def _search(mem: Memory, agent: str, tier: str, query: str, k: int) -> list[Any]:
    request = SearchRequest.model_validate({"agent": agent, "tier": tier, "query": query, "k": k})
    return mem.search(request)


def score_task(task: datasets.Task, embedder: MeasuredEmbedder) -> list[Scored]:
    agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)
    with tempfile.TemporaryDirectory() as tmp:
        mem = load_task(Path(tmp), embedder, task, agent)
        try:
            return [_scored(mem, agent, task.tier, query) for query in task.queries]
        finally:
            mem.close()


def _scored(mem: Memory, agent: str, tier: str, query: datasets.Query) -> Scored:
    hits = _search(mem, agent, tier, query.text, 1000)
    tops = {k: [h.citation.turn_id or "" for h in _search(mem, agent, tier, query.text, k)] for k in DEPTHS}
    return Scored(
        keys=[h.citation.turn_id or "" for h in hits],
        sessions=np.array([h.citation.session_id or "" for h in hits]),
        vector=np.array([h.scores.vector or 0.0 for h in hits]),
        bm25=np.array([h.scores.bm25 or 0.0 for h in hits]),
        evidence=query.evidence,
        default_tops=tops,
    )


def first_hit(keys: list[str], order: npt.NDArray[np.int64], evidence: set[str]) -> int | None:
    """0-based rank of the first evidence key in `order`, or None. Ranks count distinct keys, as in
    `benchmarks.metrics` (several facts citing one turn are one answer)."""
    seen: set[str] = set()
    for row in order.tolist():
        if keys[row] in evidence:
            return len(seen)
        seen.add(keys[row])
    return None


def ranked_by(scores: Array) -> npt.NDArray[np.int64]:
    return np.argsort(-scores, kind="stable")


def scaled(values: Array) -> Array:
    """The engine's own min-max scaling (float32 there), back in float64."""
    return min_max(values.astype(np.float32)).astype(np.float64)


def convex(q: Scored, weight: float) -> Array:
    return weight * scaled(q.vector) + (1 - weight) * scaled(q.bm25)


def zscore(values: Array) -> Array:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 1e-12 else np.zeros_like(values)


def zscore_fusion(q: Scored) -> Array:
    return 0.5 * zscore(q.vector) + 0.5 * zscore(q.bm25)


def theoretical_min(q: Scored) -> Array:
    """Bruch et al.'s TM2C2: scale by the observed maximum from the scorer's lowest possible value
    (-1 for cosine, 0 for BM25) instead of from the observed minimum."""
    bm25_top = q.bm25.max() if q.bm25.max() > 0 else 1.0
    fused: npt.NDArray[np.float64] = 0.5 * (q.vector + 1) / (q.vector.max() + 1) + 0.5 * q.bm25 / bm25_top
    return fused


def with_sessions(q: Scored, weight: float = 1.0) -> Scored:
    """Each record's scores plus `weight` times the mean scores of its session, as the engine's hybrid
    search does (memvec.index.sessions); a record without a session is its own session."""
    alone = q.sessions == ""
    vector, bm25 = q.vector.copy(), q.bm25.copy()
    vector[alone] += weight * q.vector[alone]
    bm25[alone] += weight * q.bm25[alone]
    for session in np.unique(q.sessions[q.sessions != ""]):
        rows = q.sessions == session
        vector[rows] += weight * q.vector[rows].mean()
        bm25[rows] += weight * q.bm25[rows].mean()
    return Scored(q.keys, q.sessions, vector, bm25, q.evidence, q.default_tops)


OVER_ALL = "default: own + session scores, min-max w=0.5, over all records"
VARIANTS: dict[str, Callable[[Scored], Array]] = {
    OVER_ALL: lambda q: convex(with_sessions(q), 0.5),
    "own scores only (no session-level score)": lambda q: convex(q, 0.5),
    "z-score, w=0.5 (with session scores)": lambda q: zscore_fusion(with_sessions(q)),
    "theoretical minimum (TM2C2), w=0.5 (with session scores)": lambda q: theoretical_min(with_sessions(q)),
}


def recall_at(questions: list[Scored], rank_of: Callable[[Scored], int | None], k: int) -> float:
    return float(np.mean([(r := rank_of(q)) is not None and r < k for q in questions]))


def oracle_rank(q: Scored) -> int | None:
    """The best rank any of the fusion weights gives (on the default scores, session included)."""
    q = with_sessions(q)
    ranks = [first_hit(q.keys, ranked_by(convex(q, w)), q.evidence) for w in WEIGHTS]
    found = [r for r in ranks if r is not None]
    return min(found) if found else None


def variant_rank(fuse: Callable[[Scored], Array]) -> Callable[[Scored], int | None]:
    return lambda q: first_hit(q.keys, ranked_by(fuse(q)), q.evidence)


def summarize(questions: list[Scored]) -> dict[str, Any]:
    return {
        "questions": len(questions),
        "ceiling": float(np.mean([bool(q.evidence & set(q.keys)) for q in questions])),
        **{
            f"default R@{k}": float(np.mean([bool(q.evidence & set(q.default_tops[k])) for q in questions]))
            for k in DEPTHS
        },
        "oracle weight R@10": recall_at(questions, oracle_rank, 10),
        "oracle weight R@20": recall_at(questions, oracle_rank, 20),
        "variants R@10": {name: recall_at(questions, variant_rank(fn), 10) for name, fn in VARIANTS.items()},
        "misses": miss_buckets(questions, [variant_rank(VARIANTS[OVER_ALL])(q) for q in questions]),
    }


def miss_buckets(questions: list[Scored], default: list[int | None]) -> dict[str, int]:
    """Answerable questions outside the top 10 of the fused order over all records, by the rank of
    their best evidence record."""
    buckets = {"rank 11-20": 0, "rank 21-50": 0, "rank > 50": 0, "no BM25 term shared": 0}
    for q, rank in zip(questions, default, strict=True):
        if rank is None or rank < 10:
            continue
        buckets["rank 11-20" if rank < 20 else "rank 21-50" if rank < 50 else "rank > 50"] += 1
        evidence_rows = [i for i, key in enumerate(q.keys) if key in q.evidence]
        buckets["no BM25 term shared"] += all(q.bm25[i] <= 0 for i in evidence_rows)
    return buckets


def markdown(results: dict[str, dict[str, Any]], seconds: float) -> str:
    lines = [
        "# Headroom on LoCoMo (dev conversations, default settings)",
        "",
        f"{seconds:.0f}s. Computed from the raw per-method scores that `Memory.search` returns with every hit "
        "(see the module docstring of `benchmarks/headroom.py`). The oracle picks the best of 21 fusion "
        "weights per question, which no real setting can do: it bounds what fusion tuning can reach.",
        "",
    ]
    tiers = list(results)
    keys = [
        "questions",
        "ceiling",
        "default R@10",
        "default R@20",
        "default R@50",
        "oracle weight R@10",
        "oracle weight R@20",
    ]
    lines += [markdown_table(["", *tiers], [[k, *(results[t][k] for t in tiers)] for k in keys]), ""]
    variants = list(results[tiers[0]]["variants R@10"])
    lines += [
        "## Fusion variants from the same scores (R@10)",
        "",
        markdown_table(["variant", *tiers], [[v, *(results[t]["variants R@10"][v] for t in tiers)] for v in variants]),
        "",
        "## Misses (answerable, not in the top 10 of the min-max fusion over all records)",
        "",
    ]
    buckets = list(results[tiers[0]]["misses"])
    lines += [markdown_table(["", *tiers], [[b, *(results[t]["misses"][b] for t in tiers)] for b in buckets])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.headroom", description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO)
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="embedding model (default: packaged MiniLM)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    logging.getLogger("memvec").setLevel(logging.ERROR)
    samples = datasets.load_locomo(args.locomo)
    embedder = MeasuredEmbedder(load_embedder(args.model), cache_documents=True)
    started = time.perf_counter()
    tiers = {"recall tier": datasets.locomo_recall_task, "archival tier": datasets.locomo_archival_task}
    results = {
        name: summarize([q for s in samples for q in score_task(make(s), embedder)]) for name, make in tiers.items()
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "headroom" if args.model == "all-MiniLM-L6-v2" else "headroom-" + re.sub(r"[^A-Za-z0-9]+", "-", args.model)
    (args.out / f"{stem}.json").write_text(json.dumps({"model": args.model, **results}, indent=1))
    (args.out / f"{stem}.md").write_text(markdown(results, time.perf_counter() - started))
    print(f"headroom: {args.out / stem}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
