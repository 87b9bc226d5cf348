"""Many agents behind one real `memvec serve` with an index budget (`make bench-full`).

10,000 agents x 200 archival records (synthetic Zipf text, `hash:384` vectors: no model cost) are
written through the Python API; then a server holding at most a tenth of the (agent, tier) indexes
answers hybrid searches for agents picked at random. A client-side LRU of the same size says which
requests found their index loaded (hit) and which made the server save-and-unload another and
load this one (miss: the reload cost); one client, so that reckoning is exact. The server's RSS is
sampled throughout; it must level off once the budget is full.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import httpx

from benchmarks.load import start_server, stop_server
from benchmarks.metrics import percentile
from benchmarks.report import write_report
from benchmarks.scale import queries, zipf_texts
from benchmarks.speed import rss_bytes
from memvec import Memory, NewRecord

MODEL = "hash:384"


def agent_name(number: int) -> str:
    return f"agent-{number:05d}"


def populate(home: Path, agents: int, per_agent: int, budget: int) -> float:
    started = time.perf_counter()
    with Memory.open(home, model=MODEL, max_loaded_indexes=budget) as mem:
        for number in range(agents):
            texts = zipf_texts(per_agent, seed=number)
            mem.insert(
                [
                    NewRecord.model_validate(
                        {
                            "agent": agent_name(number),
                            "tier": "archival",
                            "text": t,
                            "citation": {"session_id": f"s{i // 50}"},
                        }
                    )
                    for i, t in enumerate(texts)
                ]
            )
    return time.perf_counter() - started


class RssSampler:
    """The server's resident memory, every 0.2 s, from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid, self._stop = pid, threading.Event()
        self.samples: list[Any] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> int:
        return rss_bytes(self.pid)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.samples.append(self.now())

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def search_load(url: str, agents: int, budget: int, requests: int, pid: int) -> dict[str, Any]:
    rng = random.Random(7)
    texts = queries(500)
    loaded: OrderedDict[int, None] = OrderedDict()
    latency: dict[str, list[float]] = {"hit": [], "miss": []}
    errors, rss_when_full = 0, 0
    with httpx.Client(base_url=url, timeout=120) as api, RssSampler(pid) as rss:
        baseline = rss.now()
        for i in range(requests):
            number = rng.randrange(agents)
            kind = "hit" if number in loaded else "miss"
            loaded[number] = None
            loaded.move_to_end(number)
            if len(loaded) > budget:
                loaded.popitem(last=False)
            started = time.perf_counter()
            response = api.get(
                f"/v1/agents/{agent_name(number)}/archival-memory/search",
                params={"query": texts[i % len(texts)], "top_k": 10},
            )
            latency[kind].append((time.perf_counter() - started) * 1000)
            errors += response.status_code != 200 or not response.json()["results"]
            if len(loaded) == budget and not rss_when_full:
                rss_when_full = rss.now()
        health = api.get("/v1/health").json()
    return {
        "requests": requests,
        "errors": errors,
        "baseline_rss": baseline,
        "rss_when_budget_full": rss_when_full,
        "max_rss": max(rss.samples, default=baseline),
        "last_rss": rss.samples[-1] if rss.samples else baseline,
        "indexes_loaded": health["indexes_loaded"],
        "indexes_budget": health["indexes_budget"],
        **{f"{kind}_count": len(values) for kind, values in latency.items()},
        **{
            f"{kind}_ms": {"p50": percentile(values, 50), "p99": percentile(values, 99)}
            for kind, values in latency.items()
            if values
        },
    }


def run(agents: int = 10_000, per_agent: int = 200, requests: int = 10_000, work: Path | None = None) -> dict[str, Any]:
    budget = max(1, agents // 10)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        home = Path(tmp) / "home"
        populate_s = populate(home, agents, per_agent, budget)
        process, url = start_server(home, ["--model", MODEL], serve_options=["--max-loaded-indexes", str(budget)])
        try:
            result = search_load(url, agents, budget, requests, process.pid)
        finally:
            stop_server(process)
    return {"agents": agents, "per_agent": per_agent, "budget": budget, "populate_s": populate_s, **result}


def markdown(r: dict[str, Any]) -> str:
    mib = 1024 * 1024
    per_index = (r["rss_when_budget_full"] - r["baseline_rss"]) / r["budget"]
    growth = r["max_rss"] - r["rss_when_budget_full"]
    return "\n".join(
        [
            f"## Many agents: {r['agents']:,} agents x {r['per_agent']} records behind one `memvec serve`, "
            f"budget {r['budget']:,} indexes",
            "",
            f"Written through the Python API in {r['populate_s']:.0f} s; then {r['requests']:,} hybrid searches "
            "(one client, a random agent each, `hash:384` vectors: no model cost).",
            "",
            "| | requests | p50 ms | p99 ms |",
            "|---|---|---|---|",
            *[
                f"| {kind} | {r[f'{kind}_count']:,} | {r[f'{kind}_ms']['p50']:.2f} | {r[f'{kind}_ms']['p99']:.2f} |"
                for kind in ("hit", "miss")
                if f"{kind}_ms" in r
            ],
            "",
            f"Errors: {r['errors']}. Loaded at the end: {r['indexes_loaded']:,} of {r['indexes_budget']:,}. "
            f"Server RSS: {r['baseline_rss'] / mib:.0f} MiB at the start, {r['rss_when_budget_full'] / mib:.0f} MiB "
            f"when the budget first filled ({per_index / 1024:.0f} KiB per loaded index), at most "
            f"{r['max_rss'] / mib:.0f} MiB afterwards ({growth / mib:+.0f} MiB past the full budget, "
            f"{growth / max(1, r['rss_when_budget_full'] - r['baseline_rss']):.0%} of the budget's memory), "
            f"{r['last_rss'] / mib:.0f} MiB at the end.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--per-agent", type=int, default=200)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    result = run(args.agents, args.per_agent, args.requests)
    write_report(args.out, "agents", result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
