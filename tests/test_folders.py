"""Folders of files attached to agents: the Python API, and Letta's folders API through the official
letta-client against a real `memvec serve` with the real model."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from letta_client import Letta

from memvec.errors import InvalidInputError, NameTakenError, NotFoundError
from memvec.memory import Memory
from memvec.types import AgentSettings
from tests.service_helpers import Server
from tests.test_documents import MANUAL, make_pdf

ADMIN, SCOPED = "folders-admin-01", "folders-scope-01"
REPORT_PAGES = [
    "Annual report of the Riverside Allotment Society. This report covers membership and finances.",
    "Membership grew to 214 households this year, and the waiting list now has 38 names on it.",
    "The committee voted to replace the rainwater tanks on plot row C. The new tanks hold 1,200 litres "
    "each and were installed by volunteers in late April.",
    "Finances: the society ended the year with a surplus of 2,310 pounds after the tank purchase.",
]


def folder_chunks(memory: Memory, agent: str) -> list[tuple[str, str | None]]:
    return sorted(
        (r.citation.document.file_name, r.citation.document.folder)
        for r in memory.archival(agent).list(limit=1000)
        if r.citation.document
    )


def test_a_folder_attached_to_agents_gives_each_its_files_chunks(memory: Memory) -> None:
    for name in ("ana", "bob"):
        memory.create_agent(AgentSettings(name=name))
    folders = memory.folders()
    folder = folders.create("manuals", description="how things work")
    with pytest.raises(NameTakenError):
        folders.create("manuals")
    first = folders.upload(folder.id, "manual.md", MANUAL.encode())
    assert first.created and first.chunk_ids == []  # attached to nobody yet
    assert folders.attach(folder.id, "ana") and not folders.attach(folder.id, "ana")
    folders.attach(folder.id, "bob")
    assert folders.get(folder.id).agents == ["ana", "bob"]
    assert folder_chunks(memory, "ana") == [("manual.md", "manuals")] * first.document.chunks
    changed = folders.upload(folder.id, "manual.md", MANUAL.replace("ninety", "thirty").encode())
    assert changed.replaced == first.document.id
    for agent in ("ana", "bob"):
        hits = memory.archival(agent).search("how often is the mesh filter replaced", k=3)
        cited = hits[0].citation.document
        assert "thirty" in hits[0].text and cited is not None and cited.document_id == changed.document.id
    assert folders.detach(folder.id, "bob") == first.document.chunks + changed.document.chunks
    assert folder_chunks(memory, "bob") == [] and [f.id for f in folders.of_agent("ana")] == [folder.id]
    assert folders.delete_file(folder.id, changed.document.id) > 0 and folder_chunks(memory, "ana") == []
    with pytest.raises(NotFoundError):
        folders.attach(folder.id, "nobody")


def test_a_file_of_a_name_already_there_is_replaced_skipped_refused_or_renamed(memory: Memory) -> None:
    folders = memory.folders()
    folder = folders.create("notes")
    folders.upload(folder.id, "a.txt", b"first text")
    assert not folders.upload(folder.id, "a.txt", b"other text", duplicate_handling="skip").created
    with pytest.raises(InvalidInputError, match=r"a file named 'a\.txt' already exists"):
        folders.upload(folder.id, "a.txt", b"other text", duplicate_handling="error")
    renamed = folders.upload(folder.id, "a.txt", b"other text", duplicate_handling="suffix").document
    assert (renamed.name, renamed.original_name) == ("a_(1).txt", "a.txt")
    assert [d.name for d in folders.files(folder.id)] == ["a.txt", "a_(1).txt"]
    assert not folders.upload(folder.id, "a.txt", b"first text").created  # the same file again: nothing added
    assert folders.upload(folder.id, "b.txt", b"first text").created  # a folder's files are known by name
    with pytest.raises(InvalidInputError, match="already exists"):
        folders.upload(folder.id, "a.txt", b"first text", duplicate_handling="error")
    assert folders.upload(folder.id, "a.txt", b"first text", duplicate_handling="suffix").document.name == "a_(2).txt"
    assert folders.upload(folder.id, "c.txt", b"third text", duplicate_handling="suffix").document.name == "c.txt"
    assert folders.upload(folder.id, "d/e.f/g", b"no suffix", duplicate_handling="suffix").document.name == "d/e.f/g"
    assert folders.upload(folder.id, "d/e.f/g", b"again", duplicate_handling="suffix").document.name == "d/e.f/g_(1)"


def test_deleting_a_folder_deletes_its_chunks_from_every_agent(memory: Memory) -> None:
    memory.create_agent(AgentSettings(name="ana"))
    folders = memory.folders()
    folder = folders.create("docs")
    folders.attach(folder.id, "ana")
    report = folders.upload(folder.id, "m.md", MANUAL.encode())
    assert len(report.chunk_ids) == report.document.chunks
    memory.archival("ana").insert("an own passage")
    assert folders.delete(folder.id) == report.document.chunks
    assert [r.text for r in memory.archival("ana").list()] == ["an own passage"]
    with pytest.raises(NotFoundError):
        folders.get(folder.id)
    assert folders.of_agent("ana") == []


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("folders") / "home",
        keys=f"{ADMIN},{SCOPED}=scoped-agent",
        model="onnx-int8:all-MiniLM-L6-v2",
    ).start()
    yield srv
    srv.stop()


def test_letta_clients_folders_api_from_upload_to_a_cited_page(server: Server, tmp_path: Path) -> None:
    with Letta(base_url=server.url, api_key=ADMIN, _strict_response_validation=True) as client:
        agent = client.agents.create(name="reader", memory_blocks=[{"label": "human", "value": "Ana"}])
        folder = client.folders.create(
            name="society", description="the society's papers", embedding="openai/text-embedding-3-small"
        )
        assert folder.id.startswith("source-") and folder.embedding_config.embedding_dim == 384
        client.agents.folders.attach(folder.id, agent_id=agent.id)
        uploads = {
            "report.pdf": make_pdf(REPORT_PAGES),
            "manual.md": MANUAL.encode(),
            "page.html": b"<h1>Plots</h1><p>Plot row C is by the gate.</p>",
        }
        files = {}
        for name, data in uploads.items():
            (tmp_path / name).write_bytes(data)
            with open(tmp_path / name, "rb") as handle:
                uploaded = client.folders.files.upload(folder.id, file=handle)
            assert uploaded.processing_status == "completed" and uploaded.file_name == name
            assert uploaded.total_chunks and uploaded.total_chunks > 0
            files[name] = uploaded
        assert files["report.pdf"].file_type == "application/pdf"
        with open(tmp_path / "manual.md", "rb") as handle:  # by default a second is renamed, as Letta does
            again = client.folders.files.upload(folder.id, file=handle)
        assert (again.file_name, again.original_file_name) == ("manual_(1).md", "manual.md")
        with open(tmp_path / "manual.md", "rb") as handle:  # the same file replacing itself: nothing added
            assert (
                client.folders.files.upload(folder.id, file=handle, duplicate_handling="replace").id
                == files["manual.md"].id
            )
        client.folders.files.delete(again.id, folder_id=folder.id)
        listed = client.folders.files.list(folder.id, include_content=True)
        assert sorted(str(f.file_name) for f in listed) == sorted(uploads)
        report_text = next(f.content for f in listed if f.file_name == "report.pdf")
        assert report_text is not None
        assert [f.id for f in client.agents.folders.list(agent.id)] == [folder.id]
        assert list(client.folders.agents.list(folder.id)) == [agent.id]
        assert [s.name for s in client.agents.retrieve(agent.id).sources] == ["society"]
        made_with = client.agents.create(name="reader-two", source_ids=[folder.id])
        assert [s.id for s in made_with.sources] == [folder.id]
        assert list(client.folders.agents.list(folder.id)) == [agent.id, made_with.id]
        client.agents.delete(made_with.id)

        top = _search(server, agent.id, "how big are the new water tanks?")[0]
        cited = top["citation"]["document"]
        assert cited["page"] == 3 and cited["folder"] == "society" and cited["file_name"] == "report.pdf"
        assert report_text[cited["start"] : cited["end"]] == top["content"]
        files_found = [
            h["citation"]["document"]["document_id"]
            for h in _search(server, agent.id, "the tanks and the pump", per_document=True)
        ]
        assert len(files_found) == len(set(files_found)) == 3

        client.folders.files.delete(files["report.pdf"].id, folder_id=folder.id)
        rows = _search(server, agent.id, "water tanks litres")
        assert rows and all((h["citation"]["document"] or {}).get("file_name") != "report.pdf" for h in rows)
        client.agents.folders.detach(folder.id, agent_id=agent.id)
        assert list(client.agents.folders.list(agent.id)) == []
        client.folders.delete(folder.id)
    with sqlite3.connect(server.home / "store.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM records WHERE document_id IS NOT NULL").fetchone() == (0,)


def test_bad_uploads_get_a_clear_4xx_and_write_nothing(server: Server) -> None:
    with Letta(base_url=server.url, api_key=ADMIN) as client:
        folder = client.folders.create(name="bad uploads")
    url = f"{server.url}/v1/folders/{folder.id}/upload"
    for name, data in (("empty.txt", b""), ("broken.pdf", b"%PDF-1.4\n%%EOF garbage")):
        answer = httpx.post(url, headers=_auth(ADMIN), files={"file": (name, data, "application/octet-stream")})
        assert answer.status_code == 422 and answer.json()["error"] == "unreadable_document", answer.text
        assert name in answer.json()["detail"]
    for name, why in (("n" * 2_045 + ".txt", "1 to 1,024 characters"), ("\x1b[31mred.txt", "U+001B")):
        answer = httpx.post(url, headers={**_auth(ADMIN), **_MULTIPART}, content=_multipart(name, b"some text"))
        assert answer.status_code == 400 and why in answer.json()["detail"], answer.text
        named = httpx.post(url, headers=_auth(ADMIN), params={"name": name}, files={"file": ("a.txt", b"x")})
        assert named.status_code in (400, 422), named.text  # the `name` parameter: the same rule
    assert httpx.get(f"{server.url}/v1/folders/{folder.id}/files", headers=_auth(ADMIN)).json() == []
    scoped = httpx.post(url, headers=_auth(SCOPED), files={"file": ("a.txt", b"text", "text/plain")})
    assert scoped.status_code in (403, 404)


_MULTIPART = {"Content-Type": "multipart/form-data; boundary=memvec-test-boundary"}


def _multipart(filename: str, data: bytes) -> bytes:
    """A multipart body with the file name as sent, byte for byte (clients escape control characters)."""
    return (
        b'--memvec-test-boundary\r\nContent-Disposition: form-data; name="file"; filename="'
        + filename.encode()
        + b'"\r\nContent-Type: text/plain\r\n\r\n'
        + data
        + b"\r\n--memvec-test-boundary--\r\n"
    )


def _search(server: Server, agent: str, query: str, *, per_document: bool = False) -> list[dict[str, Any]]:
    answer = httpx.get(
        f"{server.url}/v1/agents/{agent}/archival-memory/search",
        headers=_auth(ADMIN),
        params={"query": query, "top_k": 10, "per_document": per_document},
    )
    results: list[dict[str, Any]] = answer.raise_for_status().json()["results"]
    return results


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
