"""`make train-ranker`: fit the learned ranker on the LoCoMo dev conversations and report it
leave-one-conversation-out (every number is from a conversation the model was not fitted on).

For each conversation and tier (recall: the turns; archival: the observation facts) every question
is searched, and the best `DEPTH` fused candidates are kept with their features, computed by the
engine exactly as a search computes them; a candidate is relevant when it cites the question's
evidence. The model is an L2-regularized logistic regression fitted by Newton's method from zeros
(deterministic: the same data give the same file). The shipped file is fitted on all dev
conversations; the report compares the held-out rankings with plain fusion.

    python -m benchmarks.train_ranker [--locomo PATH] [--out memvec/search/ranker.json]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.datasets import DEFAULT_LOCOMO, Task, load_locomo, locomo_archival_task, locomo_recall_task
from benchmarks.harness import load_task
from benchmarks.metrics import summarize
from memvec import SearchRequest
from memvec.embed import load_embedder
from memvec.search.rerank import FEATURES, Ranker, TierModel

DEPTH = 50
L2 = 1.0  # 0.1, 1 and 10 rank the same held out
TIERS = ("recall", "archival")
RANKER_VERSION = 1
DEFAULT_MODEL = "onnx-int8:all-MiniLM-L6-v2"
ROOT = Path(__file__).resolve().parents[1]
Matrix = npt.NDArray[np.float64]


@dataclass
class Question:
    conversation: str
    tier: str
    features: Matrix
    keys: list[str]  # each candidate's citation key, best fused first
    evidence: set[str]


def questions_of(task: Task, conversation: str, embedder: Any) -> list[Question]:
    agent = re.sub(r"[^A-Za-z0-9_.-]", "-", task.name)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        mem = load_task(Path(tmp), embedder, task, agent)
        try:
            for query in task.queries:
                request = SearchRequest.model_validate({"agent": agent, "tier": task.tier, "query": query.text})
                ids, features = mem.engine.candidate_features(request, DEPTH)
                by_id = {r.id: r.citation.turn_id or "" for r in mem.store.get(agent, ids.tolist())}
                out.append(Question(conversation, task.tier, features, [by_id.get(int(i), "") for i in ids],
                                    query.evidence))
        finally:
            mem.close()
    return out


def labels(questions: list[Question]) -> tuple[Matrix, Matrix]:
    x = np.vstack([q.features for q in questions])
    y = np.concatenate([[1.0 if key in q.evidence else 0.0 for key in q.keys] for q in questions])
    return x, y


def fit_tier(questions: list[Question]) -> TierModel:
    """Logistic regression on the standardized features, Newton steps from zero weights."""
    x, y = labels(questions)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.column_stack([(x - mean) / scale, np.ones(len(x))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], L2)
    penalty[-1] = 0.0  # the bias is not shrunk
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return TierModel(mean=mean, scale=scale, weights=w[:-1], bias=float(w[-1]))


def fit(questions: list[Question], models: tuple[str, ...]) -> Ranker:
    """One model per tier, each fitted on that tier's questions."""
    tiers = {tier: fit_tier([q for q in questions if q.tier == tier]) for tier in TIERS}
    return Ranker(version=RANKER_VERSION, features=FEATURES, models=models, tiers=tiers, depth=DEPTH)


def ranked_keys(question: Question, ranker: Ranker | None) -> list[str]:
    if ranker is None:
        return question.keys
    scores = ranker.score(question.features, question.tier)
    return [question.keys[i] for i in np.argsort(-scores, kind="stable")]


def evaluate(questions: list[Question], ranker: Ranker | None) -> dict[str, float]:
    rows = [(ranked_keys(q, ranker), q.evidence) for q in questions if q.evidence]
    return summarize(rows, ks=(1, 3, 5, 10))


def leave_one_out(questions: list[Question], models: tuple[str, ...]) -> dict[str, Any]:
    conversations = sorted({q.conversation for q in questions})
    held_out: dict[str, list[Question]] = {}
    per_conversation = {}
    rerankers = {}
    for name in conversations:
        rerankers[name] = fit([q for q in questions if q.conversation != name], models)
        held_out[name] = [q for q in questions if q.conversation == name]
        per_conversation[name] = {tier: {"fusion": evaluate([q for q in held_out[name] if q.tier == tier], None),
                                         "ranker": evaluate([q for q in held_out[name] if q.tier == tier],
                                                            rerankers[name])}
                                  for tier in ("recall", "archival")}
    overall = {}
    for tier in ("recall", "archival"):
        fused = [q for q in questions if q.tier == tier]
        overall[tier] = {"fusion": evaluate(fused, None),
                         "ranker": summarize([(ranked_keys(q, rerankers[q.conversation]), q.evidence)
                                              for q in fused if q.evidence], ks=(1, 3, 5, 10))}
    return {"overall": overall, "per_conversation": per_conversation}


def report_markdown(result: dict[str, Any], ranker: Ranker) -> str:
    lines = ["# Learned ranker (leave-one-conversation-out on the LoCoMo dev conversations)", "",
             f"Logistic regression per tier over {len(ranker.features)} features of the best {ranker.depth} fused "
             f"candidates (L2 {L2:g}); each conversation ranked by a model fitted on "
             "the other four. Written by `make train-ranker`.", "",
             "| tier | ranking | R@1 | R@3 | R@5 | R@10 | MRR@10 | questions |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for tier, by_method in result["overall"].items():
        for method, m in by_method.items():
            lines.append(f"| {tier} | {method} | {m['recall@1']:.3f} | {m['recall@3']:.3f} | {m['recall@5']:.3f} | "
                         f"{m['recall@10']:.3f} | {m['mrr@10']:.3f} | {m['n']} |")
    lines += ["", "Per held-out conversation (R@1 / R@10 / MRR@10, fusion -> ranker):", "",
              "| conversation | recall tier | archival tier |", "| --- | --- | --- |"]
    for name, tiers in result["per_conversation"].items():
        cells = []
        for tier in ("recall", "archival"):
            f, r = tiers[tier]["fusion"], tiers[tier]["ranker"]
            cells.append(f"{f['recall@1']:.3f}/{f['recall@10']:.3f}/{f['mrr@10']:.3f} -> "
                         f"{r['recall@1']:.3f}/{r['recall@10']:.3f}/{r['mrr@10']:.3f}")
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    lines += ["", "Weights of the shipped models (all five conversations, standardized features):", "",
              "| feature | recall | archival |", "| --- | --- | --- |"]
    lines += [f"| {name} | {ranker.tiers['recall'].weights[n]:+.3f} | {ranker.tiers['archival'].weights[n]:+.3f} |"
              for n, name in enumerate(ranker.features)]
    return "\n".join(lines) + "\n"


def dev_questions(samples: list[dict[str, Any]], embedder: Any) -> list[Question]:
    questions = []
    for sample in samples:
        for make in (locomo_recall_task, locomo_archival_task):
            questions += questions_of(make(sample), sample["sample_id"], embedder)
    return questions


def fold_rankers(samples: list[dict[str, Any]], embedder: Any) -> dict[str, Ranker]:
    """For each conversation, a ranker fitted on all the others (what `make bench` ranks it with)."""
    questions = dev_questions(samples, embedder)
    models = (embedder.model_id,)
    return {name: fit([q for q in questions if q.conversation != name], models)
            for name in sorted({q.conversation for q in questions})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", type=Path, default=ROOT / "memvec" / "search" / "ranker.json")
    parser.add_argument("--report", type=Path, default=ROOT / "benchmarks" / "results" / "ranker")
    args = parser.parse_args(argv)
    embedder = load_embedder(args.model)
    questions = dev_questions(load_locomo(args.locomo), embedder)
    models = (embedder.model_id,)
    result = leave_one_out(questions, models)
    ranker = fit(questions, models)
    args.out.write_text(json.dumps(ranker.to_json(), indent=1) + "\n")
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    args.report.with_suffix(".md").write_text(report_markdown(result, ranker))
    print(report_markdown(result, ranker))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
