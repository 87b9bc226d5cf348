"""The questions the learned ranker is fitted and judged on: for each, the best `DEPTH` fused
candidates with their features, computed by the engine exactly as a search computes them, and the
evidence among them.

Three families, each with the group it is held out by: LoCoMo (both tiers; a conversation),
LongMemEval_S dev questions (the recall tier; a fold of questions, none of those `make bench` reports)
and SciFact (documents in the archival tier; a fold of training claims). Building the homes is most
of the time, so each family's questions are cached under `indexes/cache/ranker/`, keyed by the model,
the features, the first stage's settings and the data files (size and time): the same inputs give
the same file, and `make train-ranker` stays reproducible.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import longmemeval, scifact
from benchmarks.datasets import Task, load_locomo, locomo_archival_task, locomo_recall_task
from benchmarks.harness import load_task
from memvec import SearchRequest
from memvec.search.rerank import FEATURES

Matrix = npt.NDArray[np.float64]
DEPTH = 50
# The first stage's session weight the rankers are fitted over (and search then uses with them): among
# 0.5, 1, 2, 3 and 5 the best mean of R@10 and MRR@10 over both tiers on conversations 1, 3, 5, ranked
# held out, and confirmed on 2, 4 (benchmarks/results/ablation.md); fusion alone is best at 1.0.
SESSION_WEIGHT = 2.0
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "indexes" / "cache" / "ranker"
CACHE_VERSION = 1
# LongMemEval_S dev questions a type: the ones after those `make bench` reports, which stay held out.
PER_TYPE_DEV = 5
LONGMEMEVAL_FOLDS = 5
# SciFact's folds of training claims the shipped documents model is fitted on: fold 0 is `make bench`'s.
SCIFACT_DEV_FOLDS = frozenset({1, 2, 3, 4})
LONGMEMEVAL_GROUP, SCIFACT_GROUP = "LongMemEval_S fold", "SciFact fold"  # and the fold's number


@dataclass
class Question:
    conversation: str  # the group it is held out by (a LoCoMo conversation, a fold)
    tier: str  # the model that ranks it: "recall", "archival" or "documents" (archival without sessions)
    features: Matrix
    keys: list[str]  # each candidate's citation key, best fused first
    evidence: set[str]
    context: dict[str, float]  # what kind of records the candidates are (rerank.CONTEXT)


def questions_of(task: Task, conversation: str, embedder: Any, search: dict[str, Any] | None = None) -> list[Question]:
    """Every question's candidates and features, one a query in order; `search`: settings other than the defaults."""
    agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        # the candidates come from fusion alone: the shipped ranker (perhaps stale, or being replaced) is not read
        mem = load_task(
            Path(tmp),
            embedder,
            task,
            agent,
            search={"session_weight": SESSION_WEIGHT, **(search or {}), "rerank": False},
        )
        try:
            for query in task.queries:
                request = SearchRequest.model_validate({"agent": agent, "tier": task.tier, "query": query.text})
                ids, features, context = mem._engine.candidate_features(request, DEPTH)
                by_id = {r.id: r.citation.turn_id or "" for r in mem._store.get(agent, ids.tolist())}
                out.append(
                    Question(
                        conversation, task.tier, features, [by_id.get(int(i), "") for i in ids], query.evidence, context
                    )
                )
        finally:
            mem.close()
    return out


def dev_questions(samples: list[dict[str, Any]], embedder: Any, search: dict[str, Any] | None = None) -> list[Question]:
    """LoCoMo's questions on both tiers, grouped by conversation."""
    questions = []
    for sample in samples:
        for make in (locomo_recall_task, locomo_archival_task):
            questions += questions_of(make(sample), sample["sample_id"], embedder, search)
    return questions


def save(path: Path, questions: list[Question]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = [
        {"group": q.conversation, "tier": q.tier, "keys": q.keys, "evidence": sorted(q.evidence), "context": q.context}
        for q in questions
    ]
    scratch = path.with_name(path.name + ".tmp.npz")  # renamed into place: a stopped run leaves no half file
    np.savez_compressed(scratch, *[q.features for q in questions], meta=np.array(json.dumps(meta)))
    scratch.replace(path)


def load(path: Path) -> list[Question]:
    with np.load(path) as stored:
        meta = json.loads(str(stored["meta"]))
        return [
            Question(m["group"], m["tier"], stored[f"arr_{n}"], m["keys"], set(m["evidence"]), m["context"])
            for n, m in enumerate(meta)
        ]


def cache_key(family: str, model: str, sources: Sequence[Path], extra: str = "") -> str:
    stamp = [family, model, extra, str(CACHE_VERSION), ",".join(FEATURES), str(DEPTH), str(SESSION_WEIGHT)]
    stamp += [f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sources]
    return hashlib.sha256("|".join(stamp).encode()).hexdigest()[:16]


def cached(family: str, key: str, build: Callable[[], list[Question]]) -> list[Question]:
    path = CACHE / f"{family}-{key}.npz"
    if path.exists():
        return load(path)
    questions = build()
    save(path, questions)
    return questions


def locomo_questions(path: Path, embedder: Any) -> list[Question]:
    samples = load_locomo(path)  # 1 MB; a missing file: its error names where to get it
    return cached("LoCoMo", cache_key("LoCoMo", embedder.model_id, [path]), lambda: dev_questions(samples, embedder))


def longmemeval_dev(questions: list[dict[str, Any]], per_type: int) -> list[dict[str, Any]]:
    """`per_type` answerable questions of each type after the first `longmemeval.PER_TYPE_DEFAULT`
    (those decide in `make bench`), in file order."""
    return longmemeval.subset(_after(questions, longmemeval.PER_TYPE_DEFAULT), per_type)


def longmemeval_unseen(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answerable questions after those `make bench` reports and the ranker is fitted on (the
    first PER_TYPE_DEFAULT + PER_TYPE_DEV of each type), in file order: nothing was chosen on them."""
    return _after(questions, longmemeval.PER_TYPE_DEFAULT + PER_TYPE_DEV)


def _after(questions: list[dict[str, Any]], first: int) -> list[dict[str, Any]]:
    """The answerable questions after the `first` of each type, in file order."""
    taken = {q["question_id"] for q in longmemeval.subset(questions, first)}
    return [q for q in longmemeval.subset(questions, None) if q["question_id"] not in taken]


def longmemeval_questions(path: Path, embedder: Any, per_type: int = PER_TYPE_DEV) -> list[Question]:
    def build() -> list[Question]:
        out = []
        for n, question in enumerate(longmemeval_dev(longmemeval.load(path), per_type)):
            out += questions_of(longmemeval.task(question), f"{LONGMEMEVAL_GROUP} {n % LONGMEMEVAL_FOLDS}", embedder)
        return out

    if not path.exists():
        longmemeval.load(path)  # its error names where to get the file
    return cached("LongMemEval_S", cache_key("LongMemEval_S", embedder.model_id, [path], str(per_type)), build)


def scifact_questions(folder: Path, embedder: Any) -> list[Question]:
    """Every training claim over the whole corpus, as the documents model's (fold: `scifact.fold_of`)."""
    task = scifact.task(folder, None)  # a missing file: its error names where to get the data

    def build() -> list[Question]:
        found = questions_of(task, "", embedder)
        return [
            dataclasses.replace(q, conversation=f"{SCIFACT_GROUP} {scifact.fold_of(query.qid)}", tier="documents")
            for q, query in zip(found, task.queries, strict=True)
        ]

    sources = [folder / "corpus.jsonl", folder / "queries-train.jsonl", folder / "qrels" / "train.tsv"]
    return cached("SciFact", cache_key("SciFact", embedder.model_id, sources), build)
