"""What a new user waits for, through the CLI on real conversation turns: `memvec ingest` of every
LoCoMo turn (session ids and dates, one agent per conversation, defaults), a batch `memvec search
--queries` over every question, a cold one-query `memvec search`, and `memvec serve` under 8 clients
searching with distinct questions. Run once per embedding backend, so the ratios come from one run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks import datasets, load
from benchmarks.backends import cold_search_command


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MEMVEC_API_KEYS": ""}


def _memvec(home: Path, backend: str, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memvec", "--home", str(home), "--embed-backend", backend, *args],
        check=True,
        capture_output=True,
        env=_env(),
    )
    return time.perf_counter() - started


def _write_inputs(samples: list[dict[str, Any]], folder: Path) -> list[tuple[str, Path, Path, int, int]]:
    """Per conversation: (agent, turns JSONL, questions JSONL, turns, questions)."""
    out = []
    for sample in samples:
        task = datasets.locomo_recall_task(sample)
        agent = sample["sample_id"]
        turns, questions = folder / f"{agent}.jsonl", folder / f"{agent}-questions.jsonl"
        turns.write_text(
            "".join(
                json.dumps(
                    {
                        "text": d.text,
                        "role": d.role,
                        "session_id": d.session,
                        "turn_id": d.key,
                        "created_at": d.created_at.isoformat() if d.created_at else None,
                    }
                )
                + "\n"
                for d in task.docs
            )
        )
        questions.write_text("".join(json.dumps({"id": q.qid, "query": q.text}) + "\n" for q in task.queries))
        out.append((agent, turns, questions, len(task.docs), len(task.queries)))
    return out


def run_backend(
    samples: list[dict[str, Any]], backend: str, seconds: float = 6.0, cold_runs: int = 3
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder, home = Path(tmp), Path(tmp) / "home"
        inputs = _write_inputs(samples, folder)
        ingest = sum(
            _memvec(home, backend, "ingest", str(turns), "--agent", agent, "--tier", "recall")
            for agent, turns, _, _, _ in inputs
        )
        search = sum(
            _memvec(home, backend, "search", "--queries", str(questions), "--agent", agent, "--tier", "recall")
            for agent, _, questions, _, _ in inputs
        )
        turns, questions = sum(i[3] for i in inputs), sum(i[4] for i in inputs)
        agent = inputs[0][0]
        cold = cold_search_command(home, agent, "recall", "When did Caroline go to the support group?", cold_runs)
        served = _serve_load(home, backend, agent, datasets.locomo_recall_task(samples[0]), seconds)
    return {
        "backend": backend,
        "turns": turns,
        "questions": questions,
        "ingest_seconds": ingest,
        "ingest_records_per_s": turns / ingest,
        "batch_search_ms_per_query": search * 1000 / questions,
        "cold_search": cold,
        "serve": served,
    }


def _serve_load(home: Path, backend: str, agent: str, task: datasets.Task, seconds: float) -> list[dict[str, Any]]:
    """8 clients (and 1 and 32 for the shape) searching the conversation with distinct questions."""
    process, url = load.start_server(home, ["--embed-backend", backend])
    counter = iter(range(10**9))
    questions = [q.text for q in task.queries]

    def search(api: httpx.Client, worker: int, i: int) -> int:
        n = next(counter)  # a new text every time: "#n" keeps the query cache out of the measurement
        params: dict[str, str | int] = {"query": f"{questions[n % len(questions)]} #{n}", "top_k": 10}
        return api.get(f"/v1/agents/{agent}/recall-memory/search", params=params).status_code

    try:
        # the CLI wrote the records: the agent exists for the service as it is (records, no settings)
        return [load.run_level(url, clients, seconds, search, expected=200) for clients in (1, 8, 32)]
    finally:
        load.stop_server(process)
