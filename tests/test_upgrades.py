"""Homes made by older memvec: a store at an earlier schema (made here by running the migrations of
that time, then writing a record the way that schema held it) opens with today's code, says what it
migrates, keeps and finds its records; index files of an older format are reported by `verify`
(exit 0) and rebuilt on open; `memvec --version` names the schema it writes."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memvec import Memory
from memvec.cli import cli, run
from memvec.index.files import FORMAT_VERSION, LEXICAL_FILE, MANIFEST_FILE, sha256_file
from memvec.store.schema import LATEST_VERSION, MIGRATIONS


def home_at_schema(home: Path, version: int) -> Path:
    home.mkdir(parents=True)
    db = sqlite3.connect(home / "store.sqlite3")
    db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for number, script in MIGRATIONS[:version]:
        for statement in filter(str.strip, script.split(";")):
            db.execute(statement)
        db.execute("INSERT INTO schema_migrations VALUES (?, '2026-11-29T00:00:00Z')", (number,))
    # schema 1's columns: every later migration must carry such a row forward
    db.execute(
        "INSERT INTO records (agent, tier, text, dedup_key, tags, created_at) VALUES "
        "('ana', 'archival', 'Ana keeps bees in Lisbon', 'ana keeps bees in lisbon', '[\"home\"]', "
        "'2024-05-07T10:00:00Z')"
    )
    db.execute("INSERT INTO record_tags VALUES (1, 'home')")
    db.execute("INSERT INTO changes (agent, tier, record_id, op) VALUES ('ana', 'archival', 1, 'add')")
    db.commit()
    db.close()
    return home


@pytest.mark.parametrize("version", [1, 4, LATEST_VERSION - 1])
def test_an_older_home_is_migrated_with_a_word_and_keeps_its_records(
    tmp_path: Path, version: int, caplog: pytest.LogCaptureFixture
) -> None:
    home = home_at_schema(tmp_path / "home", version)
    caplog.set_level(logging.WARNING, logger="memvec.store")
    with Memory.open(home, model="hash:64") as mem:
        [hit] = mem.archival("ana").search("who keeps bees?", k=1)
        assert (hit.text, hit.tags, hit.created_at.year) == ("Ana keeps bees in Lisbon", ["home"], 2024)
        assert mem.verify().ok
    said = [r.getMessage() for r in caplog.records if r.name == "memvec.store"]
    assert len(said) == 1 and f"from version {version} to {LATEST_VERSION}" in said[0]
    caplog.clear()
    with Memory.open(home, model="hash:64"):
        pass
    assert not [r for r in caplog.records if "upgrading" in r.getMessage()], "once migrated, nothing to say"


def test_a_newer_home_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = home_at_schema(tmp_path / "home", LATEST_VERSION)
    with sqlite3.connect(home / "store.sqlite3") as db:
        db.execute("INSERT INTO schema_migrations VALUES (?, '2027-01-01T00:00:00Z')", (LATEST_VERSION + 1,))
    assert run(cli, ["--home", str(home), "--model", "hash:64", "stats"]) == 1
    assert f"knows up to {LATEST_VERSION}. Upgrade memvec" in capsys.readouterr().err


def test_version_names_the_store_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cli, ["--version"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"(store schema {LATEST_VERSION})")


def age_index_files(directory: Path, how: str) -> None:
    """Make `directory`'s index look written by an older memvec: a manifest of an earlier format, or
    a BM25 file from before it recorded its format (with the manifest's checksum to match, as that
    memvec would have written it)."""
    manifest = json.loads((directory / MANIFEST_FILE).read_text())
    if how == "manifest":
        manifest["format_version"] = FORMAT_VERSION - 1
    else:
        with np.load(directory / LEXICAL_FILE, allow_pickle=False) as data:
            kept = {name: data[name] for name in data.files if name != "format"}
        with open(directory / LEXICAL_FILE, "wb") as fh:
            np.savez(fh, **kept)
        manifest["checksums"][LEXICAL_FILE] = sha256_file(directory / LEXICAL_FILE)
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest))


@pytest.mark.parametrize("how", ["manifest", "bm25 file"])
def test_index_files_of_an_older_format_are_reported_then_rebuilt_on_open(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    with Memory.open(home, model="hash:64") as mem:
        mem.archival("ana").insert("Ana keeps bees in Lisbon")
    age_index_files(home / "index" / "ana" / "archival", how)
    capsys.readouterr()
    assert run(cli, ["--home", str(home), "--model", "hash:64", "verify"]) == 0
    assert "ana/archival: old format, rebuilt on open" in capsys.readouterr().out
    caplog.set_level(logging.WARNING, logger="memvec.index")
    with Memory.open(home, model="hash:64") as mem:
        assert mem.archival("ana").search("bees", k=1)[0].text == "Ana keeps bees in Lisbon"
    assert "index files of an older memvec" in caplog.text
    assert run(cli, ["--home", str(home), "--model", "hash:64", "verify", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["old_format"] == []


def schema_versions(home: Path) -> set[int]:
    with sqlite3.connect(home / "store.sqlite3") as db:
        return {row[0] for row in db.execute("SELECT version FROM schema_migrations")}


def test_upgrade_dry_run_says_what_it_would_apply_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = home_at_schema(tmp_path / "home", LATEST_VERSION - 2)
    base = ["--home", str(home), "--model", "hash:64", "upgrade"]
    capsys.readouterr()
    assert run(cli, [*base, "--dry-run"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in said] == [
        f"would apply schema {LATEST_VERSION - 1}",
        f"would apply schema {LATEST_VERSION}",
    ]
    assert all(len(line.split(": ", 1)[1]) > 10 for line in said), "each step says what it adds"
    assert schema_versions(home) == set(range(1, LATEST_VERSION - 1))
    assert run(cli, base) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"upgraded: store schema {LATEST_VERSION}"
    assert schema_versions(home) == set(range(1, LATEST_VERSION + 1))
    assert run(cli, base) == 0
    assert capsys.readouterr().out.strip() == f"up to date: store schema {LATEST_VERSION}"
