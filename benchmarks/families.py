"""The families beyond LoCoMo, each with every search mode: LongMemEval_S (long chats, one haystack a
question) and SciFact (documents in archival memory). Records go in and searches come out through
`Memory`, as a user's app would do it; the default search uses the ranker the package ships. It was
fitted on other questions of both families (`benchmarks/ranker_data.py`: LongMemEval_S questions after
the ones run here, SciFact folds 1-4), so what `make bench` runs is held out for it; a full run
includes those dev questions (`benchmarks/results/transfer.md` reports them held out by group).
`--unseen` runs the LongMemEval_S questions of this file that neither `make bench` reports nor the
ranker was fitted on (SciFact has none left: its five folds are all one or the other), a larger
held-out check than `make bench`'s sample.

    python -m benchmarks.families [--full | --quick | --unseen] [--longmemeval PATH] [--scifact DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks import longmemeval, quality, ranker_data, scifact
from benchmarks.datasets import Query, Task
from benchmarks.harness import MeasuredEmbedder
from memvec.embed import DEFAULT_MODEL_NAME, Embedder, load_embedder, qualified_model_id
from memvec.search.when import period_in

MODES: dict[str, dict[str, Any]] = {
    "default": {"mode": "hybrid"},
    "fusion alone": {"mode": "hybrid", "rerank": False},
    # the default spreads the first 5 hits over sessions when the question asks for a count or a total
    "sessions always spread": {"mode": "hybrid", "spread_sessions": True},
    "sessions never spread": {"mode": "hybrid", "spread_sessions": False},
    "no date boost": {"mode": "hybrid", "boost_dates_in_query": False},  # a period in the question ignored
    "bm25": {"mode": "bm25"},
    "vector": {"mode": "vector"},
    "token": {"mode": "token"},
}
Summary = Callable[[Sequence[tuple[Sequence[str], Query]]], dict[str, float]]


@dataclass(frozen=True)
class Family:
    name: str
    k: int  # hits asked per search (SciFact's recall@100 needs 100)
    summarize: Summary
    headline: tuple[str, ...]  # the metrics the README's table quotes
    subset: str  # which part `make bench` runs, in words


LONGMEMEVAL = Family(
    "LongMemEval_S",
    10,
    longmemeval.summarize,
    ("recall@1", "ndcg@10", "recall@10", "session_any@5", "session_all@5"),
    f"the first {longmemeval.PER_TYPE_DEFAULT} answerable questions of each type",
)
SCIFACT = Family(
    "SciFact",
    100,
    scifact.summarize,
    ("ndcg@10", "recall@100", "mrr@10"),
    f"the training claims of fold 0 of {scifact.FOLDS} (claim id mod {scifact.FOLDS}), whole corpus",
)


def run(
    family: Family, tasks: list[Task], embedder: Embedder, modes: dict[str, dict[str, Any]] = MODES
) -> dict[str, Any]:
    """Every mode over every task: {"scores": {mode: {"overall", "by_category"}}, "n_docs", "n_queries"}."""
    rows: dict[str, list[tuple[list[str], Query]]] = defaultdict(list)
    for task in tasks:
        for mode, lists in quality.ranked_keys(task, embedder, modes, family.k).items():
            rows[mode] += list(zip(lists, task.queries, strict=True))
    return {
        "scores": {mode: score(family.summarize, found) for mode, found in rows.items()},
        "n_docs": sum(len(t.docs) for t in tasks),
        "n_queries": sum(len(t.queries) for t in tasks),
        "cut_records": sum(int(t.meta.get("cut", 0)) for t in tasks),
    }


NAMES_A_PERIOD = "(any type) names a period"


def score(summarize: Summary, rows: list[tuple[list[str], Query]]) -> dict[str, Any]:
    """Overall and by question type or fold; the questions whose text names a period (resolved
    against when each was asked) are a group of their own besides their type."""
    by_category: dict[str, list[tuple[list[str], Query]]] = defaultdict(list)
    for ranked, query in rows:
        by_category[query.category].append((ranked, query))
        if period_in(query.text, query.asked_at or datetime.now(UTC)):
            by_category[NAMES_A_PERIOD].append((ranked, query))
    return {"overall": summarize(rows), "by_category": {c: summarize(v) for c, v in sorted(by_category.items())}}


UNSEEN = (
    f"the answerable questions after the first {longmemeval.PER_TYPE_DEFAULT + ranker_data.PER_TYPE_DEV} "
    "of each type: neither in `make bench` nor fitted on"
)


def family_tasks(longmemeval_path: Path, scifact_path: Path, size: str) -> dict[str, tuple[Family, list[Task]]]:
    """`size`: "quick" (a smoke run), "default" (what `make bench` runs), "full" or "unseen" (UNSEEN)."""
    if size == "unseen":
        unseen = ranker_data.longmemeval_unseen(longmemeval.load(longmemeval_path))
        return {LONGMEMEVAL.name: (LONGMEMEVAL, [longmemeval.task(q) for q in unseen])}
    questions = longmemeval.subset(
        longmemeval.load(longmemeval_path), None if size == "full" else longmemeval.PER_TYPE_DEFAULT
    )
    documents = scifact.task(scifact_path, None if size == "full" else {0})
    if size == "quick":
        questions = [longmemeval.smaller(q) for q in questions[:1]]
        documents = scifact.smaller(documents, queries=12, docs=120)
    return {
        LONGMEMEVAL.name: (LONGMEMEVAL, [longmemeval.task(q) for q in questions]),
        SCIFACT.name: (SCIFACT, [documents]),
    }


def run_all(
    longmemeval_path: Path,
    scifact_path: Path,
    size: str,
    embedder: Embedder,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    out = {}
    for name, (family, tasks) in family_tasks(longmemeval_path, scifact_path, size).items():
        progress(f"quality: {name}")
        started = time.perf_counter()
        out[name] = {
            **run(family, tasks, embedder),
            "k": family.k,
            "headline": list(family.headline),
            "subset": {"full": "all", "unseen": UNSEEN}.get(size, family.subset),
            "seconds": time.perf_counter() - started,
        }
    return out


def markdown(results: dict[str, Any]) -> list[str]:
    """A section per family: every mode on its headline metrics, then per question type or fold."""
    out = []
    for name, found in results.items():
        scores, headline = found["scores"], found["headline"]
        out += [
            f"## {name}",
            "",
            f"{found['n_queries']} questions over {found['n_docs']:,} records ({found['subset']}; k={found['k']}, "
            f"{found['seconds']:.0f}s); "
            + (
                "includes the shipped ranker's dev questions (transfer.md has them held out)."
                if found["subset"] == "all"
                else "held out for the shipped ranker (fitted on LoCoMo and other questions of this family)."
            )
            + (f" {found['cut_records']} records cut at the record limit." if found.get("cut_records") else ""),
            "",
            "| mode | " + " | ".join(headline) + " |",
            "|---" * (len(headline) + 1) + "|",
        ]
        out += [
            f"| {mode} | " + " | ".join(f"{s['overall'][m]:.3f}" for m in headline) + " |" for mode, s in scores.items()
        ]
        first = headline[0]
        categories = list(scores["default"]["by_category"])
        out += [
            "",
            f"{first} by question type or fold (n):",
            "",
            "| group | n | " + " | ".join(scores) + " |",
            "|---|---" + "|---" * len(scores) + "|",
        ]
        out += [
            f"| {c} | {scores['default']['by_category'][c]['n']} | "
            + " | ".join(f"{s['by_category'][c][first]:.3f}" for s in scores.values())
            + " |"
            for c in categories
        ]
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.families", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="a smoke run (one question on part of its haystack, 12 claims)"
    )
    size.add_argument("--full", action="store_true", help="every question and claim (long)")
    size.add_argument("--unseen", action="store_true", help="LongMemEval_S questions nothing was chosen on (~20 min)")
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    parser.add_argument("--scifact", type=Path, default=scifact.DEFAULT_PATH)
    parser.add_argument("--model", default=qualified_model_id(DEFAULT_MODEL_NAME, None))
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    size_name = "quick" if args.quick else "full" if args.full else "unseen" if args.unseen else "default"
    try:
        results = run_all(
            args.longmemeval,
            args.scifact,
            size_name,
            MeasuredEmbedder(load_embedder(args.model)),
            lambda text: print(text, file=sys.stderr),
        )
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"families-{size_name}.json").write_text(json.dumps(results, indent=1))
    (args.out / f"families-{size_name}.md").write_text("\n".join(markdown(results)))
    print(f"report: {args.out / f'families-{size_name}.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
