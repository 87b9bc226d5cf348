"""SciFact as BEIR lays it out (Thakur et al., NeurIPS 2021; Wadden et al., EMNLP 2020): the documents
a RAG app stores in archival memory. One task: every abstract a passage (text "title. abstract", the
document id as its citation), every training claim a question whose relevant abstracts the qrels
name. Scored as BEIR scores it: nDCG@10, recall@100 (the share of the relevant documents found),
MRR@10."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from benchmarks.datasets import Doc, Query, Task
from benchmarks.metrics import ndcg_at_k, reciprocal_rank_at_k, share_found_at_k

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
HELP = (
    "SciFact data not found at {path}. Pass --scifact DIR (BEIR's layout: corpus.jsonl, queries-train.jsonl, "
    "qrels/train.tsv), or get it from BEIR's scifact.zip (CC BY-NC 2.0; cite Wadden et al., EMNLP 2020)."
)
# Claims are split into folds by their id (deterministic): `make bench` runs one fold's claims over
# the whole corpus, the full run all of them; a learned stage is fitted and judged fold by fold.
FOLDS = 5


def fold_of(query_id: str) -> int:
    return int(query_id) % FOLDS if query_id.isdigit() else sum(map(ord, query_id)) % FOLDS


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def task(folder: Path, folds: set[int] | None = None) -> Task:
    """The corpus and the training claims (those of `folds` only, when given) that have judgements."""
    paths = [folder / "corpus.jsonl", folder / "queries-train.jsonl", folder / "qrels" / "train.tsv"]
    if not all(path.exists() for path in paths):
        raise FileNotFoundError(HELP.format(path=folder))
    relevant: dict[str, set[str]] = defaultdict(set)
    with paths[2].open(encoding="utf-8") as qrels:
        for row in csv.DictReader(qrels, delimiter="\t"):
            if int(row["score"]) > 0:
                relevant[row["query-id"]].add(row["corpus-id"])
    docs = [Doc(d["_id"], f"{d['title']}. {d['text']}".strip(), None) for d in _jsonl(paths[0])]
    queries = [
        Query(q["_id"], q["text"], relevant[q["_id"]], f"fold {fold_of(q['_id'])}")
        for q in _jsonl(paths[1])
        if q["_id"] in relevant and (folds is None or fold_of(q["_id"]) in folds)
    ]
    return Task("scifact", "archival", docs, queries)


def summarize(rows: Sequence[tuple[Sequence[str], Query]]) -> dict[str, float]:
    if not rows:
        return {"n": 0}
    return {
        "ndcg@10": mean(ndcg_at_k(r, q.evidence, 10) for r, q in rows),
        "recall@100": mean(share_found_at_k(r, q.evidence, 100) for r, q in rows),
        "mrr@10": mean(reciprocal_rank_at_k(r, q.evidence, 10) for r, q in rows),
        "recall@10": mean(share_found_at_k(r, q.evidence, 10) for r, q in rows),
        "n": len(rows),
    }


def smaller(full: Task, queries: int, docs: int) -> Task:
    """The first `queries` claims over their relevant abstracts and the first `docs` others: a smoke-run size."""
    kept = full.queries[:queries]
    needed = set().union(*(q.evidence for q in kept))
    chosen = [d for i, d in enumerate(full.docs) if d.key in needed or i < docs]
    return Task(full.name, full.tier, chosen, kept)
