"""The load `benchmarks/cluster.py` puts through the router, and what it checks afterwards: every
request logged with its agent, start, end and status; every acknowledged insert looked up."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import httpx

from benchmarks.load import all_pages

RETRYABLE = {502, 503, 504, 0}  # 0: the connection failed; what a client may retry


@dataclass(frozen=True)
class Call:
    agent: str
    kind: str
    started: float
    ended: float
    status: int
    text: str = ""
    detail: str = ""


class Load:
    """Client threads through the router, one agent each, mixing inserts, searches and messages, each
    `pause_s` apart (0: as fast as the servers answer)."""

    def __init__(self, url: str, agents: list[str], *, pause_s: float = 0.0) -> None:
        self.url, self.agents, self.pause_s = url, agents, pause_s
        self.calls: list[Call] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._client, args=(a,), daemon=True) for a in agents]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=120)

    def _client(self, agent: str) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as api:
            n = 0
            while not self._stop.is_set():
                kind = ("insert", "search", "insert", "message")[n % 4]
                self._one(api, agent, kind, f"{agent} fact {n}: the code word is w{n}x{agent}")
                n += 1
                self._stop.wait(self.pause_s)

    def _one(self, api: httpx.Client, agent: str, kind: str, text: str) -> None:
        started = time.monotonic()
        try:
            if kind == "insert":
                response = api.post(f"/v1/agents/{agent}/archival-memory", json={"text": text})
            elif kind == "search":
                response = api.get(f"/v1/agents/{agent}/archival-memory/search", params={"query": text})
            else:
                response = api.post(
                    f"/v1/agents/{agent}/messages", json={"messages": [{"role": "user", "content": text}]}
                )
            status, detail = response.status_code, response.text[:200] if response.status_code >= 300 else ""
        except httpx.TransportError as exc:
            status, detail = 0, repr(exc)
        with self._lock:
            self.calls.append(Call(agent, kind, started, time.monotonic(), status, text, detail))


def setup_agents(url: str, count: int) -> list[str]:
    agents = [f"agent-{n:02d}" for n in range(count)]
    with httpx.Client(base_url=url, timeout=60) as api:
        for agent in agents:
            api.post("/v1/agents", json={"name": agent, "model": "scripted/echo"}).raise_for_status()
    return agents


def audit(url: str, calls: list[Call]) -> dict[str, Any]:
    """Acknowledged inserts missing from the store, and texts stored more than once."""
    acknowledged = {(c.agent, c.text) for c in calls if c.kind == "insert" and c.status in (200, 201)}
    with httpx.Client(base_url=url, timeout=60) as api:
        stored = Counter(
            (agent, passage["text"])
            for agent in sorted({c.agent for c in calls})
            for passage in all_pages(api, f"/v1/agents/{agent}/archival-memory")
        )
    return {
        "acknowledged_inserts": len(acknowledged),
        "lost": len(acknowledged - set(stored)),
        "stored_twice": sum(1 for n in stored.values() if n > 1),
    }


def summary(calls: list[Call]) -> dict[str, Any]:
    failed = [c for c in calls if c.status not in (200, 201)]
    return {
        "requests": len(calls),
        "failed": len(failed),
        "failed_by_status": {
            str(status): sum(1 for c in failed if c.status == status) for status in sorted({c.status for c in failed})
        },
        "failed_not_retryable": sum(1 for c in failed if c.status not in RETRYABLE),
        "failed_by_kind": {k: sum(1 for c in failed if c.kind == k) for k in ("insert", "search", "message")},
        "failed_calls": [f"{c.kind} {c.agent} -> {c.status}: {c.detail}" for c in failed[:20]],
        "by_kind": {k: sum(1 for c in calls if c.kind == k) for k in ("insert", "search", "message")},
    }
