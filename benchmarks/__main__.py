"""Run the benchmark: `python -m benchmarks [--quick | --full] [--locomo PATH] [--out DIR]`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from tqdm import tqdm

from benchmarks import (
    backends,
    ceiling,
    changing,
    cli_runs,
    datasets,
    documents,
    families,
    guard,
    load,
    longmemeval,
    near_duplicates,
    observability,
    profiles,
    quality,
    relevance,
    relevance_data,
    report,
    scifact,
    speed,
    staleness,
    stores,
    streaming,
    train_ranker,
    ui_pages,
)
from benchmarks.harness import MeasuredEmbedder
from memvec.embed import DEFAULT_MODEL_NAME, load_embedder, qualified_model_id
from memvec.search.relevance import shipped_calibration

RESULTS = Path(__file__).resolve().parent / "results"


SECTIONS = ("quality", "families", "documents", "trust", "lifecycle", "speed", "ceiling", "backends", "profiles")


def _sections(value: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"sections are {', '.join(SECTIONS)}; not {', '.join(unknown) or 'none'}")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run of the harness (~1 min)")
    size.add_argument("--full", action="store_true", help="adds the 1M-record growth point (long)")
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO, help="LoCoMo JSON file")
    parser.add_argument(
        "--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH, help="LongMemEval_S questions (JSONL)"
    )
    parser.add_argument(
        "--scifact",
        type=Path,
        default=scifact.DEFAULT_PATH,
        help="SciFact in BEIR's layout (corpus.jsonl, queries-train.jsonl, qrels/train.tsv)",
    )
    parser.add_argument(
        "--model",
        default=qualified_model_id(DEFAULT_MODEL_NAME, None),
        help="embedding model id (default: the packaged MiniLM on the default backend)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="where latest.md/json and plots go")
    parser.add_argument(
        "--only",
        type=_sections,
        default=SECTIONS,
        metavar="SECTION,...",
        help=f"run these sections only (of {','.join(SECTIONS)}; default: all)",
    )
    parser.add_argument(
        "--pg",
        default=stores.DEFAULT_PG,
        metavar="URL",
        help="PostgreSQL server for the store comparison (a fresh schema is made and dropped)",
    )
    return parser.parse_args(argv)


def quality_tasks(args: argparse.Namespace) -> dict[str, list[datasets.Task]]:
    samples = datasets.load_locomo(args.locomo)
    if args.quick:
        samples = samples[:1]
    tasks = {
        "LoCoMo recall tier": [datasets.locomo_recall_task(s) for s in samples],
        "LoCoMo archival tier": [datasets.locomo_archival_task(s) for s in samples],
        "synthetic key-value": [datasets.key_value_task(200 if args.quick else 1000)],
        "synthetic paraphrase": [datasets.paraphrase_task()],
    }
    if args.quick:
        for task_list in tasks.values():
            for task in task_list:
                task.queries = task.queries[:40]
    return tasks


def run_quality(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    """LoCoMo is ranked with rankers fitted leave-one-conversation-out (each conversation by one fitted
    on the others; --quick uses the shipped one); the synthetic tasks with the shipped ranker."""
    results: dict[str, Any] = {}
    bar.set_description("quality: fitting rankers leave-one-conversation-out")
    folds = {} if args.quick else train_ranker.fold_rankers(datasets.load_locomo(args.locomo), embedder)
    for name, task_list in quality_tasks(args).items():
        bar.set_description(f"quality: {name}")
        rows = quality.merge(
            [
                quality.run_task(task, embedder, ranker=folds.get(task.name.partition("/")[2], "shipped"))
                for task in task_list
            ]
        )
        results[name] = {"scores": quality.score(rows), "curves": report.recall_curves(rows)}
        bar.update(1)
    return results


def run_families(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    """LongMemEval_S and SciFact, every mode (a deterministic subset; `make bench-full` runs all)."""
    found = families.run_all(
        args.longmemeval, args.scifact, "quick" if args.quick else "default", embedder, bar.set_description
    )
    bar.update(1)
    return found


def run_documents(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    """SciFact's abstracts as files through `add_many` beside one record each, and ingest throughput."""
    bar.set_description("documents: SciFact as files, as records")
    found = documents.run(args.scifact, "quick" if args.quick else "default", embedder.inner)
    bar.update(1)
    return found


def run_trust(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    """The poisoning check's false positives and catches; the shipped relevance threshold on the held half
    (LoCoMo conversations 2 and 4, LongMemEval_S's reported and abstention questions, SciFact fold 0)."""
    bar.set_description("trust: poisoning check and the relevance threshold")
    data = args.locomo.parents[1]
    result: dict[str, Any] = {"guard": guard.run(data, per_corpus=500 if args.quick else None), "relevance": None}
    calibration = shipped_calibration(embedder.model_id)
    if calibration is not None:
        paths = (args.locomo, args.longmemeval, args.longmemeval.with_name(relevance_data.EXTRA_FILE), args.scifact)
        held = relevance_data.half("held", *paths)
        rows = relevance_data.collect(relevance_data.quick(held) if args.quick else held, embedder, bar.set_description)
        result["relevance"] = relevance.measure(rows, calibration)
    bar.update(1)
    return result


def run_lifecycle(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    bar.set_description("lifecycle: changing facts, versioned vs append-only")
    changed = changing.run(embedder, people=5 if args.quick else len(changing.PEOPLE))
    bar.set_description("lifecycle: near-duplicate merging on LoCoMo observations")
    samples = datasets.load_locomo(args.locomo)[: 1 if args.quick else None]
    repeats = near_duplicates.run(samples, MeasuredEmbedder(embedder.inner, cache_documents=True))
    bar.update(1)
    return {"changing facts": changed, "near duplicates": repeats}


def run_speed(args: argparse.Namespace, embedder: MeasuredEmbedder, bar: tqdm) -> dict[str, Any]:
    n = 500 if args.quick else 10_000
    bar.set_description(f"speed: ingest {n:,} with the model, query latency, rebuild")
    ingest = speed.ingest_and_query(embedder.inner, n, n_queries=30 if args.quick else 200)
    ingest["context"] = speed.context_ingest(embedder.inner, 300 if args.quick else 2000)
    bar.update(1)
    sizes = [1000] if args.quick else [1000, 10_000, 100_000] + ([1_000_000] if args.full else [])
    growth = []
    for n_records in sizes:
        bar.set_description(f"scale: {n_records:,} records, flat vs hnsw")
        growth.append(speed.growth_point(n_records, n_queries=30 if args.quick else 100))
        bar.update(1)
    bar.set_description("stores: SQLite vs PostgreSQL")
    backends = stores.compare(1000 if args.quick else 10_000, n_queries=30 if args.quick else 200, pg_url=args.pg)
    backends["staleness"] = staleness.measure(args.pg, writes=20 if args.quick else 200)
    bar.update(1)
    bar.set_description("HTTP load: 1, 8, 32 clients")
    http = load.run(args.model, preload=200 if args.quick else 2000, seconds=0.5 if args.quick else 6.0)
    http["observability"] = observability.run(
        args.model,
        preload=200 if args.quick else 1000,
        seconds=0.5 if args.quick else 3.0,
        rounds=1 if args.quick else 2,
    )
    http["streaming"] = streaming.run(replies=4 if args.quick else 20)
    bar.update(1)
    bar.set_description("memory browser pages: server time at 10k records per tier")
    ui = ui_pages.run(embedder.inner, n=500 if args.quick else 10_000, repeats=5 if args.quick else 30)
    bar.update(1)
    return {"ingest": ingest, "growth": growth, "stores": backends, "http": http, "ui": ui}


def run_ceiling(args: argparse.Namespace, bar: tqdm) -> dict[str, Any] | None:
    """Served and in-process searches against one core's rate times the cores; ingest against the model."""
    bar.set_description("against the ceiling: wrk on memvec serve, ingest vs the model")
    if shutil.which("wrk") is None:  # make bench installs it; a bare `python -m benchmarks` may lack it
        print("against the ceiling: skipped, wrk is missing (apt-get install wrk)", file=sys.stderr)
        bar.update(1)
        return None
    found = ceiling.measure(args.locomo, args.longmemeval, seconds=1.0 if args.quick else 8.0, quick=args.quick)
    bar.update(1)
    return found


def run_backends(args: argparse.Namespace, bar: tqdm) -> dict[str, Any]:
    """Torch vs ONNX vs ONNX int8 in this run: agreement, LoCoMo quality, CLI on real turns."""
    samples = datasets.load_locomo(args.locomo)
    if args.quick:  # torch on 2 cores is what takes the time: a few sessions show the harness works
        samples = [datasets.first_sessions(samples[0], 2, questions=20)]
    bar.set_description("backends: vectors, LoCoMo quality, cold start")
    compared = backends.compare(samples, quick=args.quick)
    bar.update(1)
    bar.set_description("CLI on real turns: ingest, batch search, cold search, serve")
    cli = [
        cli_runs.run_backend(samples, b, seconds=1.0 if args.quick else 6.0, cold_runs=1 if args.quick else 3)
        for b in (("onnx-int8",) if args.quick else ("torch", "onnx-int8"))
    ]
    bar.update(1)
    return {"compare": compared, "cli": cli}


def run_profiles(args: argparse.Namespace, bar: tqdm) -> dict[str, Any]:
    """The default model against the quality profile's (all-mpnet-base-v2): quality and speed."""
    bar.set_description("quality profile: LoCoMo and speed per model")
    samples = datasets.load_locomo(args.locomo)
    if args.quick:  # mpnet on 2 cores is the cost: a few sessions show the harness works
        samples = [datasets.first_sessions(samples[0], 2, questions=20)]
    result = profiles.run(
        samples, n=100 if args.quick else 10_000, n_queries=20 if args.quick else 200, fitted=not args.quick
    )
    bar.update(1)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        datasets.load_locomo(args.locomo)
        longmemeval.load(args.longmemeval)
        scifact.task(args.scifact, folds=set())
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    quiet = logging.getLogger("memvec")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # index-kind switches log rebuild warnings
    try:
        return _run(args)
    finally:
        quiet.setLevel(level)  # a caller's logging (a test's caplog) is as it was


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    embedder = MeasuredEmbedder(load_embedder(args.model))
    sections: dict[str, Callable[[], dict[str, Any] | None]] = {
        "quality": lambda: run_quality(args, embedder, bar),
        "families": lambda: run_families(args, embedder, bar),
        "documents": lambda: run_documents(args, embedder, bar),
        "trust": lambda: run_trust(args, embedder, bar),
        "lifecycle": lambda: run_lifecycle(args, embedder, bar),
        "speed": lambda: run_speed(args, embedder, bar),
        "ceiling": lambda: run_ceiling(args, bar),
        "backends": lambda: run_backends(args, bar),
        "profiles": lambda: run_profiles(args, bar),
    }
    stages = {
        "quality": 4,
        "families": 1,
        "documents": 1,
        "trust": 1,
        "lifecycle": 1,
        "speed": 1 + (1 if args.quick else 3 + int(args.full)) + 3,
        "ceiling": 1,
        "backends": 2,
        "profiles": 1,
    }
    results: dict[str, Any] = {}
    section_seconds: dict[str, float] = {}
    with tqdm(total=sum(stages[name] for name in args.only), file=sys.stderr, unit="stage") as bar:
        for name, run in sections.items():
            if name not in args.only:
                continue
            section_started = time.perf_counter()
            results[name] = run()
            section_seconds[name] = round(time.perf_counter() - section_started, 1)
    results["meta"] = report.environment(embedder.inner, args)
    results["meta"]["section_seconds"] = section_seconds  # every section run, with what it took
    results["meta"]["seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(results, indent=1, default=str))
    report.plots(results, args.out)
    (args.out / "latest.md").write_text(report.markdown(results))
    print(f"report: {args.out / 'latest.md'} ({results['meta']['seconds']:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
