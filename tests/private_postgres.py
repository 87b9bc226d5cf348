"""A PostgreSQL server of a test's own: `initdb` in a temporary folder, listening on a free port, so
a test may stop and start it (an outage) without taking the suite's shared server from the tests
running beside it. Debian's server binaries; as root, the server runs as the `postgres` user."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks.load import free_port
from tests.conftest import unavailable


def _bin(name: str) -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda p: int(p.parts[-3]))
    if not found:
        unavailable(f"PostgreSQL's {name} is not installed (Debian's postgresql package provides it)")
    return found[-1]


class PrivatePostgres:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="memvec-pg-"))  # in /tmp: the postgres user can enter it
        self.data = self.folder / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/test"

    def _run(self, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*as_postgres, *args], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stdout}{done.stderr}")

    def create(self) -> PrivatePostgres:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(str(_bin("initdb")), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()
        self._run(str(_bin("createdb")), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "test")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(_bin("pg_ctl")), "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start"
        )

    def stop(self) -> None:
        """Fast shutdown: clients are cut off, as when a database server goes away."""
        self._run(str(_bin("pg_ctl")), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def ensure_running(self) -> None:
        if not self.running():
            self.start()

    def remove(self) -> None:
        if self.running():
            self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
