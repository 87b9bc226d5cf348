"""Start and stop a real `memvec serve` process on 127.0.0.1 for the service tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    def __init__(self, home: Path, *, keys: str = "", model: str = "hash:64", store: str | None = None) -> None:
        self.home, self.keys, self.model, self.store = home, keys, model, store
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"server-{self.port}.log"

    def start(self, timeout: float = 120) -> Server:
        env = {**os.environ, "MEMVEC_API_KEYS": self.keys, "HF_HUB_OFFLINE": "1"}
        store = ["--store", self.store] if self.store else []
        self.home.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memvec", "--home", str(self.home), "--model", self.model, *store, "serve",
                 "--port", str(self.port)], env=env, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise TimeoutError("server did not start")

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
