"""Forget means gone, also after a restore (#59 item 9): every delete and forget leaves a tombstone
(ids and content hashes, never the text) in the home's forget log, beside the store, written only
once the delete commits; restoring a backup taken before it deletes those things again and says so,
through the Python API and `memvec restore`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.errors import StoreError
from memvec.store.forget_log import FORGET_LOG
from memvec.types import AgentSettings
from tests.conftest import run_cli

SECRET = "the vault code is 8812"


def fill(home: Path) -> dict[str, int]:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="ana"))
        mem.create_agent(AgentSettings(name="bob"))
        ids = {
            "secret": mem.archival("ana").insert(SECRET, tags=["secret"]).record.id,
            "kept": mem.archival("ana").insert("the lobby opens at eight").record.id,
            "tagged": mem.archival("ana").insert("the alarm word is heron", tags=["alarm"]).record.id,
            "doc": mem.documents("ana").add("plan.md", "# Plan\n\nThe heist starts at noon.\n").document.id,
        }
        mem.archival("bob").insert("bob's own note")
        mem.core("ana").append("human", "ana's first note")
    return ids


def forget_everything_but_kept(home: Path, ids: dict[str, int]) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.archival("ana").delete(ids["secret"])
        assert mem.forget("ana", tags=["alarm"]) == 1
        mem.documents("ana").delete(ids["doc"])
        mem.delete_agent("bob")
        mem.core("ana").forget_history("human")


def texts(mem: Memory, agent: str = "ana") -> set[str]:
    return {r.text for r in mem.archival(agent).list(limit=100)} if mem.has_agent(agent) else set()


def test_a_restore_into_the_home_deletes_again_what_was_forgotten_after_the_backup(tmp_path: Path) -> None:
    home, backup = tmp_path / "home", tmp_path / "backup"
    ids = fill(home)
    run_cli("--model", "hash:64", "backup", str(backup), home=home)
    forget_everything_but_kept(home, ids)
    log = (home / FORGET_LOG).read_text()
    assert SECRET not in log and "heron" not in log and "heist" not in log  # hashes, never the text
    assert {json.loads(line)["kind"] for line in log.splitlines()} == {"record", "document", "agent", "block_history"}
    for lost in home.glob("store.sqlite3*"):  # the store is lost; its forget log is not
        lost.unlink()
    shutil.rmtree(home / "indexes", ignore_errors=True)
    restored = run_cli("--model", "hash:64", "restore", str(backup), home=home)
    assert "removed again 2 record(s), 1 document(s), 1 agent(s), 1 block history(ies)" in restored.stdout
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        assert texts(mem) == {"the lobby opens at eight"}
        assert not mem.has_agent("bob") and mem.documents("ana").list(include_replaced=True) == []
        assert [h.text for h in mem.archival("ana").search("vault code 8812 heist noon", k=5, mode="bm25")] == []
        assert mem.core("ana").history("human") == [] and "ana's first note" in mem.core("ana").get("human").value
        assert mem.verify().ok


def test_a_restore_elsewhere_says_what_comes_back_unless_given_the_log(tmp_path: Path) -> None:
    home, backup = tmp_path / "home", tmp_path / "backup"
    ids = fill(home)
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.backup(backup)
    forget_everything_but_kept(home, ids)
    bare = run_cli("--model", "hash:64", "restore", str(backup), home=tmp_path / "bare")
    assert "no forget log here: anything deleted or forgotten after the backup was taken is back" in bare.stdout
    with Memory.restore(backup, tmp_path / "told", embedder=HashingEmbedder(64), forget_log=home / FORGET_LOG) as mem:
        assert mem.forget_applied is not None and mem.forget_applied.records == 2
        assert texts(mem) == {"the lobby opens at eight"}
    with Memory.open(tmp_path / "bare", embedder=HashingEmbedder(64)) as mem:
        assert SECRET in texts(mem)  # as documented: nothing said it was forgotten


def test_a_delete_that_rolls_back_logs_nothing(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    record = memory.archival("ana").insert(SECRET).record.id

    def broken(agent: str) -> None:
        raise StoreError("the disk is full")

    monkeypatch.setattr(memory._store, "forget_requests", broken)
    with pytest.raises(StoreError):
        memory.archival("ana").delete(record)
    assert memory.archival("ana").get(record).text == SECRET
    assert not (memory.home / FORGET_LOG).exists()


def test_a_tombstone_deletes_only_what_still_has_its_content(tmp_path: Path) -> None:
    """Another home's log names ids that, in this backup, hold something else: it is kept."""
    with Memory.open(tmp_path / "b", embedder=HashingEmbedder(64)) as mem:
        passage = mem.archival("ana").insert("home b's passage").record.id
        doc = mem.documents("ana").add("b.md", "# B\n\nhome b's file\n").document.id
        mem.backup(tmp_path / "backup")
    with Memory.open(tmp_path / "a", embedder=HashingEmbedder(64)) as other:  # after the backup
        assert other.archival("ana").insert("home a's passage").record.id == passage
        assert other.documents("ana").add("a.md", "# A\n\nhome a's file\n").document.id == doc
        other.archival("ana").delete(passage)
        other.documents("ana").delete(doc)
    log = tmp_path / "a" / FORGET_LOG
    with Memory.restore(tmp_path / "backup", tmp_path / "c", embedder=HashingEmbedder(64), forget_log=log) as mem:
        assert mem.forget_applied is not None and mem.forget_applied.tombstones == 2
        assert (mem.forget_applied.records, mem.forget_applied.documents) == (0, 0)
        assert "home b's passage" in texts(mem) and [d.name for d in mem.documents("ana").list()] == ["b.md"]
