"""Retrieval quality: recall@k / MRR per search mode, through memvec's public API."""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.datasets import Task
from benchmarks.harness import load_task
from benchmarks.metrics import summarize
from memvec import SearchRequest
from memvec.embed import Embedder
from memvec.search.rerank import Ranker

Rows = dict[str, list[tuple[list[str], set[str], str]]]

# name -> SearchRequest fields
MODES: dict[str, dict[str, Any]] = {
    "token": {"mode": "token"},
    "bm25": {"mode": "bm25"},
    "vector": {"mode": "vector"},
    # fusion alone (the first stage), then the default: fusion re-ordered by the learned ranker
    "hybrid w=0.3": {"mode": "hybrid", "fusion": "convex", "vector_weight": 0.3, "rerank": False},
    "hybrid w=0.5": {"mode": "hybrid", "fusion": "convex", "vector_weight": 0.5, "rerank": False},
    "hybrid w=0.7": {"mode": "hybrid", "fusion": "convex", "vector_weight": 0.7, "rerank": False},
    "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf", "rerank": False},
    "hybrid, no ranker": {"mode": "hybrid", "rerank": False},
    "hybrid (default)": {"mode": "hybrid"},
    # the default spreads the first hits over sessions when the question asks for a count or a total
    "hybrid, sessions always spread": {"mode": "hybrid", "spread_sessions": True},
    "hybrid, sessions never spread": {"mode": "hybrid", "spread_sessions": False},
    "hybrid, no date boost": {"mode": "hybrid", "boost_dates_in_query": False},  # a period in the question ignored
}


def run_task(
    task: Task,
    embedder: Embedder,
    modes: dict[str, dict[str, Any]] = MODES,
    k: int = 10,
    ranker: Ranker | str | None = "shipped",
    **settings: Any,
) -> Rows:
    """For each mode, (ranked keys, evidence, category) per query; `settings` go to Memory.open.
    `ranker`: the one the package ships, or another (for a conversation, one not fitted on it), or None."""
    ranked = ranked_keys(task, embedder, modes, k, ranker, **settings)
    return {
        name: [(keys, query.evidence, query.category) for keys, query in zip(lists, task.queries, strict=True)]
        for name, lists in ranked.items()
    }


def ranked_keys(
    task: Task,
    embedder: Embedder,
    modes: dict[str, dict[str, Any]],
    k: int = 10,
    ranker: Ranker | str | None = "shipped",
    **settings: Any,
) -> dict[str, list[list[str]]]:
    """For each mode, the citation keys of the top k of each query of `task`, in the queries' order."""
    agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)
    with tempfile.TemporaryDirectory() as tmp:
        mem = load_task(Path(tmp), embedder, task, agent, **settings)
        if ranker != "shipped":
            mem._engine.ranker = ranker if isinstance(ranker, Ranker) else None
        try:
            out: dict[str, list[list[str]]] = defaultdict(list)
            for query in task.queries:
                for name, fields in modes.items():
                    asked = {"reference_time": query.asked_at} if query.asked_at else {}
                    request = SearchRequest.model_validate(
                        {"agent": agent, "tier": task.tier, "query": query.text, "k": k, **asked, **fields}
                    )
                    out[name].append([h.citation.turn_id or "" for h in mem.search(request)])
            return dict(out)
        finally:
            mem.close()


def merge(runs: list[Rows]) -> Rows:
    merged: Rows = defaultdict(list)
    for run in runs:
        for mode, rows in run.items():
            merged[mode] += rows
    return dict(merged)


def score(rows_by_mode: dict[str, list[tuple[list[str], set[str], str]]]) -> dict[str, dict[str, Any]]:
    """{mode: {"overall": summary, "by_category": {category: summary}}}."""
    result: dict[str, dict[str, Any]] = {}
    for mode, rows in rows_by_mode.items():
        by_category: dict[str, list[tuple[list[str], set[str]]]] = defaultdict(list)
        for ranked, evidence, category in rows:
            by_category[category].append((ranked, evidence))
        result[mode] = {
            "overall": summarize([(r, e) for r, e, _ in rows], ks=(1, 3, 5, 10)),
            "by_category": {c: summarize(v, ks=(1, 3, 5, 10)) for c, v in sorted(by_category.items())},
        }
    return result
