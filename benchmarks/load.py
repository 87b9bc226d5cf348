"""Load on the HTTP service: a real `memvec serve` on 127.0.0.1 with the real model, and 1, 8 and 32
concurrent clients searching or inserting for a fixed time each. Client and server share the
machine's cores, so these are lower bounds for a dedicated server. Every search sends a text never
sent before, so the server's query cache never answers: each one is a forward pass."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks.metrics import percentile
from benchmarks.speed import synthetic_texts

LEVELS = (1, 8, 32)
WORKERS = (1, 2)
WORKERS_START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def all_pages(api: httpx.Client, path: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every item of a cursor-paged listing (`limit`, `after`), oldest first."""
    items: list[dict[str, Any]] = []
    while page := api.get(
        path, params={**(params or {}), "limit": 1000, **({"after": items[-1]["id"]} if items else {})}
    ).json():
        items += page
    return items


def start_server(
    home: Path, options: Sequence[str], serve_options: Sequence[str] = (), *, stderr_path: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`memvec serve` on a free port with the given global and serve options; returns it once it
    answers. Its log goes to `stderr_path` (a file, as in production) or nowhere."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMVEC_API_KEYS": ""}
    with open(stderr_path or os.devnull, "ab") as log:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "memvec",
                "--home",
                str(home),
                *options,
                "serve",
                "--port",
                str(port),
                *serve_options,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, timeout=60)
    except TimeoutError:
        process.kill()
        raise
    return process, url


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path | None = None, timeout: float = 120) -> None:
    """Until `url`/v1/health answers 200; an error naming the end of `log` if the process exits first."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=1) as api:  # one client: making one per poll costs more than the poll
        while time.monotonic() < deadline:
            if process.poll() is not None:
                said = log.read_text(errors="replace")[-2000:] if log is not None else ""
                raise RuntimeError(f"{url} exited: {said}")
            try:
                if api.get(f"{url}/v1/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    raise TimeoutError(f"{url} did not become healthy")


def wait_listening(log: Path, workers: int, timeout: float = WORKERS_START_TIMEOUT_S) -> None:
    """Until every worker has said it listens (each logs it once its model is loaded)."""
    deadline = time.monotonic() + timeout
    while log.read_text(errors="replace").count("listening on") < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {workers} workers listening: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def run_level(url: str, clients: int, seconds: float, request: Any, expected: int) -> dict[str, float]:
    """`clients` threads sending `request(api, worker, i)` back to back; any status but `expected` is an error."""
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    # made before the clock starts: each parses the CA bundle (~20 ms of CPU), which 32 clients made inside
    # a short window would take from the server being measured
    apis = [httpx.Client(base_url=url, timeout=120) for _ in range(clients)]
    deadline = time.perf_counter() + seconds

    def worker(worker_id: int) -> None:
        nonlocal errors
        with apis[worker_id] as api:
            i = 0
            while i == 0 or time.perf_counter() < deadline:  # a thread started late still sends one
                started = time.perf_counter()
                ok = request(api, worker_id, i) == expected
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += 0 if ok else 1
                i += 1

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": errors,
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


class QueryTexts:
    """Search texts never sent before, over every level and mode of one run: a text that came again
    (the same client and request number at the next level) was answered by the query cache, so
    part of the later levels' searches skipped the forward pass."""

    def __init__(self) -> None:
        self._queries = [t.split(",")[0] for t in synthetic_texts(500, seed=11)]
        self._sent = itertools.count()

    def next(self, worker: int, i: int) -> str:
        return f"{self._queries[(worker * 7919 + i) % len(self._queries)]} (client {worker}, #{next(self._sent)})"


def run(model: str, preload: int = 2000, seconds: float = 6.0) -> dict[str, Any]:
    query_texts = QueryTexts()

    def search(api: httpx.Client, worker: int, i: int, **options: str) -> int:
        params: dict[str, str | int] = {"query": query_texts.next(worker, i), "top_k": 10, **options}
        return api.get("/v1/agents/load/archival-memory/search", params=params).status_code

    def fusion_alone(api: httpx.Client, worker: int, i: int) -> int:  # the baseline of the learned ranker
        return search(api, worker, i, rerank="false")

    def insert(api: httpx.Client, worker: int, i: int) -> int:
        body = {"text": f"load test note from client {worker}, number {i}, at {time.time_ns()}"}
        return api.post("/v1/agents/load/archival-memory", json=body).status_code

    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp) / "home", ["--model", model])
        try:
            with httpx.Client(base_url=url, timeout=300) as api:
                api.post("/v1/agents", json={"name": "load"})
                texts = synthetic_texts(preload, seed=3)
                for start in range(0, preload, 500):
                    api.post(
                        "/v1/agents/load/archival-memory",
                        json={"passages": [{"text": t} for t in texts[start : start + 500]]},
                    )
            results = {
                "search": [run_level(url, c, seconds, search, 200) for c in LEVELS],
                "search, fusion alone": [run_level(url, c, seconds, fusion_alone, 200) for c in LEVELS],
                "insert": [run_level(url, c, seconds, insert, 201) for c in LEVELS],
            }
        finally:
            stop_server(process)
        results["workers"] = _workers(Path(tmp) / "home", model, seconds, search)
    return {"preload": preload, "seconds_per_level": seconds, **results}


def _workers(home: Path, model: str, seconds: float, search: Any) -> list[dict[str, Any]]:
    """Searches/s at 8 and 32 clients with 1 and 2 `serve --workers` on the same home, side by side."""
    rows = []
    for workers in WORKERS:
        log = home.parent / f"serve-{workers}-workers.log"
        process, url = start_server(home, ["--model", model], ["--workers", str(workers)], stderr_path=log)
        try:
            wait_listening(log, workers)  # health answered once one worker was up
            rows += [{"workers": workers, **run_level(url, c, seconds, search, 200)} for c in (8, 32)]
        finally:
            stop_server(process)
    return rows
