"""Server time of the memory browser's pages for an agent with 10,000 records per tier.

The pages are requested through the real app in this process (routing, session check, store reads,
search with the real model, rendering), so what is timed is the server's work without the network.
Each page is requested `repeats` times after one warm-up; medians and p95 in milliseconds.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from benchmarks.metrics import percentile
from benchmarks.speed import synthetic_texts
from memvec import Memory
from memvec.embed.base import Embedder
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.types import AgentSettings, NewRecord

KEY = "bench-ui-key-0000001"
BATCH = 500
SESSION = 20


def _fill(mem: Memory, n: int) -> None:
    texts = synthetic_texts(2 * n, seed=23)
    for tier, part in (("archival", texts[:n]), ("recall", texts[n:])):
        for start in range(0, n, BATCH):
            mem.insert(
                [
                    NewRecord.model_validate(
                        {
                            "agent": "bench",
                            "tier": tier,
                            "text": text,
                            "role": ("user", "assistant")[i % 2] if tier == "recall" else None,
                            "tags": [f"topic-{i % 7}"] if tier == "archival" else [],
                            "citation": {"session_id": f"s{i // SESSION}", "turn_id": str(i % SESSION)},
                        }
                    )
                    for i, text in enumerate(part[start : start + BATCH], start=start)
                ]
            )
    for label in ("persona", "human"):
        for n_edit in range(20):
            mem.core("bench").rewrite(label, f"{label} note {n_edit}\n" * 10)


def _signed_in(client: TestClient) -> None:
    form = client.get("/ui/login").text
    token = re.search(r'name="login_token" value="([^"]+)"', form)
    assert token is not None
    client.post("/ui/login", data={"api_key": KEY, "login_token": token.group(1)})


def _pages(n: int) -> dict[str, str]:
    last = (n + 49) // 50
    return {
        "agents": "/ui/agents",
        "agent (blocks)": "/ui/agents/bench",
        "recall, first page": "/ui/agents/bench/recall",
        "recall, last page": f"/ui/agents/bench/recall?page_number={last}",
        "archival, newest": "/ui/agents/bench/archival",
        "archival, last page": f"/ui/agents/bench/archival?page_number={last}",
        "archival, tag filter": "/ui/agents/bench/archival?tag=topic-3",
        "passage": "/ui/agents/bench/archival/5",
        "search archival (hybrid + ranker)": "/ui/agents/bench/search?q=who+planned+a+trip+to+Lisbon",
        "search recall (hybrid + ranker)": "/ui/agents/bench/search?q=the+leaking+roof+on+Friday&tier=recall",
        "block history": "/ui/agents/bench/blocks/persona/history",
        "consolidations": "/ui/agents/bench/consolidations",
        "health": "/ui/health",
    }


def run(embedder: Embedder, n: int = 10_000, repeats: int = 30) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp), embedder=embedder)
        try:
            mem.create_agent(AgentSettings(name="bench"))
            for other in range(20):
                mem.create_agent(AgentSettings(name=f"agent-{other:02d}"))
            _fill(mem, n)
            with TestClient(create_app(mem, KeyRing.parse([("bench", KEY)])), follow_redirects=False) as client:
                _signed_in(client)
                pages = {name: _timed(client, path, repeats) for name, path in _pages(n).items()}
        finally:
            mem.close()
    return {"records_per_tier": n, "repeats": repeats, "pages": pages}


def _timed(client: TestClient, path: str, repeats: int) -> dict[str, float]:
    warm = client.get(path)
    assert warm.status_code == 200, (path, warm.status_code, warm.text[:300])
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    return {"p50": percentile(times, 50), "p95": percentile(times, 95), "kb": len(warm.content) / 1024}
