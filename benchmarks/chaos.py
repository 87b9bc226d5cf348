"""A history checker for memvec servers sharing one store (Jepsen-style, #34): several clients drive
real `memvec serve` processes with a seeded random mix of writes (messages with the same and
distinct texts, passage inserts, PATCHes and forgets, block edits and undos), every acknowledgement
is logged, and afterwards the invariants are checked on the history and the store:

- every acknowledged message record is stored exactly once, and turn ids are unique per agent;
- every acknowledged passage is current (or superseded by a later version of its own chain), each
  chain has exactly one current version, and nothing an acknowledged forget took comes back, in
  the list, the history or a search;
- every acknowledged block edit and undo is in the block's history exactly once;
- no answer was a 5xx; `memvec verify` is clean once the servers have stopped.

Setups: two servers on one SQLite home, `serve --workers 2`, two servers on one PostgreSQL database,
and two servers with one killed by SIGKILL mid-run (and started again). `make bench-chaos` runs them
longer and writes benchmarks/results/chaos.md; tests/test_chaos.py runs them briefly.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.load import free_port, wait_healthy

AGENTS = ("log-a", "log-b")
SAME_TEXTS = ("ok", "thanks!", "see you tomorrow")  # sent by many clients at once: must never merge
OPS = ("message", "message", "insert", "insert", "patch", "forget", "block", "undo")
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
)


@dataclass
class History:
    """What the clients were told: acknowledgements by kind, every status, the 5xx answers."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # recorded passages of acked messages
    chains: dict[str, dict[str, Any]] = field(default_factory=dict)  # "client:n" -> current id, forgotten, unsure
    forgotten: list[tuple[int, str, str]] = field(default_factory=list)  # (id, agent, text) of acked forgets
    block_edits: list[tuple[str, str, str]] = field(default_factory=list)  # (agent, label, value)
    undos: Counter[tuple[str, str]] = field(default_factory=Counter)
    # undos sent and never answered (a killed server): each may have committed or not
    undos_unsure: Counter[tuple[str, str]] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


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


class Client(threading.Thread):
    """One client: a seeded sequence of operations against a random live server until the deadline."""

    def __init__(self, n: int, servers: Servers, history: History, seed: int, deadline: float) -> None:
        super().__init__(name=f"chaos-client-{n}", daemon=True)
        self.n, self.servers, self.history, self.deadline = n, servers, history, deadline
        self.rng = random.Random(seed * 1000 + n)
        self.label = f"c{n}"
        self.mine: list[str] = []  # this client's passage chains, by key in history.chains
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
            missing = min(_counts(self.history).values()) == 0
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
        response = http.post(f"{url}/v1/agents/{agent}/archival-memory", json={"text": text, "tags": [self.label]})
        key = f"{self.n}:{step}"
        with self.history.lock:  # unsure until acknowledged: a kill may have committed it unanswered
            self.history.chains[key] = {"agent": agent, "current": None, "text": text, "unsure": True}
        if self._answer(response, "insert"):
            with self.history.lock:
                self.history.chains[key].update(current=int(response.json()[0]["id"]), unsure=False)
            self.mine.append(key)

    def _chain(self) -> dict[str, Any] | None:
        live = [k for k in self.mine if self.history.chains[k]["current"] and not self.history.chains[k].get("gone")]
        return self.history.chains[self.rng.choice(live)] if live else None

    def _patch(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        chain = self._chain()
        if chain is None:
            return
        text = f"{chain['text']} v{step}"
        chain["unsure"] = True
        response = http.patch(
            f"{url}/v1/agents/{chain['agent']}/archival-memory/{chain['current']}", json={"text": text}
        )
        if self._answer(response, "patch"):
            chain.update(current=int(response.json()[0]["id"]), unsure=False, text=text)

    def _forget(self, http: httpx.Client, url: str, agent: str, step: int) -> None:
        chain = self._chain()
        if chain is None:
            return
        chain["unsure"] = True
        response = http.post(f"{url}/v1/agents/{chain['agent']}/forget", json={"ids": [chain["current"]]})
        if self._answer(response, "forget"):
            chain.update(gone=True, unsure=False)
            with self.history.lock:
                self.history.forgotten.append((chain["current"], chain["agent"], chain["text"]))

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


def run(setup: Setup, root: Path, *, clients: int = 6, seconds: float = 8.0, seed: int = 1) -> dict[str, Any]:
    """Drive the setup, then check the history; returns the report (violations empty when it held)."""
    servers = Servers(setup, root)
    try:
        servers.start(0)
        with httpx.Client(base_url=servers.urls[0], timeout=60) as api:
            blocks = [{"label": f"c{n}", "value": "", "limit": 5000} for n in range(clients)]
            for agent in AGENTS:
                api.post("/v1/agents", json={"name": agent, "memory_blocks": blocks}).raise_for_status()
        for n in range(1, setup.servers):
            servers.start(n)
        history, started = History(), time.monotonic()
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
            "acknowledged": _counts(history),
            "statuses": dict(sorted(history.statuses.items())),
            "violations": violations,
        }
    finally:
        servers.stop()
        servers.drop()


def _counts(history: History) -> dict[str, int]:
    return {
        "message records": len(history.messages),
        "passages": sum(1 for c in history.chains.values() if not c["unsure"]),
        "forgets": len(history.forgotten),
        "block edits": len(history.block_edits),
        "undos": sum(history.undos.values()),
    }


def check(url: str, history: History, clients: int) -> list[str]:
    """The invariants (see the module) on what the store holds now."""
    with httpx.Client(base_url=url, timeout=60) as api:
        return (
            [f"a 5xx answer: {error}" for error in history.server_errors[:20]]
            + _check_messages(api, history)
            + _check_passages(api, history)
            + _check_blocks(api, history)
        )


def _check_messages(api: httpx.Client, history: History) -> list[str]:
    problems = []
    for agent in AGENTS:
        stored = _all_pages(api, f"/v1/agents/{agent}/messages", {"order": "asc"})
        ids = Counter(m["id"] for m in stored)
        turns = Counter(m["citation"]["turn_id"] for m in stored)
        problems += [f"{agent}: turn id {t} given {n} times" for t, n in turns.items() if n > 1]
        by_id = {m["id"]: m for m in stored}
        for acked in (m for m in history.messages if m["agent"] == agent):
            if ids[acked["id"]] != 1 or by_id[acked["id"]]["content"] != acked["sent"]:
                problems.append(
                    f"{agent}: acknowledged message {acked['id']} ({acked['sent']!r}) is stored "
                    f"{ids[acked['id']]} times"
                )
            if not acked["created"]:
                problems.append(f"{agent}: message {acked['id']} was acknowledged as not created")
        acked_ids = [m["id"] for m in history.messages if m["agent"] == agent]
        problems += [
            f"{agent}: record {i} acknowledged for two messages" for i, n in Counter(acked_ids).items() if n > 1
        ]
    return problems


def _check_passages(api: httpx.Client, history: History) -> list[str]:
    problems = []
    current = {agent: _current_ids(api, agent) for agent in AGENTS}
    for chain in history.chains.values():
        if chain["unsure"] or chain["current"] is None or chain.get("gone"):
            continue
        versions = api.get(f"/v1/agents/{chain['agent']}/archival-memory/{chain['current']}/history")
        if versions.status_code != 200:
            problems.append(f"acknowledged passage {chain['current']} is gone ({versions.status_code})")
            continue
        open_versions = [int(v["id"]) for v in versions.json() if v["valid_to"] is None]
        if open_versions != [chain["current"]] or chain["current"] not in current[chain["agent"]]:
            problems.append(
                f"passage {chain['current']}: current versions {open_versions}, listed: "
                f"{chain['current'] in current[chain['agent']]}"
            )
    for record_id, agent, text in history.forgotten:
        if record_id in current[agent]:
            problems.append(f"forgotten passage {record_id} is listed again")
        found = api.get(f"/v1/agents/{agent}/archival-memory/search", params={"query": text, "mode": "bm25"})
        if found.status_code == 200 and any(int(h["id"]) == record_id for h in found.json().get("results", [])):
            problems.append(f"forgotten passage {record_id} is found by search")
    return problems


def _current_ids(api: httpx.Client, agent: str) -> set[int]:
    return {int(p["id"]) for p in _all_pages(api, f"/v1/agents/{agent}/archival-memory", {})}


def _all_pages(api: httpx.Client, path: str, params: dict[str, str]) -> list[dict[str, Any]]:
    """Every item of a cursor-paged listing, oldest first."""
    items: list[dict[str, Any]] = []
    while page := api.get(
        path, params={**params, "limit": 1000, **({"after": items[-1]["id"]} if items else {})}
    ).json():
        items += page
    return items


def _check_blocks(api: httpx.Client, history: History) -> list[str]:
    problems = []
    edits = Counter(history.block_edits)
    for agent, label in (
        {(a, lab) for a, lab, _ in history.block_edits} | set(history.undos) | set(history.undos_unsure)
    ):
        changes = api.get(f"/v1/agents/{agent}/core-memory/blocks/{label}/history").json()
        logged = Counter((agent, label, c["new"]["value"]) for c in changes if c["op"] != "undo" and c["new"])
        for edit, count in edits.items():
            if edit[:2] == (agent, label) and logged[edit] != count:
                problems.append(f"block edit {edit} acknowledged {count} times, in the history {logged[edit]}")
        undone = sum(1 for c in changes if c["op"] == "undo")
        acknowledged, unsure = history.undos[(agent, label)], history.undos_unsure[(agent, label)]
        if not acknowledged <= undone <= acknowledged + unsure:
            problems.append(
                f"{agent}/{label}: {acknowledged} undos acknowledged ({unsure} unanswered), {undone} logged"
            )
    return problems


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
