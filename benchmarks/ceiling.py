"""Against the ceiling: what `memvec serve` and `memvec ingest` deliver beside what the same cores do.

The ceiling for searches is one process searching alone on one core (`MEMVEC_THREADS=1`, one search
at a time) times the cores: no server can beat it without making the search itself cheaper. Served
searches are driven by `wrk` (Debian's native load generator, one thread: it costs little of the
cores it measures) over LoCoMo's questions, each asked of its own conversation's recall tier; every
search embeds its query (`MEMVEC_QUERY_CACHE_SIZE=0` on both sides). Ingest is set against the
model's own rate on the same forward passes: every window ingest embeds, in the model's batches.

`python -m benchmarks.ceiling [--locomo PATH] [--longmemeval PATH] [--seconds S] [--out DIR]`
(a section of `make bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks import datasets, longmemeval
from benchmarks.harness import MeasuredEmbedder, records_for
from benchmarks.load import start_server, stop_server, wait_listening
from benchmarks.speed import rss_bytes
from memvec import NewRecord
from memvec.cli.records import INGEST_BATCH
from memvec.embed import Embedder
from memvec.embed.base import Vectors

WRK_SCRIPT = """
local paths = {}
for line in io.lines(os.getenv("MEMVEC_WRK_PATHS")) do paths[#paths + 1] = line end
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", paths[(n % #paths) + 1])
end
"""
SERVED = tuple((workers, clients) for workers in (1, 2) for clients in (1, 8, 32))


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def questions(locomo: Path) -> list[tuple[str, str]]:
    """(agent, question) for every LoCoMo question with evidence, its conversation's id as the agent."""
    return [
        (sample["sample_id"], query.text)
        for sample in datasets.load_locomo(locomo)
        for query in datasets.locomo_recall_task(sample).queries
    ]


def build_home(home: Path, locomo: Path) -> int:
    """Every LoCoMo turn in its conversation's recall tier; returns the record count."""
    from memvec import Memory

    count = 0
    with Memory.open(home) as mem:
        for sample in datasets.load_locomo(locomo):
            records = records_for(datasets.locomo_recall_task(sample), sample["sample_id"])
            for start in range(0, len(records), 256):
                mem.insert(records[start : start + 256])
            count += len(records)
    return count


def in_process(home: Path, locomo: Path, threads: int, seconds: float) -> dict[str, Any]:
    """Searches/s of one process with `threads` threads searching back to back (run in this process)."""
    import threading

    from memvec import Memory, SearchRequest

    asked = questions(locomo)
    with Memory.open(home) as mem:
        for agent, text in asked[:20]:  # warm: indexes loaded, first passes made
            mem.search(SearchRequest(agent=agent, tier="recall", query=text, k=10))
        counts = [0] * threads
        deadline = time.perf_counter() + seconds

        def search(worker: int) -> None:
            i = worker * 97
            while time.perf_counter() < deadline:
                agent, text = asked[i % len(asked)]
                mem.search(SearchRequest(agent=agent, tier="recall", query=text, k=10))
                counts[worker] += 1
                i += 1

        started = time.perf_counter()
        workers = [threading.Thread(target=search, args=(w,)) for w in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        elapsed = time.perf_counter() - started
    return {"threads": threads, "searches": sum(counts), "rps": sum(counts) / elapsed}


def second_stage(home: Path, locomo: Path, rounds: int = 1) -> dict[str, Any]:
    """Per-search median ms of the default search and of fusion alone (rerank off), question by question
    alternating, on one core: what the learned ranker costs (run in this process)."""
    from memvec import Memory, SearchRequest

    asked = questions(locomo)
    times: dict[str, list[float]] = {"default": [], "fusion alone": []}
    with Memory.open(home) as mem:
        for agent, text in asked[:20]:
            mem.search(SearchRequest(agent=agent, tier="recall", query=text, k=10))
        for _ in range(rounds):
            for agent, text in asked:
                for name, rerank in (("default", None), ("fusion alone", False)):
                    request = SearchRequest(agent=agent, tier="recall", query=text, k=10, rerank=rerank)
                    started = time.perf_counter()
                    mem.search(request)
                    times[name].append((time.perf_counter() - started) * 1000)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "median_ms": medians,
        "ratio": medians["default"] / medians["fusion alone"],
        "searches": len(asked) * rounds,
    }


def cold_search(home: Path, locomo: Path) -> dict[str, float]:
    """A fresh process's first search: open the home, load the model and the index, search (run in this process)."""
    started = time.perf_counter()
    from memvec import Memory, SearchRequest

    agent, text = questions(locomo)[0]
    with Memory.open(home) as mem:
        mem.search(SearchRequest(agent=agent, tier="recall", query=text, k=10))
        first = time.perf_counter() - started
    return {"first_search_s": first}


def _child(what: str, home: Path, locomo: Path, *options: str, one_core: bool) -> dict[str, Any]:
    env = {**os.environ, "MEMVEC_QUERY_CACHE_SIZE": "0", "HF_HUB_OFFLINE": "1"}
    env.pop("MEMVEC_THREADS", None)
    if one_core:
        env["MEMVEC_THREADS"] = "1"
    command = [sys.executable, "-m", "benchmarks.ceiling", what, "--home", str(home), "--locomo", str(locomo), *options]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _in_process_child(home: Path, locomo: Path, threads: int, seconds: float, *, one_core: bool) -> dict[str, Any]:
    return _child("in-process", home, locomo, "--threads", str(threads), "--seconds", str(seconds), one_core=one_core)


def wrk_level(url: str, paths_file: Path, clients: int, seconds: float) -> dict[str, Any]:
    """One `wrk` run: requests/s, latency percentiles and failures."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT)
    try:
        done = subprocess.run(
            ["wrk", "-t1", f"-c{clients}", f"-d{round(seconds)}s", "--latency", "-s", script.name, url],
            env={**os.environ, "MEMVEC_WRK_PATHS": str(paths_file)},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        os.unlink(script.name)
    return {"clients": clients, **parse_wrk(done.stdout)}


def parse_wrk(output: str) -> dict[str, Any]:
    def ms(text: str) -> float:
        value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]

    percentiles = {int(p): ms(v) for p, v in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", output, re.M)}
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),  # type: ignore[union-attr]
        "requests": int(re.search(r"(\d+) requests in", output).group(1)),  # type: ignore[union-attr]
        "p50_ms": percentiles[50],
        "p99_ms": percentiles[99],
        "failed": (int(failed.group(1)) if failed else 0)
        + (sum(int(n) for n in socket_errors.groups()) if socket_errors else 0),
    }


def served(
    home: Path, locomo: Path, seconds: float, tmp: Path, levels: Sequence[tuple[int, int]]
) -> list[dict[str, Any]]:
    """`wrk` at each (workers, clients) level, one server per worker count."""
    paths_file = tmp / "paths.txt"
    paths_file.write_text(
        "".join(
            f"/v1/agents/{agent}/recall-memory/search?query={quote(text)}&top_k=10\n"
            for agent, text in questions(locomo)
        )
    )
    rows: list[dict[str, Any]] = []
    for workers in sorted({w for w, _ in levels}):
        rows += _served_by(home, workers, [c for w, c in levels if w == workers], paths_file, seconds, tmp)
    return rows


def _served_by(
    home: Path, workers: int, clients: Sequence[int], paths_file: Path, seconds: float, tmp: Path
) -> list[dict[str, Any]]:
    log = tmp / f"serve-{workers}.log"
    os.environ["MEMVEC_QUERY_CACHE_SIZE"] = "0"  # the server's environment: every search embeds its query
    try:
        process, url = start_server(home, [], ["--workers", str(workers)], stderr_path=log)
    finally:
        del os.environ["MEMVEC_QUERY_CACHE_SIZE"]
    try:
        wait_listening(log, workers)
        wrk_level(url, paths_file, 8, max(1.0, seconds / 4))  # warm: every worker's indexes loaded
        rows = [{"workers": workers, **wrk_level(url, paths_file, n, seconds)} for n in clients]
        resident = max(rss_bytes(pid) for pid in _worker_pids(process.pid, workers)) / 2**20
    finally:
        stop_server(process)
    return [{**row, "rss_mb_per_worker": resident} for row in rows]


def _worker_pids(pid: int, workers: int) -> list[int]:
    """The processes that serve: the server itself, or its supervisor's children."""
    if workers == 1:
        return [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


class RecordingEmbedder(MeasuredEmbedder):
    """Times the model and keeps every text it was asked to embed: the forward passes ingest made."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner, cache_queries=False)
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return super().embed_documents(texts)


def ingest_against_model(records: list[NewRecord], embedder: Embedder) -> dict[str, Any]:
    """Records/s of `Memory.insert` in `memvec ingest`'s batches, beside the model alone embedding every
    text that ingest embedded (each window, each turn read after the one before it), in one call: the
    backend sorts them by length into its own batches, as well as the model allows."""
    from memvec import Memory

    embedder.embed_documents(["warm the model's session up"])
    recording = RecordingEmbedder(embedder)
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp), embedder=recording) as mem:
        started = time.perf_counter()
        for start in range(0, len(records), INGEST_BATCH):
            mem.insert(records[start : start + INGEST_BATCH])
        ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed_documents(recording.texts)
    model_s = time.perf_counter() - started
    return {
        "records": len(records),
        "forward_passes": len(recording.texts),
        "ingest_s": ingest_s,
        "ingest_rate": len(records) / ingest_s,
        "model_in_ingest_s": recording.seconds,
        "model_s": model_s,
        "model_rate": len(records) / model_s,
        "of_model": model_s / ingest_s,
    }


def longmemeval_records(path: Path, turns: int) -> list[NewRecord]:
    """The first `turns` turns of LongMemEval_S haystacks, question after question, one agent each."""
    records: list[NewRecord] = []
    for question in longmemeval.load(path):
        records += records_for(longmemeval.task(question), f"lme-{len(records)}")
        if len(records) >= turns:
            break
    return records[:turns]


def measure(locomo: Path, longmemeval_path: Path, seconds: float, *, quick: bool = False) -> dict[str, Any]:
    """Every figure of the section, from one run (quick: a LoCoMo conversation's first sessions, fewer levels)."""
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if quick:
            shorter = tmp / "locomo-quick.json"
            shorter.write_text(json.dumps([datasets.first_sessions(datasets.load_locomo(locomo)[0], 4, questions=40)]))
            locomo = shorter
        home = tmp / "home"
        records = build_home(home, locomo)
        one = _in_process_child(home, locomo, 1, seconds, one_core=True)
        threads = [_in_process_child(home, locomo, n, seconds, one_core=False) for n in ((1,) if quick else (1, 2, 4))]
        stages = _child("second-stage", home, locomo, one_core=True)
        colds = [_child("cold", home, locomo, one_core=False) for _ in range(1 if quick else 3)]
        rows = served(home, locomo, seconds, tmp, ((1, 8), (2, 8)) if quick else SERVED)
        result = {
            "records": records,
            "questions": len(questions(locomo)),
            "cores": cores(),
            "one_core": one,
            "ceiling_rps": one["rps"] * cores(),
            "in_process": threads,
            "second_stage": stages,
            "cold": min(colds, key=lambda cold: cold["first_search_s"]),
            "served": [{**row, "of_ceiling": row["rps"] / (one["rps"] * cores())} for row in rows],
            "load_generator": _wrk_version(),
        }
        result["ingest"] = _ingest(locomo, longmemeval_path, 100 if quick else 1500)
    return result


def _ingest(locomo: Path, longmemeval_path: Path, longmemeval_turns: int) -> dict[str, Any]:
    from memvec.embed import load_embedder

    embedder = load_embedder()
    locomo_records = [
        record
        for sample in datasets.load_locomo(locomo)
        for record in records_for(datasets.locomo_recall_task(sample), sample["sample_id"])
    ]
    return {
        "LoCoMo turns": ingest_against_model(locomo_records, embedder),
        "LongMemEval_S turns": ingest_against_model(longmemeval_records(longmemeval_path, longmemeval_turns), embedder),
    }


def markdown(result: dict[str, Any]) -> list[str]:
    """The section of `make bench`'s report: served and in-process searches against the ceiling, what
    the second stage costs, a cold search, and ingest against the model."""
    ceiling = result["ceiling_rps"]
    out = [
        "## Against the ceiling",
        "",
        f"The ceiling: one process searching alone on one core (`MEMVEC_THREADS=1`) times the {result['cores']} "
        f"cores, {ceiling:.0f} searches/s. {result['questions']:,} LoCoMo questions, each asked of its "
        f"conversation's recall tier ({result['records']:,} turns); every search embeds its query. Served "
        f"searches are sent by {result['load_generator'].split(' [')[0]} (one thread, keep-alive connections).",
        "",
        "| searches | clients | searches/s | of the ceiling | p50 ms | p99 ms | failed |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    one = result["one_core"]
    out.append(f"| in process, one core | 1 | {one['rps']:.0f} | {one['rps'] / ceiling:.2f} | | | |")
    for row in result["in_process"]:
        out.append(
            f"| in process, all cores, {row['threads']} thread(s) | {row['threads']} | {row['rps']:.0f} | "
            f"{row['rps'] / ceiling:.2f} | | | |"
        )
    for row in result["served"]:
        workers = "1 worker" if row["workers"] == 1 else f"`--workers {row['workers']}`"
        out.append(
            f"| `memvec serve`, {workers} | {row['clients']} | {row['rps']:.0f} | {row['of_ceiling']:.2f} | "
            f"{row['p50_ms']:.0f} | {row['p99_ms']:.0f} | {row['failed']} |"
        )
    stages = result["second_stage"]
    resident = {row["workers"]: row["rss_mb_per_worker"] for row in result["served"]}
    out += [
        "",
        "Resident memory of each worker after serving: "
        + ", ".join(f"{mb:.0f} MB with {n} worker(s)" for n, mb in sorted(resident.items()))
        + ".",
        "",
        f"The learned second stage, one core, question by question alternating: default search median "
        f"{stages['median_ms']['default']:.2f} ms, fusion alone {stages['median_ms']['fusion alone']:.2f} ms "
        f"(x{stages['ratio']:.2f}). A cold search (a fresh process opens the home, loads the model and the "
        f"index, searches): {result['cold']['first_search_s']:.2f} s.",
        "",
        "| ingest | records | forward passes | `Memory.insert` records/s | the model alone records/s | of the model |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, row in result["ingest"].items():
        out.append(
            f"| {name} | {row['records']:,} | {row['forward_passes']:,} | {row['ingest_rate']:.0f} | "
            f"{row['model_rate']:.0f} | {row['of_model']:.2f} |"
        )
    return [*out, ""]


def _wrk_version() -> str:
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip().splitlines()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", default="all", choices=("all", "in-process", "second-stage", "cold"))
    parser.add_argument("--locomo", type=Path, default=datasets.DEFAULT_LOCOMO)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    parser.add_argument("--home", type=Path, help="in-process: the home to search")
    parser.add_argument("--threads", type=int, default=1, help="in-process: threads searching at once")
    parser.add_argument("--seconds", type=float, default=8.0, help="per measurement")
    parser.add_argument("--out", type=Path, help="write ceiling.json and ceiling.md here (else print the JSON)")
    args = parser.parse_args(argv)
    if args.what != "all":
        children: dict[str, Callable[[], dict[str, Any]]] = {
            "in-process": lambda: in_process(args.home, args.locomo, args.threads, args.seconds),
            "second-stage": lambda: second_stage(args.home, args.locomo),
            "cold": lambda: cold_search(args.home, args.locomo),
        }
        print(json.dumps(children[args.what]()))
        return 0
    if shutil.which("wrk") is None:
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 2
    result = measure(args.locomo, args.longmemeval, args.seconds)
    if args.out is None:
        print(json.dumps(result, indent=1))
        return 0
    from benchmarks.report import write_report  # the report imports this module's markdown

    write_report(args.out, "ceiling", result, "\n".join(markdown(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
