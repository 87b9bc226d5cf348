"""Time to the first event of a streamed reply, straight from `memvec serve` and through nginx
(`memvec router-config`). The agent's model is the scripted one (a litellm custom provider, no
network) streaming its reply in small pieces with a pause before each, so a hop that buffers shows
as a first token that comes with the last one instead of a pause after the request."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.cluster import NGINX_MAIN, ROOT
from benchmarks.load import free_port, wait_healthy
from memvec.service.nginx import nginx_config

AGENT = "streamer"


@contextmanager
def scripted_server(home: Path, pause_s: float) -> Iterator[str]:
    """`memvec serve` (the scripted model registered) whose model pauses `pause_s` before each piece."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMVEC_API_KEYS": "", "MEMVEC_TEST_STREAM_PAUSE_S": str(pause_s)}
    log = home.parent / "server.log"
    with open(log, "ab") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.scripted_serve",
                "--home",
                str(home),
                "--model",
                "hash:64",
                "serve",
                "--port",
                str(port),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


@contextmanager
def nginx_in_front(upstream: str, folder: Path) -> Iterator[str]:
    """nginx with the configuration `memvec router-config` writes, in front of one server."""
    port = free_port()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memvec.conf").write_text(nginx_config([upstream.removeprefix("http://")], listen=f"127.0.0.1:{port}"))
    user = "user root;\n" if os.geteuid() == 0 else ""  # nginx's workers must enter this private folder
    (folder / "nginx.conf").write_text(NGINX_MAIN.format(dir=folder, user=user))
    with open(folder / "stderr.log", "wb") as log:
        process = subprocess.Popen(
            ["nginx", "-p", str(folder), "-c", str(folder / "nginx.conf")], stdout=subprocess.DEVNULL, stderr=log
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, folder / "stderr.log")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGQUIT)
        process.wait(timeout=30)


def streamed_reply(url: str) -> dict[str, Any]:
    """One token-streamed reply: seconds from the request to the first event, the first assistant
    token and the end of the stream, and how many assistant pieces came."""
    started = time.perf_counter()
    seen: dict[str, Any] = {"first_event_s": None, "first_token_s": None, "pieces": 0}
    body = {"messages": [{"role": "user", "content": "hello"}], "stream_tokens": True}
    with httpx.stream("POST", f"{url}/v1/agents/{AGENT}/messages/stream", json=body, timeout=60) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter() - started
            seen["first_event_s"] = seen["first_event_s"] or now
            if line == "data: [DONE]":
                seen["done_s"] = now
                break
            if json.loads(line[6:]).get("message_type") == "assistant_message":
                seen["first_token_s"] = seen["first_token_s"] or now
                seen["pieces"] += 1
    return seen


def _summary(replies: list[dict[str, Any]]) -> dict[str, Any]:
    return {key: statistics.median(r[key] for r in replies) for key in ("first_event_s", "first_token_s", "done_s")} | {
        "pieces": replies[0]["pieces"],
        "replies": len(replies),
    }


def run(replies: int = 10, pause_s: float = 0.05) -> dict[str, Any]:
    """Medians over `replies` streamed replies, straight and (where nginx is installed) through nginx."""
    with tempfile.TemporaryDirectory() as tmp, scripted_server(Path(tmp) / "home", pause_s) as url:
        httpx.post(f"{url}/v1/agents", json={"name": AGENT, "model": "scripted/echo"}, timeout=30).raise_for_status()
        routes = {"direct": url}
        results: dict[str, Any] = {"pause_s": pause_s}
        if shutil.which("nginx") is None:
            results["nginx"] = None  # reported as not measured
            results["direct"] = _summary([streamed_reply(url) for _ in range(replies)])
            return results
        with nginx_in_front(url, Path(tmp) / "nginx") as routed:
            routes["nginx"] = routed
            for _ in range(2):  # alternated, so that both see the machine alike
                for name, address in routes.items():
                    results.setdefault(f"_{name}", []).extend(streamed_reply(address) for _ in range(replies // 2))
        for name in routes:
            results[name] = _summary(results.pop(f"_{name}"))
        return results
