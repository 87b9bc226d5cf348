"""A period named in the question, as a ranking signal and as a filter (issue 35, item 6).

Every LongMemEval_S question whose text names a period ("four weeks ago", "in March", "last Friday"),
resolved against the date the question was asked, searched through `Memory` over its own haystack
with the period lifted (the default), ignored, and kept as a filter (`dates_in_query`), with and
without the learned ranker. Nothing here is fitted: the lift fuses two rankings by reciprocal rank
with the settings' rrf_k, so every such question reports, dev and held out alike. LoCoMo's questions
name absolute dates that its BM25 date field already matches: `make bench` reports its "no date
boost" row beside the default.

    python -m benchmarks.periods [--longmemeval PATH] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks import longmemeval, quality
from benchmarks.datasets import Query
from memvec.embed import load_embedder
from memvec.search.when import period_in

MODES: dict[str, dict[str, Any]] = {
    "default (period lifted)": {"mode": "hybrid"},
    "period ignored": {"mode": "hybrid", "boost_dates_in_query": False},
    "period as a filter": {"mode": "hybrid", "dates_in_query": True},
    "fusion alone, period lifted": {"mode": "hybrid", "rerank": False},
    "fusion alone, period ignored": {"mode": "hybrid", "rerank": False, "boost_dates_in_query": False},
    "bm25": {"mode": "bm25"},
}
SHOWN = ("recall@1", "ndcg@10", "recall@10", "session_any@5", "session_all@5")


def naming_a_period(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in questions if period_in(q["question"], _asked(q))]


def _asked(question: dict[str, Any]) -> datetime:
    asked = longmemeval.parse_date(question["question_date"])
    if asked is None:
        raise ValueError(f"question {question['question_id']} has no date: {question['question_date']!r}")
    return asked


def run(path: Path, progress: Any = lambda _: None) -> dict[str, Any]:
    embedder = load_embedder()
    rows: dict[str, list[tuple[list[str], Query]]] = defaultdict(list)
    picked = naming_a_period(longmemeval.load(path))
    for n, question in enumerate(picked, start=1):
        progress(f"{n}/{len(picked)} {question['question_id']}")
        task = longmemeval.task(question)
        for mode, lists in quality.ranked_keys(task, embedder, MODES, 10).items():
            rows[mode] += list(zip(lists, task.queries, strict=True))
    return {
        "questions": [{"id": q["question_id"], "type": q["question_type"], "question": q["question"]} for q in picked],
        "scores": {mode: longmemeval.summarize(found) for mode, found in rows.items()},
    }


def markdown(results: dict[str, Any]) -> list[str]:
    n = len(results["questions"])
    out = [
        "# A period named in the question (LongMemEval_S)",
        "",
        f"The {n} questions of LongMemEval_S's 150 whose text names a period, resolved against the date each",
        "was asked; each searched over its own haystack (~490 turns). Nothing is fitted to them.",
        "",
        "| mode | " + " | ".join(SHOWN) + " |",
        "|---" * (len(SHOWN) + 1) + "|",
    ]
    out += [f"| {mode} | " + " | ".join(f"{s[m]:.3f}" for m in SHOWN) + " |" for mode, s in results["scores"].items()]
    out += ["", "| question | type |", "|---|---|"]
    out += [f"| {q['question']} | {q['type']} |" for q in results["questions"]]
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.periods", description=__doc__)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    try:
        results = run(args.longmemeval, lambda text: print(text, file=sys.stderr))
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "periods.json").write_text(json.dumps(results, indent=1))
    (args.out / "periods.md").write_text("\n".join(markdown(results)))
    print(f"report: {args.out / 'periods.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
