"""PostgreSQL going away under real `memvec serve` processes: requests fail fast with 503 while it
is down, both servers heal by themselves when it is back, no acknowledged write is lost, and a
server started while it is down comes up when it returns. The server these stop is one of their own
(tests.private_postgres), so the suite's shared server keeps serving the tests running beside them."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from memvec.errors import StoreUnavailableError
from memvec.store.postgres import PostgresStore
from memvec.types import Tier
from tests.private_postgres import PrivatePostgres
from tests.service_helpers import Server, WriteLoad, assert_every_write_is_there

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def database() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres().create()
    yield server
    server.remove()


@pytest.fixture
def pg_url(database: PrivatePostgres) -> Iterator[str]:
    """A fresh schema of the private server, which is running again when the test ends."""
    import psycopg

    schema = f"memvec_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database.url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    yield f"{database.url}?options=-csearch_path%3D{schema}"
    database.ensure_running()  # whatever state the test left it in


def wait_healthy(servers: list[Server], timeout: float = 60) -> float:
    """Seconds until every server's /v1/health says ok again."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if all(httpx.get(f"{s.url}/v1/health", timeout=5).status_code == 200 for s in servers):
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError("the servers did not recover by themselves")


def wait_for_log(srv: Server, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in (srv.log_path.read_text() if srv.log_path.exists() else ""):
        assert time.monotonic() < deadline, f"{text!r} never appeared in the server's log"
        time.sleep(0.1)


def assert_down_answers(srv: Server) -> None:
    """While the database is down: 503 with Retry-After and a JSON error, not a hang (the client's
    timeout is a liveness bound, far above the 3 s store timeout; latency belongs to benchmarks)."""
    search = httpx.get(f"{srv.url}/v1/agents/ana/archival-memory/search", params={"query": "durable"}, timeout=30)
    assert search.status_code == 503, search.text
    assert search.headers["retry-after"] == "1" and search.json()["error"] == "store_unavailable"
    health = httpx.get(f"{srv.url}/v1/health", timeout=30)
    assert health.status_code == 503 and health.json()["status"] == "unavailable"
    assert health.json()["store_ok"] is False
    page = httpx.get(f"{srv.url}/ui/health", timeout=30)  # the memory browser says so too, as a page
    assert page.status_code == 503 and "unreachable" in page.text and "<html" in page.text
    agents = httpx.get(f"{srv.url}/ui/agents", timeout=30)
    assert agents.status_code == 503 and "store unavailable" in agents.text and "<html" in agents.text


def test_a_restart_under_write_load_through_two_servers(tmp_path: Path, pg_url: str, database: PrivatePostgres) -> None:
    first, second = (Server(tmp_path / name, store=pg_url).start() for name in ("one", "two"))
    try:
        assert httpx.post(f"{first.url}/v1/agents", json={"name": "ana"}).status_code == 201
        load = WriteLoad([first, second], writers_per_server=3).start()
        load.wait_for(100)
        database.stop()
        down_at = time.monotonic()
        for srv in (first, second):
            assert_down_answers(srv)
        time.sleep(1)
        database.start()
        up_at = time.monotonic()
        healed_in = wait_healthy([first, second])  # raises if they never recover by themselves
        print(f"both servers healthy {healed_in:.2f} s after PostgreSQL started")
        before = load.acknowledged_count()
        load.wait_for(before + 50, timeout=60)  # writes are acknowledged again through both
        load.stop()
        during = [status for when, status, _ in load.answers if when < up_at]
        after = [status for when, status, _ in load.answers if when >= up_at + healed_in]
        assert set(during) <= {503}, f"the outage must answer 503 only, got {sorted(set(during))}"
        assert any(when >= down_at for when, _, _ in load.answers), "writes during the outage were refused"
        assert after == [], "once healthy, every write is acknowledged"
        assert_every_write_is_there(first, [a for i, a in enumerate(load.acknowledged) if i % 2], every=7)
        assert_every_write_is_there(second, [a for i, a in enumerate(load.acknowledged) if not i % 2], every=7)
    finally:
        for srv in (first, second):
            srv.stop()
    for srv in (first, second):
        log = srv.log_path.read_text()
        assert "Traceback" not in log and "Internal Server Error" not in log, log[-3000:]


def test_a_server_started_while_postgres_is_down_comes_up_when_it_returns(
    tmp_path: Path, pg_url: str, database: PrivatePostgres
) -> None:
    database.stop()
    srv = Server(tmp_path / "late", store=pg_url)
    starting = threading.Thread(target=srv.start, kwargs={"timeout": 120})
    starting.start()
    wait_for_log(srv, "retrying in 2 s")  # it has found the store down twice and keeps waiting
    assert starting.is_alive(), "the server must wait for the store, not give up"
    database.start()
    starting.join(timeout=120)
    try:
        assert httpx.get(f"{srv.url}/v1/health", timeout=10).json()["status"] == "ok"
        assert httpx.post(f"{srv.url}/v1/agents", json={"name": "ana"}).status_code == 201
    finally:
        srv.stop()
    assert "the store is unavailable" in srv.log_path.read_text()


def test_no_wait_exits_with_its_own_code_and_message(tmp_path: Path, pg_url: str, database: PrivatePostgres) -> None:
    from tests.conftest import run_cli

    database.stop()
    for args in (["serve", "--no-wait-for-store"], ["stats"]):
        result = run_cli("--model", "hash:64", "--store", pg_url, *args, home=tmp_path / "h", check=False)
        assert result.returncode == 4, result.stderr
        assert "the store is unavailable" in result.stderr and "Traceback" not in result.stderr


def test_a_lost_connection_heals_and_a_repeated_insert_is_not_a_copy(pg_url: str, database: PrivatePostgres) -> None:
    """Every connection of the store is killed by the server (as a failover does): the next read
    and write work on fresh connections; inserting the same rows again (what a retry after a commit
    whose answer was lost does) returns the same ids and logs no second change."""
    import numpy as np
    import psycopg

    from memvec.store import PreparedRecord
    from memvec.types import NewRecord

    store = PostgresStore(pg_url, timeout=3)
    try:
        records = [NewRecord(agent="a", tier=Tier.ARCHIVAL, text=f"note {i}") for i in range(3)]
        rows = [
            PreparedRecord(
                record=r,
                dedup_key=r.dedup_key(),
                created_at=datetime.now(UTC),
                embedding=np.ones(8, dtype=np.float32),
                model_id="hash:8",
            )
            for r in records
        ]
        first = store.insert(rows)
        with psycopg.connect(database.url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND datname = current_database()"
            )
        assert store.count("a", Tier.ARCHIVAL) == 3  # read on a fresh connection
        again = store.insert(rows)
        assert [i for i, _ in again] == [i for i, _ in first] and not any(created for _, created in again)
        assert len(store.changes_since("a", Tier.ARCHIVAL, 0)) == 3
        assert store.healthy()
    finally:
        store.close()


def test_the_store_reports_unavailable_instead_of_hanging(pg_url: str, database: PrivatePostgres) -> None:
    store = PostgresStore(pg_url, timeout=2)
    try:
        database.stop()
        with pytest.raises(StoreUnavailableError):
            store.count("a", Tier.ARCHIVAL)  # an error, not a hang
        assert not store.healthy()
        database.start()
        deadline = time.monotonic() + 30
        while not store.healthy() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert store.count("a", Tier.ARCHIVAL) == 0
    finally:
        store.close()
