"""Start and stop a real `memvec serve` process on 127.0.0.1 for the service tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.load import free_port, wait_healthy


class InProcess:
    """memvec's app in this process with the keys and model a `Server` would have, without a socket:
    for what the HTTP layer decides (routes, validation, keys, limits), not the transport."""

    def __init__(self, home: Path, *, keys: str = "", model: str = "hash:64") -> None:
        from memvec import Memory
        from memvec.service.app import create_app
        from memvec.service.auth import KeyRing

        self.home, self.url = home, "http://testserver"
        self.memory = Memory.open(home, model=model)
        self.app = create_app(self.memory, KeyRing.parse([(f"key {n}", k) for n, k in enumerate(keys.split(","))]))

    def stop(self) -> None:
        self.memory.close()


@contextmanager
def served_in_process(home: Path, **settings: Any) -> Iterator[str]:
    """memvec's app under uvicorn on a real port, in this process, so litellm's scripted provider
    (registered here) answers the agents' model calls; yields the base URL."""
    import uvicorn

    from memvec import Memory
    from memvec.embed import HashingEmbedder
    from memvec.service.app import create_app

    with Memory.open(home, embedder=HashingEmbedder(64), **settings) as mem:
        server = uvicorn.Server(
            uvicorn.Config(create_app(mem), host="127.0.0.1", port=free_port(), log_level="warning")
        )
        thread = threading.Thread(target=server.run)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{server.config.port}"
        finally:
            server.should_exit = True
            thread.join(timeout=30)


class Server:
    def __init__(
        self,
        home: Path,
        *,
        keys: str = "",
        model: str = "hash:64",
        store: str | None = None,
        env: dict[str, str] | None = None,
        serve_args: list[str] | None = None,
        module: str = "memvec",
    ) -> None:
        """`module`: what `python -m` runs (tests.scripted_serve: memvec with the scripted model)."""
        self.home, self.keys, self.model, self.store, self.module = home, keys, model, store, module
        self.serve_args = serve_args or []
        self.env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"server-{self.port}.log"

    def start(self, timeout: float = 120) -> Server:
        env = {**os.environ, "MEMVEC_API_KEYS": self.keys, "HF_HUB_OFFLINE": "1", **self.env}
        store = ["--store", self.store] if self.store else []
        self.home.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    self.module,
                    "--home",
                    str(self.home),
                    "--model",
                    self.model,
                    *store,
                    "serve",
                    "--port",
                    str(self.port),
                    *self.serve_args,
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        wait_healthy(self.url, self.process, self.log_path, timeout)
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM: uvicorn shuts down and memvec saves its indexes."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)


class WriteLoad:
    """Writer threads posting distinct passages to agent `ana` on each server until stopped. Only
    what a server acknowledged (201) is kept: a write killed mid-request was never promised. Every
    other answer is counted by status in `answers` (with the time it came), for the test to judge."""

    def __init__(self, servers: list[Server], *, writers_per_server: int = 6, prefix: str = "") -> None:
        self.acknowledged: list[tuple[str, str]] = []
        self.answers: list[tuple[float, int, float]] = []  # (when, status, seconds taken) of non-201s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._write, args=(srv, f"{prefix}{n}w{w}"))
            for n, srv in enumerate(servers)
            for w in range(writers_per_server)
        ]

    def _write(self, srv: Server, writer: str) -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as api:
            for i in range(100_000):
                if self._stop.is_set():
                    return
                text = f"durable {writer} n{i} token{writer}x{i}"
                started = time.monotonic()
                try:
                    response = api.post("/v1/agents/ana/archival-memory", json={"text": text})
                except httpx.TransportError:
                    return
                with self._lock:
                    if response.status_code == 201:
                        self.acknowledged.append((response.json()[0]["id"], text))
                    else:
                        self.answers.append((started, response.status_code, time.monotonic() - started))

    def start(self) -> WriteLoad:
        for thread in self._threads:
            thread.start()
        return self

    def wait_for(self, count: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.acknowledged) >= count, "the servers must acknowledge writes before the kill"

    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self.acknowledged)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def assert_every_write_is_there(
    srv: Server, acknowledged: list[tuple[str, str]], *, every: int = 10, vector: bool = False
) -> None:
    """Every acknowledged passage is listed, and a sample is found by its unique token (BM25) and,
    with `vector`, by vector search on its exact text (the hash embedder maps it to the same vector)."""
    with httpx.Client(base_url=srv.url, timeout=60) as api:
        listed = api.get("/v1/agents/ana/archival-memory", params={"limit": 1000}).json()
        assert {i for i, _ in acknowledged} <= {p["id"] for p in listed}
        searches: list[tuple[str, Callable[[str], str]]] = [("bm25", lambda text: text.split()[-1])]
        searches += [("vector", lambda text: text)] if vector else []
        for record_id, text in acknowledged[::every]:
            for mode, query in searches:
                hits = api.get(
                    "/v1/agents/ana/archival-memory/search", params={"query": query(text), "top_k": 1, "mode": mode}
                ).json()["results"]
                assert hits[0]["id"] == record_id, (mode, text)


def api_routes(app: Any) -> list[Any]:
    """Every APIRoute of the app, those of routers it includes too (FastAPI keeps an included router
    as one entry of `app.routes`)."""
    from fastapi.routing import APIRoute

    found: list[Any] = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif (inner := getattr(route, "original_router", None)) is not None:
            found += api_routes(inner)
    return found


@contextmanager
def serving_with_openai_script(home: Path, *, keys: str, model: str = "hash:64") -> Iterator[Server]:
    """A `memvec serve` whose agents with an `openai/...` model answer through litellm from the
    OpenAI-shaped scripted model of Letta's suite (benchmarks/openai_script.py), without a network."""
    from benchmarks import openai_script

    with openai_script.serving() as model_base:
        server = Server(home, keys=keys, model=model, env={"OPENAI_API_BASE": model_base, "OPENAI_API_KEY": "sk-x"})
        server.start()
        try:
            yield server
        finally:
            server.stop()


@contextmanager
def letta_for(server: Server, key: str) -> Iterator[Any]:
    """letta-client against the server, checking every answer against its own types."""
    from letta_client import Letta

    with Letta(base_url=server.url, api_key=key, _strict_response_validation=True) as client:
        yield client
