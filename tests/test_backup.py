"""`memvec backup` / `memvec restore`: a consistent copy of a live home (SQLite's online backup),
checked against its manifest, restored into an empty home whose indexes are rebuilt; everything an
export shows (every version, block history, consolidation runs, expiry) survives, and the copy a
user would make by hand (`cp store.sqlite3`) is shown to be the one that loses data."""

from __future__ import annotations

import json
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memvec import CoreBlock, Memory
from memvec.agent.consolidate import consolidate
from memvec.embed import HashingEmbedder
from memvec.errors import InvalidInputError
from memvec.store.backup import MANIFEST_FILE, STORE_COPY, backup_store
from memvec.types import AgentSettings, NewRecord, Tier
from tests.conftest import run_cli
from tests.scripted_llm import ScriptedLLM
from tests.test_consolidation import ana, answer_with, moved_to_berlin


def fake() -> HashingEmbedder:
    return HashingEmbedder(64)


def everything(mem: Memory) -> dict[str, Any]:
    """Every agent's export (records with all versions, blocks and their history, runs), without
    the moment it was taken."""
    return {agent: mem.export_agent(agent).model_dump(mode="json", exclude={"exported_at"}) for agent in mem.agents()}


def lived_in(mem: Memory, llm: ScriptedLLM) -> None:
    """A home with versions, an expiry, block history and a consolidation run."""
    ana(mem)
    answer_with(llm, moved_to_berlin)
    assert consolidate(mem, "ana") is not None
    core = mem.core("ana")
    core.replace("human", "Name: Ana", "Name: Ana Lima")
    mem.create_agent(AgentSettings(name="bo"))
    archival = mem.archival("bo")
    first = archival.insert("Bo's locker code is 4411.", tags=["codes"]).record.id
    archival.update(first, "Bo's locker code is 5522.")
    archival.insert("The fire drill is on Friday.", expires_at=datetime.now(UTC) + timedelta(days=3))


def test_a_backup_taken_under_writes_restores_every_version_history_and_run(tmp_path: Path, llm: ScriptedLLM) -> None:
    with Memory.open(tmp_path / "home", embedder=fake()) as mem:
        lived_in(mem, llm)
        before = everything(mem)
        stop = threading.Event()
        written: list[int] = []

        def writer() -> None:  # another agent keeps writing while the copy is taken
            mem.create_agent(AgentSettings(name="busy"))
            while not stop.is_set():
                written.append(mem.archival("busy").insert(f"note {len(written)}").record.id)

        thread = threading.Thread(target=writer)
        thread.start()
        try:
            while len(written) < 20 and thread.is_alive():
                threading.Event().wait(0.01)
            manifest = mem.backup(tmp_path / "backup")
        finally:
            stop.set()
            thread.join()
        searched = [h.text for h in mem.archival("bo").search("locker code", k=3)]
    saved = json.loads((tmp_path / "backup" / MANIFEST_FILE).read_text())
    assert saved["sha256"] == manifest.sha256 and saved["model_id"] == "hash:64" and manifest.agents == 3
    with Memory.restore(tmp_path / "backup", tmp_path / "restored", embedder=fake()) as restored:
        after = everything(restored)
        assert {a: after[a] for a in before} == before  # the home as it was, to the field
        busy = after["busy"]["passages"]
        assert manifest.records == sum(len(doc["passages"]) + len(doc["messages"]) for doc in after.values())
        assert [p["text"] for p in busy] == [f"note {n}" for n in range(len(busy))]  # a prefix, no holes
        assert [h.text for h in restored.archival("bo").search("locker code", k=3)] == searched
        report = restored.verify()
        assert report.ok and not report.behind and not report.not_loaded


def test_the_command_line_backs_up_what_a_file_copy_loses(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=fake()) as mem:  # records stay in the WAL while the home is open
        mem.create_agent(AgentSettings(name="ana"))
        mem.insert([NewRecord(agent="ana", tier=Tier.ARCHIVAL, text=f"fact {n}") for n in range(30)])
        hand_copy = tmp_path / "hand-copy"
        hand_copy.mkdir()
        shutil.copy(home / "store.sqlite3", hand_copy / "store.sqlite3")
        done = run_cli("--model", "hash:64", "backup", str(tmp_path / "backup"), "--json", home=home)
    assert json.loads(done.stdout)["records"] == 30
    assert "ana/" not in run_cli("--model", "hash:64", "stats", home=hand_copy).stdout  # the WAL stayed behind
    restored = run_cli("restore", str(tmp_path / "backup"), home=tmp_path / "restored")
    assert "restored 30 record(s)" in restored.stdout
    checked = json.loads(run_cli("verify", "--json", home=tmp_path / "restored").stdout)
    assert checked["ok"] and checked["problems"] == checked["behind"] == checked["not_loaded"] == []
    hits = run_cli("search", "fact 7", "--agent", "ana", "--tier", "archival", "--json", home=tmp_path / "restored")
    assert "fact 7" in hits.stdout


def test_a_home_with_a_store_a_damaged_copy_and_a_full_folder_are_refused(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "home", embedder=fake()) as mem:
        mem.create_agent(AgentSettings(name="ana"))
        mem.backup(tmp_path / "backup")
        with pytest.raises(InvalidInputError, match="new or empty folder"):
            mem.backup(tmp_path / "backup")
    with pytest.raises(InvalidInputError, match="exists: restore goes into an empty home"):
        Memory.restore(tmp_path / "backup", tmp_path / "home", embedder=fake())
    with pytest.raises(InvalidInputError, match="not a memvec backup"):
        Memory.restore(tmp_path / "home", tmp_path / "elsewhere", embedder=fake())
    with open(tmp_path / "backup" / STORE_COPY, "r+b") as copy:  # one bit flipped
        copy.seek(200)
        flipped = copy.read(1)[0] ^ 1
        copy.seek(200)
        copy.write(bytes([flipped]))
    with pytest.raises(InvalidInputError, match="damaged"):
        Memory.restore(tmp_path / "backup", tmp_path / "elsewhere", embedder=fake())
    assert not (tmp_path / "elsewhere" / "store.sqlite3").exists()
    with pytest.raises(InvalidInputError, match="pg_dump"):  # any store but SQLite's
        backup_store(object(), tmp_path / "pg-backup", memvec_version="0", model_key="embedding_model")
    with pytest.raises(InvalidInputError, match="pg_restore"):
        Memory.restore(tmp_path / "backup", tmp_path / "pg-home", store="postgresql://nowhere/none")


def test_a_backup_counts_agents_as_the_agent_list_does(tmp_path: Path) -> None:
    """Agents written only through their tiers or blocks have no settings row: still agents."""
    with Memory.open(tmp_path / "home", embedder=fake()) as mem:
        mem.archival("kb").insert("a passage of an agent made by writing to it")
        mem.recall("chat").append("user", "hello")
        shared = mem.shared_blocks().create(CoreBlock(label="team", value="v"))
        mem.create_agent(AgentSettings(name="ana"))
        mem.shared_blocks().attach("ana", shared.id)
        manifest = mem.backup(tmp_path / "backup")
        assert manifest.agents == len(mem.agents()) == 3
    said = run_cli("--model", "hash:64", "backup", str(tmp_path / "again"), home=tmp_path / "home").stdout
    assert "record(s) of 3 agent(s)" in said
