"""Embedding backends side by side in one run: vector agreement with torch, LoCoMo quality per tier,
throughput on real turns, and a cold `memvec search` (process start to printed hits)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import datasets, quality
from benchmarks.harness import MeasuredEmbedder
from memvec import Memory
from memvec.embed import Embedder, backend_of, load_embedder, qualified_model_id
from memvec.embed.base import embed_queries

BACKENDS = ("torch", "onnx", "onnx-int8")
DEFAULT_ONLY = {"hybrid (default)": {"mode": "hybrid", "rerank": False}}  # fusion: the ranker is fitted for one backend


def turn_texts(samples: list[dict[str, Any]]) -> list[str]:
    return [doc.text for s in samples for doc in datasets.locomo_recall_task(s).docs]


def questions(samples: list[dict[str, Any]], n: int = 32) -> list[str]:
    return [qa["question"] for s in samples for qa in s["qa"]][:n]


def batch_invariance(embedder: Embedder, texts: list[str], probes: int = 8) -> dict[str, float]:
    """The lowest cosine between a text's vector alone and its vector first in a batch with the
    other texts: for a raw batch (`embed_documents`, as ingest embeds) and for the query path
    (`embed_queries`, as `memvec search --queries` and concurrent searches embed)."""
    raw, path = [], []
    for text in texts[:probes]:
        batch = [text, *(other for other in texts if other != text)]
        raw.append(float(embedder.embed_documents([text])[0] @ embedder.embed_documents(batch)[0]))
        path.append(float(embedder.embed_query(text) @ embed_queries(embedder, batch)[0]))
    return {"batch": min(raw), "query_path": min(path), "batch_size": len(texts)}


def _agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    cosine = (vectors * reference).sum(axis=1)
    return {"mean": float(cosine.mean()), "min": float(cosine.min()), "p01": float(np.percentile(cosine, 1))}


def _locomo_quality(embedder: Embedder, samples: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for tier, make in (("recall", datasets.locomo_recall_task), ("archival", datasets.locomo_archival_task)):
        rows = quality.merge([quality.run_task(make(s), embedder, DEFAULT_ONLY) for s in samples])
        summary = quality.score(rows)["hybrid (default)"]["overall"]
        out[tier] = {"recall@10": summary["recall@10"], "mrr@10": summary["mrr@10"]}
    return out


def compare(samples: list[dict[str, Any]], name: str = "all-MiniLM-L6-v2", *, quick: bool = False) -> dict[str, Any]:
    texts = turn_texts(samples)
    result: dict[str, Any] = {"turns": len(texts), "backends": {}}
    reference: np.ndarray | None = None
    for backend in ("torch", "onnx-int8") if quick else BACKENDS:
        model_id = qualified_model_id(name, backend)
        started = time.perf_counter()
        embedder = load_embedder(model_id)
        load_seconds = time.perf_counter() - started
        started = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        row: dict[str, Any] = {
            "model_id": model_id,
            "load_seconds": load_seconds,
            "turns_per_s": len(texts) / (time.perf_counter() - started),
        }
        if reference is None:
            reference = vectors
        else:
            row["cosine_to_torch"] = _agreement(vectors, reference)
        row["batch_invariance"] = batch_invariance(embedder, questions(samples))
        row["locomo"] = _locomo_quality(MeasuredEmbedder(embedder), samples)
        if not quick or backend == "onnx-int8":  # quick: the default's cold start only
            row["cold_search"] = cold_search(model_id, runs=1 if quick else 3)
        result["backends"][backend] = row
    return result


def cold_search(model_id: str, runs: int = 3) -> dict[str, float]:
    """Median wall time of `memvec search` in a new process (interpreter start to printed hits) on a
    small home made with `model_id`; the ONNX export, if any, is already cached by then."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        with Memory.open(home, model=model_id, embed_backend=backend_of(model_id)) as mem:
            for text in (
                "Caroline went to the LGBTQ support group on 7 May 2023.",
                "Melanie painted a sunrise over the lake.",
            ):
                mem.archival("a").insert(text)
        return cold_search_command(home, "a", "archival", "support group", runs)


# The child reports its own peak RSS: the rusage of a child forked from this (large) process would
# count the pages it shared before exec.
_PROBE = (
    "import atexit, runpy, sys\n"
    "peak_file = sys.argv.pop(1)\n"
    "def report():\n"
    "    peak = next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]\n"
    "    open(peak_file, 'w').write(peak)\n"
    "atexit.register(report)\n"
    "sys.argv[0] = 'memvec'\n"
    "runpy.run_module('memvec', run_name='__main__')\n"
)


def cold_search_command(home: Path, agent: str, tier: str, query: str, runs: int = 3) -> dict[str, float]:
    """A new `memvec search` process: median seconds from its start to its printed hits, and its peak RSS."""
    times, peaks = [], []
    peak_file = home.parent / "peak-rss-kib"
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-c",
                _PROBE,
                str(peak_file),
                "--home",
                str(home),
                "search",
                query,
                "--agent",
                agent,
                "--tier",
                tier,
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        times.append(time.perf_counter() - started)
        peaks.append(int(peak_file.read_text()) / 1024)
    return {"seconds": statistics.median(times), "peak_rss_mib": statistics.median(peaks)}
