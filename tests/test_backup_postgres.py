"""The documented PostgreSQL backup (docs/operations.md): `pg_dump --format=custom -n SCHEMA`, then
`pg_restore` into an empty database and `memvec verify --repair` on a server home; the restored
store holds everything an export shows (every version, block history, consolidation runs, expiry)
and answers the same searches."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from memvec import Memory
from memvec.cli import cli, run
from tests.conftest import unavailable
from tests.scripted_llm import ScriptedLLM
from tests.test_backup import everything, fake, lived_in
from tests.test_postgres import BASE_URL, pg_url  # noqa: F401 - the fixture

pytestmark = pytest.mark.postgres  # the shared server (make test-fast leaves these out)


def schema_of(url: str) -> str:
    options = parse_qs(urlsplit(url).query)["options"][0]
    return options.split("search_path=")[1]


def test_pg_dump_and_pg_restore_keep_everything(
    tmp_path: Path,
    pg_url: str,  # noqa: F811
    llm: ScriptedLLM,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import psycopg

    if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
        unavailable("PostgreSQL's client tools (pg_dump, pg_restore) are not installed")
    with Memory.open(tmp_path / "server-a", embedder=fake(), store=pg_url) as mem:
        lived_in(mem, llm)
        before = everything(mem)
        searched = [h.id for h in mem.archival("bo").search("locker code", k=3)]
    dump, schema = tmp_path / "memvec.dump", schema_of(pg_url)
    subprocess.run(
        ["pg_dump", "--format=custom", "-d", BASE_URL, "-n", schema, "-f", str(dump)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    database = f"memvec_restore_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    restored = BASE_URL.rsplit("/", 1)[0] + f"/{database}"
    try:
        subprocess.run(["pg_restore", "-d", restored, str(dump)], check=True, capture_output=True, timeout=120)
        restored_url = f"{restored}?options=-csearch_path%3D{schema}"
        home = tmp_path / "server-b"  # a new server: no index yet
        assert run(cli, ["--home", str(home), "--model", "hash:64", "--store", restored_url, "verify", "--repair"]) == 0
        assert "disagree" not in capsys.readouterr().err
        with Memory.open(home, embedder=fake(), store=restored_url) as mem:
            assert everything(mem) == before
            assert [h.id for h in mem.archival("bo").search("locker code", k=3)] == searched
    finally:
        with psycopg.connect(BASE_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
