"""A history checker for memvec servers sharing one store (Jepsen-style, #34): several clients drive
real `memvec serve` processes with a seeded random mix of writes (messages with the same and
distinct texts, passage inserts, PATCHes and forgets, block edits and undos), every acknowledgement
is logged, and afterwards the invariants are checked on the history and the store:

- every acknowledged message record is stored exactly once, and turn ids are unique per agent;
- every acknowledged passage is current (or superseded by a later version of its own chain), each
  chain has exactly one current version, and nothing an acknowledged forget took comes back, in
  the list or a search, whichever client edited the chain meanwhile (clients patch and forget each
  other's passages, so edits race forgets);
- every acknowledged block edit and undo is in the block's history exactly once, the shared block's
  (edited and undone by every client through its holders) included;
- an acknowledged upload to a folder still there is listed once; a file whose delete, or whose
  folder's delete, was acknowledged is found by no agent (scratch folders are deleted while other
  clients upload into them, with `duplicate_handling=error`);
- no answer was a 5xx; `memvec verify` is clean once the servers have stopped (it reports documents
  left without their folder).

Setups: two servers on one SQLite home, `serve --workers 2`, two servers on one PostgreSQL database,
and two servers on SQLite and on PostgreSQL with one killed by SIGKILL mid-run (and started
again). `make bench-chaos` runs them longer and writes benchmarks/results/chaos.md;
tests/test_chaos.py runs them briefly.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks.chaos_documents import DOCUMENT_OPS, DocumentOps, prepare
from benchmarks.chaos_history import AGENTS, History, check, counts
from benchmarks.load import free_port, wait_healthy

SAME_TEXTS = ("ok", "thanks!", "see you tomorrow")  # sent by many clients at once: must never merge
OPS = ("message", "message", "insert", "insert", "patch", "forget", "block", "undo", *DOCUMENT_OPS)
PG_URL = os.environ.get("MEMVEC_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class Setup:
    name: str
    servers: int = 2
    workers: int = 1
    postgres: bool = False
    kill: bool = False


SETUPS = (
    Setup("two servers, SQLite"),
    Setup("serve --workers 2, SQLite", servers=1, workers=2),
    Setup("two servers, PostgreSQL", postgres=True),
    Setup("two servers, SQLite, SIGKILL mid-run", kill=True),
    Setup("two servers, PostgreSQL, SIGKILL mid-run", postgres=True, kill=True),
)


class Servers:
    """The setup's server processes on one home (SQLite) or one PostgreSQL schema."""

    def __init__(self, setup: Setup, root: Path) -> None:
        self.setup, self.home = setup, root / "home"
        self.store = f"{PG_URL}?options=-csearch_path%3D{_new_schema()}" if setup.postgres else None
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * setup.servers
        self.urls = [f"http://127.0.0.1:{free_port()}" for _ in range(setup.servers)]
        self.logs = [root / f"server-{n}.log" for n in range(setup.servers)]

    def global_args(self) -> list[str]:
        return ["--home", str(self.home), "--model", "hash:64", *(["--store", self.store] if self.store else [])]

    def start(self, n: int) -> None:
        port = self.urls[n].rpartition(":")[2]
        workers = ["--workers", str(self.setup.workers)] if self.setup.workers > 1 else []
        with open(self.logs[n], "ab") as log:
            self.processes[n] = subprocess.Popen(
                [sys.executable, "-m", "memvec", *self.global_args(), "serve", "--port", port, *workers],
                # a killed server's leases free up in 3 s, not 30: its agents' messages wait that long
                env={**os.environ, "HF_HUB_OFFLINE": "1", "MEMVEC_API_KEYS": "", "MEMVEC_LEASE_TTL_S": "3"},
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        process = self.processes[n]
        assert process is not None
        wait_healthy(self.urls[n], process, self.logs[n], timeout=120)

    def kill(self, n: int) -> None:
        process = self.processes[n]
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

    def stop(self) -> None:
        for process in self.processes:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)

    def verify(self) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "memvec", *self.global_args(), "verify"],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            timeout=300,
        )
        return done.returncode, (done.stdout + done.stderr)[-2000:]

    def drop(self) -> None:
        if self.store is not None:
            import psycopg

            schema = self.store.rpartition("%3D")[2]
            with psycopg.connect(PG_URL, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _new_schema() -> str:
    import psycopg

    schema = f"memvec_chaos_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    return schema


EVERY_KIND_GRACE_S = 60.0


class Client(DocumentOps, threading.Thread):
    """One client: a seeded sequence of operations against a random live server until the deadline."""

    def __init__(self, n: int, servers: Servers, history: History, seed: int, deadline: float) -> None:
        super().__init__(name=f"chaos-client-{n}", daemon=True)
        self.n, self.servers, self.history, self.deadline = n, servers, history, deadline
        self.rng = random.Random(seed * 1000 + n)
        self.label = f"c{n}"
        self.my_files: list[str] = []  # this client's uploads, by name in history.files
        self.edits: Counter[str] = Counter()  # per agent, this client's block edits not undone

    def run(self) -> None:
        with httpx.Client(timeout=60) as http:
            step = 0
            while self._go_on():
                step += 1
                url = self.rng.choice(self.servers.urls)
                agent = self.rng.choice(AGENTS)
                try:
                    getattr(self, f"_{self.rng.choice(OPS)}")(http, url, agent, step)
                except httpx.TransportError:  # a killed or restarting server: not acknowledged
                    time.sleep(0.05)

    def _go_on(self) -> bool:
        """Until the deadline, and past it (up to EVERY_KIND_GRACE_S) until every kind of write was
        acknowledged once: on a slow machine a short run may not have reached an undo yet."""
        now = time.monotonic()
        if now < self.deadline:
            return True
        with self.history.lock:
            missing = min(counts(self.history).values()) == 0
        return missing and now < self.deadline + EVERY_KIND_GRACE_S

    def _answer(self, response: httpx.Response, op: str) -> bool:
        with self.history.lock:
            self.history.statuses[response.status_code] += 1
            if response.status_code >= 500:
                self.history.server_errors.append(f"{op}: {response.status_code} {response.text[:300]}")
        return response.is_success

    def _message(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        text = self.rng.choice(SAME_TEXTS) if self.rng.random() < 0.5 else f"message c{self.n} s{step}"
        response = http.post(
            f"{url}/v1/agents/{agent}/messages", json={"messages": [{"role": "user", "content": text}]}
        )
        if self._answer(response, "message"):
            with self.history.lock:
                self.history.messages += [{**p, "agent": agent, "sent": text} for p in response.json()["recorded"]]

    def _insert(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        text = f"passage c{self.n} s{step} token{self.n}x{step}"
        key = f"{self.n}:{step}"
        chain: dict[str, Any] = {"agent": agent, "current": None, "texts": {text}, "lost": False, "gone": False}
        with self.history.lock:  # logged before it is sent: a kill may commit it unanswered
            self.history.chains[key] = chain
        response = self._sent(
            chain,
            self.history.lock,
            lambda: http.post(f"{url}/v1/agents/{agent}/archival-memory", json={"text": text, "tags": [self.label]}),
        )
        if self._answer(response, "insert"):
            with self.history.lock:
                chain["current"] = int(response.json()[0]["id"])

    def _chain(self) -> dict[str, Any] | None:
        """Any client's passage, current as far as this client was told: edits race other clients'."""
        with self.history.lock:
            live = [c for c in self.history.chains.values() if c["current"] and not c["gone"]]
        return self.rng.choice(live) if live else None

    def _patch(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        chain = self._chain()
        if chain is None:
            return
        text = f"passage c{self.n} s{step} edit{self.n}x{step}"
        with self.history.lock:
            chain["texts"].add(text)
            target = chain["current"]
        response = self._sent(
            chain,
            self.history.lock,
            lambda: http.patch(f"{url}/v1/agents/{chain['agent']}/archival-memory/{target}", json={"text": text}),
        )
        if self._answer(response, "patch"):  # 404 or 409 when another client forgot or edited it first
            with self.history.lock:  # ids grow with commits: the highest acknowledged is the current one
                chain["current"] = max(chain["current"], int(response.json()[0]["id"]))

    def _forget(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        chain = self._chain()
        if chain is None:
            return
        with self.history.lock:
            target = chain["current"]
        response = self._sent(
            chain,
            self.history.lock,
            lambda: http.post(f"{url}/v1/agents/{chain['agent']}/forget", json={"ids": [target]}),
        )
        if self._answer(response, "forget") and response.json()["forgotten"] > 0:
            with self.history.lock:
                chain["gone"] = True
                self.history.forgotten.append((target, chain["agent"], text_of(chain)))

    def _block(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        value = f"notes of c{self.n} at s{step}"
        response = http.patch(f"{url}/v1/agents/{agent}/core-memory/blocks/{self.label}", json={"value": value})
        if self._answer(response, "block"):
            self.edits[agent] += 1
            with self.history.lock:
                self.history.block_edits.append((agent, self.label, value))

    def _undo(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        if self.edits[agent] <= 0:  # only its own edits: undoing the block's creation would delete it
            return
        self.edits[agent] -= 1  # even unanswered: the undo may have committed
        with self.history.lock:  # unsure until answered: a kill may commit it unanswered
            self.history.undos_unsure[(agent, self.label)] += 1
        response = http.post(f"{url}/v1/agents/{agent}/core-memory/blocks/{self.label}/undo")
        answered = self._answer(response, "undo")
        with self.history.lock:
            self.history.undos_unsure[(agent, self.label)] -= 1
            self.history.undos[(agent, self.label)] += answered


def text_of(chain: dict[str, Any]) -> str:
    return str(sorted(chain["texts"])[0])


def run(setup: Setup, root: Path, *, clients: int = 6, seconds: float = 8.0, seed: int = 1) -> dict[str, Any]:
    """Drive the setup, then check the history; returns the report (violations empty when it held)."""
    servers = Servers(setup, root)
    try:
        servers.start(0)
        with httpx.Client(base_url=servers.urls[0], timeout=60) as api:
            blocks = [{"label": f"c{n}", "value": "", "limit": 5000} for n in range(clients)]
            for agent in AGENTS:
                api.post("/v1/agents", json={"name": agent, "memory_blocks": blocks}).raise_for_status()
            history = History()
            prepare(api, history)
        for n in range(1, setup.servers):
            servers.start(n)
        started = time.monotonic()
        threads = [Client(n, servers, history, seed, started + seconds) for n in range(clients)]
        for thread in threads:
            thread.start()
        if setup.kill:
            time.sleep(seconds / 3)
            servers.kill(1)
            servers.start(1)
        for thread in threads:
            thread.join()
        violations = check(servers.urls[0], history, clients)
        servers.stop()
        code, said = servers.verify()
        if code != 0:
            violations.append(f"memvec verify exited {code}: {said}")
        return {
            "setup": setup.name,
            "seed": seed,
            "clients": clients,
            "seconds": seconds,
            "acknowledged": counts(history),
            "statuses": dict(sorted(history.statuses.items())),
            "violations": violations,
        }
    finally:
        servers.stop()
        servers.drop()


def markdown(reports: list[dict[str, Any]]) -> str:
    lines = [
        "# History check (make bench-chaos)",
        "",
        "Each setup: clients drive real servers on one store with a seeded random mix of writes; every",
        "acknowledgement is logged and the invariants of `benchmarks/chaos.py` are checked afterwards.",
        "",
        "| setup | seed | clients | s | acknowledged | statuses | violations |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        acked = ", ".join(f"{k} {v}" for k, v in r["acknowledged"].items())
        statuses = ", ".join(f"{k}: {v}" for k, v in r["statuses"].items())
        lines.append(
            f"| {r['setup']} | {r['seed']} | {r['clients']} | {r['seconds']:g} | {acked} | {statuses} | "
            f"{len(r['violations']) or 'none'} |"
        )
    problems = [f"- {r['setup']}: {v}" for r in reports for v in r["violations"]]
    return "\n".join(lines + (["", *problems] if problems else []) + [""])


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="History check of memvec servers sharing one store.")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args(argv)
    reports = []
    for setup in SETUPS:
        with tempfile.TemporaryDirectory() as root:
            reports.append(run(setup, Path(root), clients=args.clients, seconds=args.seconds, seed=args.seed))
        print(f"{setup.name}: {len(reports[-1]['violations'])} violations", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chaos.md").write_text(markdown(reports))
    (args.out / "chaos.json").write_text(json.dumps(reports, indent=2) + "\n")
    return 1 if any(r["violations"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
