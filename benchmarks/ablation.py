"""Ablation of the retrieval-quality levers on LoCoMo, each alone and together, per dev conversation
and overall: first the first stage's levers (fusion alone; their settings were chosen on conversations
1, 3, 5 and confirmed on 2, 4), then the learned ranker on top of all of them and without each of its
feature groups, every ranker number from a conversation it was not fitted on (leave one out).

`python -m benchmarks.ablation [--locomo PATH] [--out DIR]` (run by `make bench-ablation`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tqdm import tqdm

from benchmarks import datasets, quality, ranker_data, train_ranker
from benchmarks.harness import MeasuredEmbedder
from benchmarks.tables import markdown_table
from memvec.embed import Embedder, load_embedder

NONE = {"context_weight": 0.0, "index_dates": False, "vector_context": False, "bm25_k1": 1.2, "bm25_b": 0.75}
NO_SESSION = {"session_weight": 0.0}
LEVERS: dict[str, dict[str, Any]] = {
    "baseline (no lever; BM25 k1=1.2 b=0.75)": {"index": NONE, "search": NO_SESSION},
    "+ dates in BM25": {"index": {**NONE, "index_dates": True}, "search": NO_SESSION},
    "+ context in BM25 (weight 0.3)": {"index": {**NONE, "context_weight": 0.3}, "search": NO_SESSION},
    "+ context in the vector": {"index": {**NONE, "vector_context": True}, "search": NO_SESSION},
    "+ session-level score (weight 1.0)": {"index": NONE},
    "all but the session-level score, BM25 k1=0.9 b=0.4": {"search": NO_SESSION},
    "all, BM25 k1=1.2 b=0.75": {"index": {"bm25_k1": 1.2, "bm25_b": 0.75}},
    "all, BM25 k1=0.9 b=0.4 (default)": {},
    "all, session weight 0.5": {"search": {"session_weight": 0.5}},
    "all, session weight 1.5": {"search": {"session_weight": 1.5}},
    "all, BM25 context weight 0.5": {"index": {"context_weight": 0.5}},
    "all, vector weight 0.3": {"search": {"vector_weight": 0.3}},
    "all, vector weight 0.7": {"search": {"vector_weight": 0.7}},
    "all, RRF fusion": {"search": {"fusion": "rrf"}},
    "all, a pool of 50 candidates": {"search": {"candidate_pool": 50}},
}
# the first stage's levers: fusion without the learned ranker (its own report: make train-ranker)
MODES: dict[str, dict[str, Any]] = {
    "hybrid": {"mode": "hybrid", "rerank": False},
    "bm25": {"mode": "bm25"},
    "vector": {"mode": "vector"},
}


def measure(
    samples: list[dict[str, Any]], make: Any, embedder: MeasuredEmbedder, settings: dict[str, Any]
) -> dict[str, Any]:
    """{"all" or a conversation: {mode: scores}} for one setting of the first stage."""
    out: dict[str, Any] = {}
    rows_all: quality.Rows = {}
    for sample in samples:
        rows = quality.run_task(make(sample), embedder, MODES, **settings)
        out[sample["sample_id"]] = quality.score(rows)
        rows_all = quality.merge([rows_all, rows])
    out["all"] = quality.score(rows_all)
    return out


# the default session weight (2.0) was chosen with the ranker: these rows show its neighbours
RANKED_SESSION_WEIGHTS = (1.0, 3.0)


def ranker_rows(samples: list[dict[str, Any]], embedder: Embedder) -> dict[str, dict[str, Any]]:
    """{tier: {variant: {"all" or a held-out conversation: summary}}}: the ranker over all the
    first-stage levers (defaults), without each of its feature groups (train_ranker.ablation), and
    over other session weights."""
    result = train_ranker.ablation(ranker_data.dev_questions(samples, embedder))
    for weight in RANKED_SESSION_WEIGHTS:
        questions = ranker_data.dev_questions(samples, embedder, search={"session_weight": weight})
        result[f"all features, session weight {weight}"] = train_ranker.held_out(questions)
    return {
        tier: {f"all levers + ranker, {variant}": by_tier[key] for variant, by_tier in result.items()}
        for tier, key in (("LoCoMo recall tier", "recall"), ("LoCoMo archival tier", "archival"))
    }


def markdown(results: dict[str, Any], ranked: dict[str, Any], conversations: list[str], seconds: float) -> str:
    lines = [
        "# Retrieval-quality ablation (LoCoMo dev conversations)",
        "",
        f"Each lever alone and together, through `Memory.search`; {seconds:.0f}s. The first-stage rows rank "
        "by fusion alone (nothing fitted; their settings were chosen on conversations 1, 3, 5 and confirmed on "
        "2, 4). The ranker rows re-order the default first stage's best 50 candidates, each conversation with "
        "a ranker fitted on the other four (leave one conversation out). Only recall messages get an automatic "
        "context (the previous message of their session), so the context rows equal the baseline on the "
        "archival tier. Fusion alone uses session weight 1.0 (the best for it); the ranker is fitted over, and "
        "searches with, weight 2.0: among 0.5, 1, 2, 3 and 5 the best mean of R@10 and MRR@10 over both tiers "
        "on conversations 1, 3, 5 (ranked held out), confirmed on 2, 4; the ranker rows at 1.0 and 3.0 show "
        "its neighbours. Columns: R@10 per conversation, then R@1, R@10 and MRR@10 over all questions.",
        "",
    ]
    for tier, by_lever in results.items():
        header = [
            "setting",
            *(f"R@10 {c}" for c in conversations),
            "R@1 all",
            "R@10 all",
            "MRR@10 all",
            "BM25 R@10 all",
            "vector R@10 all",
        ]
        rows = [
            [
                lever,
                *(r[c]["hybrid"]["overall"]["recall@10"] for c in conversations),
                *(r["all"]["hybrid"]["overall"][m] for m in ("recall@1", "recall@10", "mrr@10")),
                r["all"]["bm25"]["overall"]["recall@10"],
                r["all"]["vector"]["overall"]["recall@10"],
            ]
            for lever, r in by_lever.items()
        ]
        rows += [
            [
                variant,
                *(r[c]["recall@10"] for c in conversations),
                *(r["all"][m] for m in ("recall@1", "recall@10", "mrr@10")),
                "",
                "",
            ]
            for variant, r in ranked[tier].items()
        ]
        lines += [f"## {tier}", "", markdown_table(header, rows), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation", description=__doc__)
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    logging.getLogger("memvec").setLevel(logging.ERROR)
    samples = datasets.load_locomo(args.locomo)
    embedder = MeasuredEmbedder(load_embedder(), cache_documents=True)
    tiers = {"LoCoMo recall tier": datasets.locomo_recall_task, "LoCoMo archival tier": datasets.locomo_archival_task}
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {tier: {} for tier in tiers}
    with tqdm(total=len(tiers) * len(LEVERS), file=sys.stderr) as bar:
        for tier, make in tiers.items():
            for lever, settings in LEVERS.items():
                bar.set_description(f"{tier}: {lever}")
                results[tier][lever] = measure(samples, make, embedder, settings)
                bar.update(1)
    # without the document cache: int8 vectors depend a little on their batch, so the cached ones from the
    # levers above would differ from what `make train-ranker` and `make bench` rank
    ranked = ranker_rows(samples, embedder.inner)
    conversations = [s["sample_id"] for s in samples]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ablation.json").write_text(json.dumps({"first_stage": results, "ranker": ranked}, indent=1))
    (args.out / "ablation.md").write_text(markdown(results, ranked, conversations, time.perf_counter() - started))
    print(f"ablation: {args.out / 'ablation.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
