"""Three `memvec serve` on one PostgreSQL behind a real nginx configured by `memvec router-config`
(benchmarks/cluster.py): each agent on one server, a server killed with SIGKILL under mixed load, a
rolling restart. Without nginx these tests skip with how to install it; under CI=true they fail."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from benchmarks import cluster, cluster_load
from memvec.errors import InvalidInputError
from memvec.service.listener import stop_admitting
from memvec.service.nginx import nginx_config
from memvec.service.server import _start_worker
from tests.conftest import require_postgres, run_cli, unavailable
from tests.service_helpers import Server

PG = os.environ.get("MEMVEC_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
DEPLOYMENT = Path(__file__).resolve().parents[1] / "docs" / "deployment.md"
DOCUMENTED = (["10.0.0.11:8283", "10.0.0.12:8283", "10.0.0.13:8283"], "80")
PACE_S = 0.05  # seconds between one load client's requests


def require_nginx() -> None:
    require_postgres(PG)
    if shutil.which("nginx"):
        return
    message = "Debian's nginx is not installed: `apt-get install -y nginx` (the routed-deployment tests run it)"
    unavailable(message)


@pytest.mark.slow
def test_the_documented_nginx_file_is_the_generated_one(tmp_path: Path) -> None:
    blocks = re.findall(r"```nginx\n(.*?)```", DEPLOYMENT.read_text(), flags=re.S)
    upstreams, listen = DOCUMENTED
    assert blocks == [nginx_config(upstreams, listen=listen)]
    args = [a for u in upstreams for a in ("--upstream", u)]
    assert run_cli("router-config", *args, "--listen", listen, home=tmp_path).stdout == blocks[0]


@pytest.mark.parametrize(
    "upstreams, listen",
    [
        ([], "80"),
        (["10.0.0.1"], "80"),
        (["10.0.0.1:0"], "80"),
        (["a b:80"], "80"),
        (["10.0.0.1:80"], "99999"),
        (["10.0.0.1:80;}"], "80"),
        (["10.0.0.1:80"], "80; include x"),
    ],
)
def test_router_config_refuses_what_is_not_host_and_port(upstreams: list[str], listen: str) -> None:
    with pytest.raises(InvalidInputError):
        nginx_config(upstreams, listen=listen)


@pytest.mark.postgres
def test_each_agent_is_served_by_one_server_through_the_router() -> None:
    require_nginx()
    with cluster.running_cluster(PG, size=2) as running:
        # the ring is laid out by the servers' addresses (free ports, new each run): with 9 agents all of
        # them fell on one server about once in a hundred runs; with 24, about once in 10^5 (at 60/40)
        agents = cluster_load.setup_agents(running.url, 24)
        owners = {agent: running.owner(agent) for agent in agents}
        assert len({id(o) for o in owners.values()}) == 2  # the ring spreads the agents over both servers
        for agent in agents:  # again: the same server, nothing loaded anywhere else
            before = [cluster._loaded(m) for m in running.members]
            httpx.get(
                f"{running.url}/v1/agents/{agent}/recall-memory/search", params={"query": "again"}, timeout=30
            ).raise_for_status()
            assert [cluster._loaded(m) for m in running.members] == before


@pytest.mark.postgres
def test_a_killed_server_loses_no_acknowledged_write_and_applies_nothing_twice() -> None:
    require_nginx()
    # `make bench-cluster` runs three servers flat out; here each client paces itself so the test does not
    # take the cores from the tests beside it (a kill or a drain meets requests in flight either way)
    found = cluster.server_loss(PG, agents=6, seconds=6.0, servers=2, pause_s=PACE_S)
    assert found["moved_agents"] >= 1 and found["moved_answered"] == found["moved_agents"], found
    assert found["acknowledged_inserts"] > 20 and found["lost"] == 0 and found["stored_twice"] == 0, found
    assert found["failed_not_retryable"] == 0, found  # in flight on the dead server: 502, which a client retries
    assert found["failed_by_kind"]["search"] == 0, found  # a search is retried by the router itself


@pytest.mark.postgres
def test_a_rolling_restart_fails_no_request() -> None:
    require_nginx()
    found = cluster.rolling_restart(PG, agents=6, drain_s=1.0, servers=2, pause_s=PACE_S)
    assert found["health_503_while_draining"], found
    assert found["requests"] > 50 and found["failed"] == 0, json.dumps(found, indent=1)
    assert found["lost"] == 0 and found["stored_twice"] == 0, found


@pytest.mark.slow
def test_sigterm_with_drain_reports_draining_keeps_serving_then_saves_and_exits(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", serve_args=["--drain-seconds", "2"]).start()
    with httpx.Client(base_url=server.url, timeout=30) as api:
        assert api.post("/v1/agents", json={"name": "ana"}).status_code == 201
        assert api.post("/v1/agents/ana/archival-memory", json={"text": "kept across the restart"}).status_code == 201
        assert server.process is not None
        stopping = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        health = api.get("/v1/health")
        assert health.status_code == 503 and health.json()["status"] == "draining", health.text
        assert health.headers["retry-after"] == "1"
        search = api.get("/v1/agents/ana/archival-memory/search", params={"query": "kept"})
        assert search.status_code == 200 and search.json()["count"] == 1  # still serving while draining
        server.process.wait(timeout=30)
        assert time.monotonic() - stopping >= 1.5
    checked = json.loads(run_cli("verify", "--json", home=tmp_path / "home").stdout)
    assert checked["problems"] == [] and checked["behind"] == []  # the indexes were saved before it exited


def worker_pids(parent: int) -> set[int]:
    """The supervisor's worker processes (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return {int(pid) for pid in children if b"spawn_main" in _cmdline(int(pid))}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone meanwhile
        return b""


@pytest.mark.slow
def test_workers_share_one_port_and_one_home_and_stop_together(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", serve_args=["--workers", "2"]).start()
    try:
        _check_workers(server, tmp_path)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_worker_that_cannot_start_again_is_retried_while_the_other_serves(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("worker-key-0123456789\n")
    server = Server(tmp_path / "home", serve_args=["--workers", "2", "--keys-file", str(keys)]).start()
    assert server.process is not None
    try:
        deadline = time.monotonic() + 60  # both listening: each has read the key file (not only started)
        while server.log_path.read_text().count("listening on") < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        workers = worker_pids(server.process.pid)
        assert len(workers) == 2, server.log_path.read_text()[-3000:]
        keys.write_text("short\n")  # a worker started now stops at once: the key file is refused
        os.kill(min(workers), signal.SIGKILL)
        deadline = time.monotonic() + 60
        while "starting it again in 2 s" not in server.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        log = server.log_path.read_text()
        assert "starting it again in 2 s" in log and server.process.poll() is None, log[-3000:]
        assert httpx.get(f"{server.url}/v1/health", timeout=30).status_code == 200  # the other worker serves
        keys.write_text("worker-key-0123456789\n")
        deadline = time.monotonic() + 60  # two workers listened at the start; a third means one came back
        while server.log_path.read_text().count("listening on") < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        now = worker_pids(server.process.pid)
        assert len(now) == 2 and now != workers, server.log_path.read_text()[-3000:]
        with httpx.Client(base_url=server.url, timeout=30) as api:
            assert api.get("/v1/agents", headers={"Authorization": "Bearer worker-key-0123456789"}).status_code == 200
    finally:
        server.stop()


def _check_workers(server: Server, tmp_path: Path) -> None:
    assert server.process is not None
    deadline = time.monotonic() + 60
    while len(workers := worker_pids(server.process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(workers) == 2, workers
    with httpx.Client(base_url=server.url, timeout=30) as api:
        assert api.post("/v1/agents", json={"name": "ana"}).status_code == 201
    for n in range(30):  # a new connection each time: the kernel spreads them over both workers
        with httpx.Client(base_url=server.url, timeout=30) as api:
            text = f"note {n} written through one worker"
            assert api.post("/v1/agents/ana/archival-memory", json={"text": text}).status_code == 201
        with httpx.Client(base_url=server.url, timeout=30) as api:  # read back, maybe through the other worker
            hits = api.get("/v1/agents/ana/archival-memory/search", params={"query": text, "top_k": 1}).json()
            assert hits["results"][0]["content"] == text
    os.kill(next(iter(workers)), signal.SIGKILL)  # a worker that dies is started again
    deadline = time.monotonic() + 60
    while (
        len(worker_pids(server.process.pid)) < 2 or worker_pids(server.process.pid) == workers
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    final = worker_pids(server.process.pid)
    assert len(final) == 2 and final != workers, server.log_path.read_text()[-3000:]
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) in (0, -signal.SIGTERM)
    assert not any(Path(f"/proc/{pid}").exists() for pid in final)  # every worker stopped with it
    checked = json.loads(run_cli("verify", "--json", home=tmp_path / "home").stdout)
    assert checked["problems"] == []


@pytest.mark.slow
def test_a_draining_server_closes_without_cutting_a_request_it_let_in(tmp_path: Path) -> None:
    """Clients opening a new connection for every insert while the server drains and closes: each
    request is answered, or its connection is refused before anything was sent (safe to send
    elsewhere, as nginx does); none is reset after it was sent, which a client cannot safely retry.
    Before it closes, the server stops admitting: a connection attempt then goes unanswered (it
    would have been let in and then reset, about one run in three here)."""
    server = Server(tmp_path / "home", serve_args=["--drain-seconds", "0.5"]).start()
    with httpx.Client(base_url=server.url, timeout=30) as api:
        assert api.post("/v1/agents", json={"name": "ana"}).status_code == 201
    outcomes: list[tuple[str, str]] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=_insert_on_new_connections, args=(server.url, n, stop, outcomes), daemon=True)
        for n in range(16)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60  # writes under way, however slow the machine, before the signal
    while _acknowledged(outcomes) < ENOUGH_WRITES_BEFORE_STOP and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.process is not None
    server.process.send_signal(signal.SIGTERM)
    attempts = _connection_attempts_until_exit(server)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert "unanswered" in attempts and attempts[-1] == "refused", attempts
    kinds = {kind for kind, _ in outcomes}
    assert kinds <= {"status 201", "refused"}, sorted(kinds)
    assert _acknowledged(outcomes) >= ENOUGH_WRITES_BEFORE_STOP
    acknowledged = {text for kind, text in outcomes if kind == "status 201"}
    listed = run_cli("list", "--agent", "ana", "--tier", "archival", "--limit", "10000", home=tmp_path / "home")
    assert acknowledged <= {json.loads(line)["text"] for line in listed.stdout.splitlines()}


ENOUGH_WRITES_BEFORE_STOP = 24


def _acknowledged(outcomes: list[tuple[str, str]]) -> int:
    return sum(kind == "status 201" for kind, _ in list(outcomes))


def _insert_on_new_connections(url: str, writer: int, stop: threading.Event, outcomes: list[tuple[str, str]]) -> None:
    sent = 0
    while not stop.is_set():
        text = f"writer {writer} passage {sent}"
        sent += 1
        try:  # a new connection each time, as nginx opens one per request
            response = httpx.post(f"{url}/v1/agents/ana/archival-memory", json={"text": text}, timeout=10)
            outcomes.append((f"status {response.status_code}", text))
        except (httpx.ConnectError, httpx.ConnectTimeout):
            outcomes.append(("refused", text))
        except httpx.TransportError as exc:
            outcomes.append((f"cut: {exc!r}", text))


def _connection_attempts_until_exit(server: Server) -> list[str]:
    """What a new connection attempt met every few milliseconds from the stop signal until the
    process exited, and once after (changes only)."""
    assert server.process is not None
    attempts: list[str] = []
    while True:
        exited = server.process.poll() is not None
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=0.05).close()
            outcome = "admitted"
        except TimeoutError:
            outcome = "unanswered"
        except ConnectionRefusedError:
            outcome = "refused"
        if not attempts or attempts[-1] != outcome:
            attempts.append(outcome)
        if exited:
            return attempts
        time.sleep(0.01)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="socket filters are Linux's")
def test_a_listener_that_stops_admitting_still_hands_over_what_it_let_in() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as early:
            early.sendall(b"sent before")
            assert stop_admitting([listener])
            with pytest.raises(TimeoutError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2)
            accepted, _ = listener.accept()
            with accepted:
                assert accepted.recv(64) == b"sent before"
    with pytest.raises(ConnectionRefusedError):  # closed: refused at once, nginx's cue for the next server
        socket.create_connection(("127.0.0.1", port), timeout=2)


@pytest.mark.slow
def test_verify_on_a_member_that_never_served_an_agent_says_not_loaded(tmp_path: Path) -> None:
    """Two homes on one store stand for two cluster members: the one that never loaded an agent's
    index reports it as not loaded (exit 0), not as broken; --repair builds it."""
    from memvec import Memory
    from memvec.embed import HashingEmbedder

    with Memory.open(tmp_path / "served", embedder=HashingEmbedder(64)) as mem:
        mem.archival("ana").insert("a passage only the other member loaded")
    store = tmp_path / "served" / "store.sqlite3"
    member = tmp_path / "member"
    member.mkdir()
    shutil.copy(store, member / "store.sqlite3")
    checked = run_cli("--model", "hash:64", "verify", "--json", home=member)
    report = json.loads(checked.stdout)
    assert report["ok"] and report["problems"] == [] and report["not_loaded"] == [{"agent": "ana", "tier": "archival"}]
    repaired = json.loads(run_cli("--model", "hash:64", "verify", "--repair", "--json", home=member).stdout)
    assert repaired["ok"] and repaired["not_loaded"] == []


def test_a_worker_the_system_will_not_start_is_tried_again_later(caplog: pytest.LogCaptureFixture) -> None:
    class Refused:
        def start(self) -> None:
            raise OSError(24, "Too many open files")

    started, restarts = [0.0], [1]
    before = time.monotonic()
    _start_worker(0, Refused(), started, restarts)  # no exception: the supervisor goes on
    assert restarts == [2] and started[0] >= before + 2.0
    assert "could not be started" in caplog.text and "trying again in 2 s" in caplog.text
