"""The PostgreSQL store against the real server on 127.0.0.1:5432 (started if it is down), each test
in a fresh schema: the engine behaves as with SQLite, and two homes can share one database."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from memvec import CoreBlock, Memory, NewRecord, NotFoundError, Tier
from memvec.embed import HashingEmbedder
from memvec.store.postgres import PostgresStore
from memvec.types import AgentSettings
from tests.conftest import CLEAN_VERIFY, require_postgres, run_cli
from tests.service_helpers import Server, WriteLoad, assert_every_write_is_there

if TYPE_CHECKING:
    from tests.scripted_llm import ScriptedLLM

# the shared PostgreSQL server (make test-fast leaves these out)
pytestmark = pytest.mark.postgres

BASE_URL = os.environ.get("MEMVEC_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def ensure_postgres() -> None:
    require_postgres(BASE_URL)


@pytest.fixture
def pg_url() -> Iterator[str]:
    import psycopg

    ensure_postgres()
    schema = f"memvec_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    yield f"{BASE_URL}?options=-csearch_path%3D{schema}"
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def open_pg(home: Path, url: str) -> Memory:
    return Memory.open(home, embedder=HashingEmbedder(64), store=url)


def test_engine_on_postgres(tmp_path: Path, pg_url: str) -> None:
    with open_pg(tmp_path / "a", pg_url) as mem:
        archival = mem.archival("app")
        first = archival.insert(
            "The Eiffel tower is 330 metres tall",
            tags=["paris"],
            source_url="https://e/1",
            session_id="s1",
            turn_id=4,
            created_at=datetime(2024, 1, 5, tzinfo=UTC),
        )
        assert not archival.insert("the eiffel  tower is 330 metres tall").created
        archival.insert("Bananas are a yellow fruit", tags=["food"], created_at=datetime(2024, 2, 1, tzinfo=UTC))
        hit = archival.search("eiffel tower height", k=1)[0]
        assert (hit.id, hit.citation.turn_id, hit.citation.source_url) == (first.record.id, "4", "https://e/1")
        for mode in ("hybrid", "vector", "bm25", "token"):
            fruit = archival.search("fruit", mode=mode, tags=["food"])
            assert [h.text for h in fruit] == ["Bananas are a yellow fruit"]
            assert [h.tags for h in archival.search("tower", mode=mode, end=datetime(2024, 1, 31, tzinfo=UTC))] == [
                ["paris"]
            ]
        span = (datetime(2024, 1, 5, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC))
        assert mem._store.time_span("app", Tier.ARCHIVAL) == span
        in_february = archival.search("which fruit in February?", reference_time=datetime(2024, 3, 9, tzinfo=UTC))
        assert in_february[0].text == "Bananas are a yellow fruit" and in_february[0].scores.period is not None
        archival.delete(first.record.id)
        with pytest.raises(NotFoundError):
            archival.get(first.record.id)
        assert [h.text for h in archival.search("eiffel", mode="bm25")] == []
        core = mem.core("app")
        core.put(CoreBlock(label="human", value="Name: Ana", limit=40))
        core.append("human", "Likes tea")
        assert core.get("human").value == "Name: Ana\nLikes tea"
        mem.insert([NewRecord(agent="other", tier=Tier.RECALL, text="hello", role="user")])
        assert sorted(mem.agents()) == ["app", "other"]
        assert mem.verify().model_dump() == CLEAN_VERIFY
        assert type(mem._store).__name__ == "PostgresStore"
    assert not (tmp_path / "a" / "store.sqlite3").exists()  # the home holds only index files


def test_cli_with_a_postgres_store(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from memvec.cli import cli, run

    base = ["--home", str(tmp_path / "h"), "--model", "hash:64", "--store", pg_url]
    assert run(cli, [*base, "add", "Ana adopted a beagle", "--agent", "a", "--tier", "archival", "--turn", "7"]) == 0
    capsys.readouterr()
    assert run(cli, [*base, "search", "beagle", "--agent", "a", "--tier", "archival", "--json"]) == 0
    assert '"turn_id": "7"' in capsys.readouterr().out
    assert run(cli, [*base, "verify"]) == 0


def test_two_homes_share_one_postgres_store(tmp_path: Path, pg_url: str) -> None:
    writer, reader = open_pg(tmp_path / "server-1", pg_url), open_pg(tmp_path / "server-2", pg_url)
    reader.archival("app").search("anything")
    record = writer.archival("app").insert("written by the other server").record
    assert [h.id for h in reader.archival("app").search("other server")] == [record.id]
    writer.close()
    reader.close()
    with open_pg(tmp_path / "server-3", pg_url) as third:  # a new server builds its indexes from the store
        assert [h.id for h in third.archival("app").search("other server", mode="bm25")] == [record.id]
        assert third.verify().model_dump() == CLEAN_VERIFY


def test_export_from_sqlite_imports_into_postgres(tmp_path: Path, pg_url: str) -> None:
    with Memory.open(tmp_path / "sqlite", embedder=HashingEmbedder(64)) as source:
        source.recall("ana").append("user", "I moved to Lisbon", session_id="s", turn_id=1)
        source.archival("ana").insert("Ana likes tea", tags=["food"])
        document = source.export_agent("ana")
    with open_pg(tmp_path / "pg", pg_url) as target:
        report = target.import_agent(document)
        assert (report.passages, report.messages, report.reembedded) == (1, 1, False)
        assert target.recall("ana").search("Lisbon")[0].citation.session_id == "s"
        assert target.archival("ana").search("tea", tags=["food"])[0].text == "Ana likes tea"


def test_a_slow_writer_on_another_server_is_not_skipped(tmp_path: Path, pg_url: str) -> None:
    """Two servers write at once: the later change may commit first. A reader that catches up in
    between must still see the earlier one once it commits (change numbers follow commit order)."""
    slow, fast, reader = (open_pg(tmp_path / name, pg_url) for name in ("slow", "fast", "reader"))
    try:
        reader.archival("app").search("warm up")

        def fast_write_then_read() -> None:
            fast.archival("app").insert("the fast writer's note")
            reader.archival("app").search("anything")  # catches up past whatever has committed

        assert isinstance(slow._store, PostgresStore)
        with slow._store._write():  # hold the slow writer's transaction open
            slow.archival("app").insert("the slow writer's note")
            other = threading.Thread(target=fast_write_then_read)
            other.start()
            other.join(timeout=1.0)  # with commit-ordered changes the fast writer waits for us
        other.join(timeout=30)
        texts = {h.text for h in reader.archival("app").search("writer's note", mode="bm25")}
        assert texts == {"the slow writer's note", "the fast writer's note"}
        assert reader.verify().model_dump() == CLEAN_VERIFY
    finally:
        for mem in (slow, fast, reader):
            mem.close()


def test_two_http_servers_share_one_postgres_store_through_a_sigkill(tmp_path: Path, pg_url: str) -> None:
    """Real `memvec serve` processes on one database: writes through either are listed and found
    through both, and killing one under write load loses no acknowledged write."""
    first, second = (Server(tmp_path / name, store=pg_url).start() for name in ("one", "two"))
    try:
        assert httpx.post(f"{first.url}/v1/agents", json={"name": "ana"}).status_code == 201
        load = WriteLoad([first, second]).start()
        load.wait_for(200)
        first.kill()
        load.stop()
        first = Server(tmp_path / "one", store=pg_url).start()
        assert not load.answers, "a server answered a write with something other than 201"
        for srv in (first, second):
            assert_every_write_is_there(srv, load.acknowledged)
    finally:
        for srv in (first, second):
            srv.stop()
    for name in ("one", "two"):
        assert run_cli("--model", "hash:64", "--store", pg_url, "verify", home=tmp_path / name).returncode == 0


def test_block_history_and_undo_on_postgres(tmp_path: Path, pg_url: str) -> None:
    with open_pg(tmp_path / "a", pg_url) as mem:
        core = mem.core("ana", actor="tool:test")
        core.put(CoreBlock(label="human", value="Ana"))
        core.append("human", "Likes tea")
        assert [(c.op, c.actor) for c in core.history("human")] == [("create", "tool:test"), ("append", "tool:test")]
        undone = core.undo("human")
        assert undone is not None and undone.value == "Ana" == core.get("human").value
        assert core.history("human")[1].undone_by == core.history("human")[2].seq
        mem.delete_agent("ana")
        assert core.history() == []


def test_forget_leaves_no_row_of_postgresql_with_the_text(tmp_path: Path, pg_url: str) -> None:
    import psycopg

    with open_pg(tmp_path / "a", pg_url) as mem:
        mem.archival("ana").insert("canary-7d1e the safe code is 4242", tags=["secret"])
        mem.archival("ana").insert("an ordinary note", tags=["plain"])
        assert mem.forget("ana", tags=["secret"]) == 1
        assert [h.text for h in mem.archival("ana").search("safe code canary-7d1e", k=5)] == ["an ordinary note"]
    with psycopg.connect(pg_url) as db:
        tables = [
            r[0]
            for r in db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            ).fetchall()
        ]
        for table in tables:
            rows = db.execute(f"SELECT * FROM {table}").fetchall()
            assert not any("canary-7d1e" in str(row) for row in rows), table


def test_versions_on_postgres(tmp_path: Path, pg_url: str) -> None:
    from datetime import UTC, datetime

    with open_pg(tmp_path / "a", pg_url) as mem:
        archival = mem.archival("ana")
        first = archival.insert("Ana lives in Lisbon.", valid_from=datetime(2019, 1, 1, tzinfo=UTC)).record.id
        second = archival.update(first, "Ana lives in Berlin.", valid_from=datetime(2021, 1, 1, tzinfo=UTC)).record.id
        back = archival.update(second, "Ana lives in Lisbon.").record.id  # the old text is free again
        assert [v.id for v in archival.history(first)] == [first, second, back]
        assert [h.text for h in archival.search("where Ana lives")] == ["Ana lives in Lisbon."]
        then = archival.search("where Ana lives", as_of=datetime(2022, 1, 1, tzinfo=UTC))
        assert [h.id for h in then] == [second]
    with open_pg(tmp_path / "b", pg_url) as other:  # another server reads the same versions
        assert [r.id for r in other.archival("ana").list()] == [back]


def test_a_consolidation_run_and_its_undo_on_postgres(tmp_path: Path, pg_url: str, llm: ScriptedLLM) -> None:
    from memvec.agent.consolidate import consolidate
    from tests.test_consolidation import ana, answer_with, moved_to_berlin, snapshot

    with open_pg(tmp_path / "a", pg_url) as mem:
        lisbon = ana(mem)
        before = snapshot(mem)
        answer_with(llm, moved_to_berlin)
        run = consolidate(mem, "ana")
        assert run is not None and run.facts[0].supersedes == lisbon
    with open_pg(tmp_path / "b", pg_url) as other:  # another server sees the run and can undo it
        assert [r.id for r in other.consolidation_runs("ana")] == [run.id]
        other.undo_consolidation("ana", run.id)
        assert snapshot(other) == before


def test_an_agent_lease_on_postgres_is_one_holder_across_servers(tmp_path: Path, pg_url: str) -> None:
    from memvec.errors import AgentBusyError

    with open_pg(tmp_path / "a", pg_url) as one, open_pg(tmp_path / "b", pg_url) as two:
        with one.agent_lease("ana"), pytest.raises(AgentBusyError), two.agent_lease("ana", wait_s=0.2):
            pass
        with two.agent_lease("ana", wait_s=0.2):
            pass


def _history_shape(mem: Memory, agent: str) -> list[tuple[object, ...]]:
    """A block history with undo links as positions (seq numbers differ between homes)."""
    changes = mem.core(agent).history()
    position = {c.seq: n for n, c in enumerate(changes)}
    return [(c.label, c.changed_at, c.actor, c.op, c.old, c.new, position.get(c.undone_by or -1)) for c in changes]


def test_export_import_keeps_every_version_and_the_block_history_from_sqlite_to_postgresql_and_back(
    tmp_path: Path, pg_url: str
) -> None:
    from tests.test_versions import every_version, moves

    with Memory.open(tmp_path / "sqlite", embedder=HashingEmbedder(64)) as source:
        source.create_agent(AgentSettings(name="ana"))
        moves(source)
        source.recall("ana").append("user", "I moved to Oslo", session_id="s1", turn_id=1)
        core = source.core("ana", actor="cli")
        core.append("human", "Lives in Oslo")
        core.replace("human", "Oslo", "Bergen")
        core.undo("human")
        doc = source.export_agent("ana")
        with open_pg(tmp_path / "pg", pg_url) as middle:
            middle.import_agent(doc)
            assert every_version(middle, "ana") == every_version(source, "ana")
            assert _history_shape(middle, "ana") == _history_shape(source, "ana")
            back = middle.export_agent("ana")
        with Memory.open(tmp_path / "again", embedder=HashingEmbedder(64)) as again:
            again.import_agent(back)
            assert every_version(again, "ana") == every_version(source, "ana")
            assert _history_shape(again, "ana") == _history_shape(source, "ana")
            assert again.core("ana").undo("human") == source.core("ana").undo("human")  # undo goes on alike


def test_metrics_count_postgresql_connections(tmp_path: Path, pg_url: str) -> None:
    from fastapi.testclient import TestClient
    from prometheus_client.parser import text_string_to_metric_families

    from memvec.service.app import create_app

    with (
        open_pg(tmp_path / "home", pg_url) as mem,
        TestClient(create_app(mem, allowed_hosts=frozenset({"testserver"}))) as client,
    ):
        client.post("/v1/agents/ana/archival-memory", json={"text": "kept"})
        found = {
            s.name: s.value
            for family in text_string_to_metric_families(client.get("/metrics").text)
            for s in family.samples
        }
    assert found["memvec_store_connections_opened_total"] >= 1
    assert found["memvec_store_connections_failed_total"] == 0 and found["memvec_store_connections_lost_total"] == 0


def test_documents_on_postgres(tmp_path: Path, pg_url: str) -> None:
    with open_pg(tmp_path / "a", pg_url) as mem:
        first = mem.add_document("app", "notes.md", "# Notes\n\nThe pump is primed on Mondays.\n")
        assert not mem.add_document("app", "again.md", "# Notes\n\nThe pump is primed on Mondays.\n").created
        second = mem.add_document("app", "notes.md", "# Notes\n\nThe pump is primed on Fridays.\n")
        assert second.replaced == first.document.id
        hit = mem.archival("app").search("when is the pump primed", k=1)[0]
        assert hit.citation.document is not None and hit.citation.document.document_id == second.document.id
        assert hit.citation.document.headings == ["Notes"]
    with open_pg(tmp_path / "b", pg_url) as other:  # another server sees the file and deletes it everywhere
        assert [d.id for d in other.documents("app").list()] == [second.document.id]
        assert other.documents("app").delete(second.document.id) == 2
        assert other.archival("app").count() == 0


def test_a_periods_scope_is_an_index_only_scan_on_postgres(tmp_path: Path, pg_url: str) -> None:
    """PostgreSQL's twin of tests/test_store_plans.py: the covering index holds every column the read needs."""
    from tests.test_store_plans import MARCH, scope_sql

    store = PostgresStore(pg_url)
    try:
        sql, params = scope_sql(store.clock())
        with store._connection() as db:
            # a year of records, a day apart, and the planner's statistics of them
            db.execute(
                "INSERT INTO records (agent, tier, text, dedup_key, created_at) "
                "SELECT 'a', 'archival', 'n' || day, 'k' || day, to_char(TIMESTAMP '2026-01-01' + day * INTERVAL "
                "'1 day', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM generate_series(0, 364) AS day"
            )
            db.execute("VACUUM ANALYZE records")
            # Whether the planner prefers the index-only scan to a bitmap scan depends on the visibility map,
            # which VACUUM cannot set while another session's transaction is open (tests share the cluster).
            # With sequential and bitmap scans priced out it weighs an index scan against an index-only one,
            # and picks the index-only scan whenever the index covers the read.
            with db.transaction():
                for scan in ("seqscan", "bitmapscan"):
                    db.execute(f"SET LOCAL enable_{scan} = off")
                plan = " ".join(row["QUERY PLAN"] for row in db.execute(f"EXPLAIN {store._sql(sql)}", params))
        assert len(store.filter_ids("a", Tier.ARCHIVAL, MARCH)) == 31  # March 1 to 31, midnight each
        assert "Index Only Scan using records_by_time_and_validity" in plan, plan
    finally:
        store.close()


def test_conversations_on_postgres(tmp_path: Path, pg_url: str) -> None:
    with open_pg(tmp_path / "home", pg_url) as mem:
        mem.create_agent(AgentSettings(name="bot"))
        made = mem.conversations().create("bot", summary="on postgres")
        mem.thread("bot", made.id).write(AgentSettings(name="bot"), made.state.model_copy(update={"turn": 3}))
        assert mem.conversations().describe(made.id, summary=None, model="openai/x").model == "openai/x"
        found = mem.conversations().get(made.id)
        assert (found.summary, found.state.turn, found.last_message_at is not None) == (None, 3, True)
        assert [c.id for c in mem.conversations().list(["bot"])] == [made.id]
        mem.delete_agent("bot")
        with pytest.raises(NotFoundError):
            mem.conversations().get(made.id)


def test_a_server_starting_on_a_current_schema_waits_for_no_lock_a_running_server_holds(pg_url: str) -> None:
    """A rolling restart: a running server's write holds a lock on `records` while another server starts.
    Re-running the schema's `ALTER TABLE`s would queue behind it (and deadlock with its next statement)."""
    import psycopg

    PostgresStore(pg_url).close()  # the first server migrated
    opened: list[PostgresStore] = []
    starting = threading.Thread(target=lambda: opened.append(PostgresStore(pg_url)), daemon=True)
    with psycopg.connect(pg_url) as running:
        running.execute("LOCK TABLE records IN ROW EXCLUSIVE MODE")  # what an insert's transaction holds
        starting.start()
        starting.join(timeout=15)
        assert opened, "the starting server waited for the running server's transaction"
        running.rollback()
    opened[0].close()


def test_a_schema_recorded_by_another_release_is_migrated_again(pg_url: str) -> None:
    import psycopg

    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("DROP INDEX records_by_session")
        db.execute("UPDATE memvec_meta SET value = 'an older schema' WHERE key = 'schema_sha256'")
    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as db:
        assert db.execute("SELECT to_regclass('records_by_session')").fetchone() == ("records_by_session",)
        digest = db.execute("SELECT value FROM memvec_meta WHERE key = 'schema_sha256'").fetchone()
    assert digest is not None and digest[0] != "an older schema"
