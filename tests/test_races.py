"""Deletes, forgets and edits of one passage, and folder deletes against uploads, from two servers
(two `Memory` objects on one SQLite home, or on one PostgreSQL database). Each race is played in the
losing order on purpose: the second writer is let loose at the moment the first has read what it is
about to change, and is given time to commit before the first goes on. A writer that reads outside
its write transaction then acts on a stale read (and the test fails); one that reads inside it holds
the other off until it commits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memvec import InvalidInputError, Memory, NotFoundError
from memvec.embed import HashingEmbedder
from memvec.errors import MemvecError
from memvec.types import DocumentReport
from tests.conftest import run_cli
from tests.test_postgres import pg_url  # noqa: F401  (a fixture)

GRACE_S = 0.5  # how long the second writer gets to commit while the first waits on its stale read


class Racer:
    """Run `action` in another thread the first time `method` of `obj` returns, and let it run for
    GRACE_S before the caller goes on; `outcome` is what it returned or raised."""

    def __init__(self, obj: Any, method: str, action: Callable[[], Any]) -> None:
        self.action, self._fired = action, False
        self.outcome: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        original = getattr(obj, method)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if not self._fired:
                self._fired = True
                self._thread.start()
                self._thread.join(GRACE_S)
            return result

        setattr(obj, method, hooked)

    def _run(self) -> None:
        try:
            self.outcome = self.action()
        except MemvecError as exc:
            self.outcome = exc

    def finish(self) -> Any:
        assert self._fired, "the race never started"
        self._thread.join(60)
        assert not self._thread.is_alive()
        return self.outcome


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    store = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    homes = (tmp_path / "home", tmp_path / "home") if store is None else (tmp_path / "a", tmp_path / "b")
    first = Memory.open(homes[0], embedder=HashingEmbedder(64), store=store)
    second = Memory.open(homes[1], embedder=HashingEmbedder(64), store=store)
    yield first, second
    second.close()
    first.close()


def chain_left(mem: Memory, record_id: int, words: str) -> list[int]:
    """What is left of the passage: current versions listed, or found by a search for its words."""
    archival = mem.archival("ana")
    listed = [r.id for r in archival.list(limit=100)]
    found = [h.id for h in archival.search(words, k=10, mode="bm25")]
    return sorted(set(listed) | set(found))


@pytest.mark.parametrize("how", ["delete", "forget"])
def test_an_edit_racing_a_delete_is_deleted_with_it_or_finds_it_gone(
    two_servers: tuple[Memory, Memory], how: str
) -> None:
    first, second = two_servers
    record_id = first.archival("ana").insert("the vault code is 4417").record.id
    race = Racer(first._store, "versions", lambda: second.archival("ana").update(record_id, "the vault code is 9902"))
    if how == "delete":
        first.archival("ana").delete(record_id)
    else:
        assert first.forget("ana", ids=[record_id]) >= 1
    edit = race.finish()
    assert isinstance(edit, NotFoundError), f"the edit that lost the race answered {edit!r}"
    for mem in (first, second):
        assert chain_left(mem, record_id, "vault code 9902 4417") == []


def test_a_forget_by_tag_takes_the_version_an_edit_wrote_meanwhile(two_servers: tuple[Memory, Memory]) -> None:
    first, second = two_servers
    record_id = first.archival("ana").insert("the alarm code is 1234", tags=["secret"]).record.id
    race = Racer(first._store, "filter_ids", lambda: second.archival("ana").update(record_id, "the alarm code is 5678"))
    first.forget("ana", tags=["secret"])
    assert isinstance(race.finish(), NotFoundError)
    for mem in (first, second):
        assert chain_left(mem, record_id, "alarm code 1234 5678") == []


def test_a_file_uploaded_while_its_folder_is_deleted_leaves_nothing_behind(two_servers: tuple[Memory, Memory]) -> None:
    first, second = two_servers
    folder = first.folders().create("manuals")
    first.folders().upload(folder.id, "a.md", b"# Pump\n\nThe pump runs at 40 rpm.\n")
    race = Racer(
        first._store,
        "documents",
        lambda: second.folders().upload(folder.id, "b.md", b"# Valve\n\nThe valve opens at 3 bar.\n"),
    )
    first.folders().delete(folder.id)
    upload = race.finish()
    assert isinstance(upload, NotFoundError), f"the upload that lost the race answered {upload!r}"
    for mem in (first, second):
        assert mem._store.orphan_documents() == []
        assert mem.verify().orphans == []


def test_a_folder_deleted_while_a_file_is_embedded_refuses_the_file(two_servers: tuple[Memory, Memory]) -> None:
    """The other order: the upload read its folder, the delete commits before the upload writes."""
    first, second = two_servers
    folder = first.folders().create("manuals")
    race = Racer(first._store, "current_document", lambda: second.folders().delete(folder.id))
    with pytest.raises(NotFoundError, match="deleted while"):
        first.folders().upload(folder.id, "b.md", b"# Valve\n\nThe valve opens at 3 bar.\n")
    assert race.finish() == 0
    assert first._store.orphan_documents() == [] and first.verify().ok


@pytest.mark.parametrize("handling", ["error", "skip", "suffix"])
def test_duplicate_handling_holds_for_two_uploads_of_one_name_at_once(
    two_servers: tuple[Memory, Memory], handling: str
) -> None:
    """The second upload is embedded while the first commits: it still sees the file of that name."""
    first, second = two_servers
    folder = first.folders().create("manuals")

    def upload(mem: Memory, text: bytes) -> DocumentReport:
        return mem.folders().upload(folder.id, "a.md", text, duplicate_handling=handling)

    race = Racer(first._engine.embedder, "embed_documents", lambda: upload(second, b"# A\n\nthe second text\n"))
    if handling == "error":
        with pytest.raises(InvalidInputError, match="already"):
            upload(first, b"# A\n\nthe first text\n")
    else:
        assert upload(first, b"# A\n\nthe first text\n").created is (handling == "suffix")
    assert race.finish().created
    names = sorted(d.name for d in first.folders().files(folder.id))
    assert names == (["a.md", "a_(1).md"] if handling == "suffix" else ["a.md"])


def test_verify_reports_a_document_whose_folder_is_gone_and_repair_deletes_it(tmp_path: Path) -> None:
    """What a lost race left before the fix (or a store edited by hand): found, and removed on request."""
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.archival("kb").insert("an agent of its own")
        folder = mem.folders().create("manuals")
        mem.folders().attach(folder.id, "kb")
        report = mem.folders().upload(folder.id, "pump.md", b"# Pump\n\nThe pump runs at 40 rpm.\n")
        mem._store.delete_folder_row(folder.id)  # the folder row alone, as an unserialized delete left it
    checked = run_cli("--model", "hash:64", "verify", home=home, check=False)
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert f"document {report.document.id} ('pump.md') belongs to folder {folder.id}" in checked.stderr
    run_cli("--model", "hash:64", "verify", "--repair", home=home)
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        assert mem.verify().ok and mem._store.orphan_documents() == []
        assert [h.text for h in mem.archival("kb").search("pump rpm", k=5, mode="bm25")] == []
