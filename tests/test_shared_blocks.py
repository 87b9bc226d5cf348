"""Shared blocks (#36): a block made once and attached to several agents; an edit through one holder
is every holder's, in the block's history and undo; export/import and the API keep it shared; a
scoped key reaches only blocks its agents hold. On SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memvec import CoreBlock, CoreMemoryError, Memory, NotFoundError
from memvec.embed import HashingEmbedder
from memvec.exchange.consolidation import ConsolidationProposal
from memvec.exchange.export import AgentExport
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.types import AgentSettings
from tests.test_postgres import pg_url  # noqa: F401  (the fixture)


def _shared(listed: list[dict[str, object]]) -> list[object]:
    """The shared blocks of a listing (it lists the agents' own blocks after them, as Letta does)."""
    return [b["id"] for b in listed if str(b["id"]).startswith("block-")]


ADMIN, ANA = {"Authorization": "Bearer admin-key-0123456789"}, {"Authorization": "Bearer ana-key-0123456789"}


def check_sharing(mem: Memory) -> None:
    for name in ("ana", "bob"):
        mem.create_agent(AgentSettings(name=name))
    shared = mem.shared_blocks(actor="admin")
    team = shared.create(CoreBlock(label="team", value="Project: apollo", limit=200))
    assert re.fullmatch(r"block-[0-9a-f]{32}", team.id)
    assert shared.attach("ana", team.id) and shared.attach("bob", team.id) and not shared.attach("ana", team.id)
    mem.core("ana", actor="tool:core_memory_append").append("team", "Deadline: Friday")
    bob = mem.core("bob", actor="cli")
    assert bob.get("team").value == "Project: apollo\nDeadline: Friday" and "Deadline: Friday" in bob.render()
    assert [(c.op, c.actor) for c in bob.history("team")] == [
        ("create", "admin"),
        ("append", "tool:core_memory_append via ana"),
    ]
    assert bob.shared_ids() == {"team": team.id} and mem.core("ana").shared_ids() == {"team": team.id}
    undone = bob.undo("team")  # bob undoes ana's edit: the block's latest change, whoever made it
    assert undone is not None and undone.value == "Project: apollo" == mem.core("ana").get("team").value
    with pytest.raises(NotFoundError, match="agent 'carl' not found"):
        shared.attach("carl", team.id)  # an agent must exist to hold a block
    mem.core("carl").put(CoreBlock(label="team", value="carl's own"))
    with pytest.raises(CoreMemoryError, match="already has a block labelled 'team'"):
        shared.attach("carl", team.id)
    assert mem.agents() == ["ana", "bob", "carl"]  # a shared block's owner is no agent
    mem.delete_agent("ana")
    assert shared.get(team.id).agents == ["bob"] and mem.core("carl").get("team").value == "carl's own"
    bob.delete("team")  # through an agent, a shared block is detached, not deleted
    assert shared.get(team.id).agents == [] and "team" not in {b.label for b in bob.blocks()}
    shared.attach("bob", team.id)
    shared.delete(team.id)
    assert bob.shared_ids() == {} and shared.list() == [] and "team" not in {b.label for b in bob.blocks()}
    with pytest.raises(NotFoundError):
        shared.get(team.id)


def test_a_shared_block_is_one_block_for_every_holder(memory: Memory) -> None:
    check_sharing(memory)


@pytest.mark.postgres
def test_a_shared_block_is_one_block_for_every_holder_on_postgres(tmp_path: Path, pg_url: str) -> None:  # noqa: F811
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64), store=pg_url) as mem:
        check_sharing(mem)


def test_export_and_import_keep_a_shared_block_shared(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "one", embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="ana"))
        team = mem.shared_blocks().create(CoreBlock(label="team", value="Project: apollo"))
        mem.shared_blocks().attach("ana", team.id)
        mem.core("ana").append("team", "Deadline: Friday")
        doc = AgentExport.model_validate_json(mem.export_agent("ana").model_dump_json())
        assert [b.label for b in doc.blocks] == ["persona", "human"]  # the shared one is not a copy of its own
        assert [(s.id, s.value, [c.op for c in s.history]) for s in doc.shared_blocks] == [
            (team.id, "Project: apollo\nDeadline: Friday", ["create", "append"])
        ]
        mem.import_agent(doc, name="ana2")  # same home: attached to the same block
        assert mem.shared_blocks().get(team.id).agents == ["ana", "ana2"]
        mem.core("ana2").rewrite("team", "Project: gemini")
        assert mem.core("ana").get("team").value == "Project: gemini"
    with Memory.open(tmp_path / "two", embedder=HashingEmbedder(64)) as other:
        other.import_agent(doc)  # another home: the block is made, with its history, and attached
        block = other.shared_blocks().get(team.id)
        assert block.agents == ["ana"] and block.value == "Project: apollo\nDeadline: Friday"
        assert [c.op for c in other.core("ana").history("team")] == ["create", "append"]
        assert other.core("ana").undo("team") is not None and other.core("ana").get("team").value == "Project: apollo"


def test_over_http_a_scoped_key_reaches_only_blocks_its_agents_hold(memory: Memory) -> None:
    keys = KeyRing.parse([("test", "admin-key-0123456789"), ("test", "ana-key-0123456789=ana")])
    with TestClient(create_app(memory, keys)) as api:
        for name in ("ana", "bob"):
            assert api.post("/v1/agents", json={"name": name}, headers=ADMIN).status_code == 201
        assert api.post("/v1/blocks", json={"label": "team", "value": "v"}, headers=ANA).status_code == 403
        made = api.post("/v1/blocks", json={"label": "team", "value": "Project: apollo"}, headers=ADMIN)
        assert made.status_code == 201
        block_id = made.json()["id"]
        assert api.get(f"/v1/blocks/{block_id}", headers=ANA).status_code == 404  # held by none of ana's agents
        assert _shared(api.get("/v1/blocks", headers=ANA).json()) == []
        attach = f"/v1/agents/{{}}/core-memory/blocks/attach/{block_id}"
        assert api.patch(attach.format("ana"), headers=ANA).status_code == 404
        bob = api.patch(attach.format("bob"), headers=ADMIN).json()
        assert {b["label"]: b["id"] for b in bob["blocks"]}["team"] == block_id
        assert api.patch(attach.format("ana"), headers=ADMIN).status_code == 200
        changed = api.patch(f"/v1/blocks/{block_id}", json={"value": "Project: gemini"}, headers=ANA)
        assert changed.status_code == 200 and changed.json()["value"] == "Project: gemini"
        assert api.get("/v1/agents/bob/core-memory/blocks/team", headers=ADMIN).json()["value"] == "Project: gemini"
        actors = [c["actor"] for c in api.get("/v1/agents/bob/core-memory/blocks/team/history", headers=ADMIN).json()]
        assert actors[0] == f"http:{keys.principal('admin-key-0123456789').key_id}"  # type: ignore[union-attr]
        assert actors[1] == f"http:{keys.principal('ana-key-0123456789').key_id}"  # type: ignore[union-attr]
        assert _shared(api.get("/v1/blocks", headers=ANA).json()) == [block_id]
        assert [a["name"] for a in api.get(f"/v1/blocks/{block_id}/agents", headers=ANA).json()] == ["ana"]
        assert [a["name"] for a in api.get(f"/v1/blocks/{block_id}/agents", headers=ADMIN).json()] == ["ana", "bob"]
        assert api.delete(f"/v1/blocks/{block_id}", headers=ANA).status_code == 403
        other = api.post("/v1/blocks", json={"label": "team", "value": "another"}, headers=ADMIN).json()["id"]
        clash = api.patch(f"/v1/agents/bob/core-memory/blocks/attach/{other}", headers=ADMIN)
        assert clash.status_code == 409 and "already has a block labelled 'team'" in clash.json()["detail"]
        detached = api.patch(f"/v1/agents/ana/core-memory/blocks/detach/{block_id}", headers=ANA)
        assert detached.status_code == 200 and "team" not in {b["label"] for b in detached.json()["blocks"]}
        assert api.get(f"/v1/blocks/{block_id}", headers=ANA).status_code == 404
        assert api.get("/v1/blocks/bob:human", headers=ADMIN).json()["label"] == "human"
        assert api.get("/v1/blocks/bob:human", headers=ANA).status_code == 404
        renamed = api.patch(f"/v1/blocks/{other}", json={"label": "person", "value": "x"}, headers=ADMIN)
        assert renamed.status_code == 400 and "renaming is not supported" in renamed.json()["detail"]
        own = api.patch("/v1/blocks/bob:human", json={"label": "person", "value": "x"}, headers=ADMIN)
        assert (own.status_code, own.json()["id"]) == (200, "bob:person")  # an agent's own block may be renamed
        labels = {b["label"] for b in api.get("/v1/agents/bob/core-memory/blocks", headers=ADMIN).json()}
        assert "person" in labels and "human" not in labels
        clash = api.patch("/v1/blocks/bob:person", json={"label": "persona"}, headers=ADMIN)
        assert clash.status_code == 409 and "already" in clash.json()["detail"]
        assert api.get("/v1/blocks/not-a-block", headers=ADMIN).status_code == 422
        assert api.delete(f"/v1/blocks/{block_id}", headers=ADMIN).status_code == 200
        assert "team" not in {b["label"] for b in api.get("/v1/agents/bob/core-memory/blocks", headers=ADMIN).json()}
        assert _shared(api.get("/v1/blocks", headers=ADMIN).json()) == [other]


def test_a_consolidation_rewrites_a_shared_block_for_every_holder_and_its_undo_too(memory: Memory) -> None:
    for name in ("ana", "bob"):
        memory.create_agent(AgentSettings(name=name))
    team = memory.shared_blocks().create(CoreBlock(label="team", value="Project: apollo"))
    for name in ("ana", "bob"):
        memory.shared_blocks().attach(name, team.id)
    message = memory.recall("ana").append("user", "we renamed the project to gemini").record.id
    proposal = ConsolidationProposal.model_validate(
        {"facts": [], "blocks": [{"label": "team", "value": "Project: gemini", "reason": "renamed"}]}
    )
    run = memory.apply_consolidation("ana", proposal, model="scripted/none", through_message=message)
    assert memory.core("bob").get("team").value == "Project: gemini"
    assert memory.core("bob").history("team")[-1].actor == f"consolidation:{run.id}"
    memory.undo_consolidation("ana", run.id)
    assert memory.core("bob").get("team").value == "Project: apollo"


def test_an_undo_through_one_holder_never_deletes_a_shared_block(memory: Memory) -> None:
    """Undoing the block's creation would delete it for every holder: refused; deleting it is its own act."""
    for name in ("ana", "bob"):
        memory.create_agent(AgentSettings(name=name))
    shared = memory.shared_blocks()
    team = shared.create(CoreBlock(label="team", value="first"))
    for name in ("ana", "bob"):
        shared.attach(name, team.id)
    memory.core("ana").append("team", "second")
    assert memory.core("ana").undo("team") is not None  # the append: undone
    with pytest.raises(CoreMemoryError, match="would delete shared block"):
        memory.core("ana").undo("team")
    assert memory.core("bob").get("team").value == "first" and memory.core("bob").shared_ids() == {"team": team.id}
    shared.delete(team.id)
    assert "team" not in {b.label for b in memory.core("ana").blocks()} and memory.core("ana").shared_ids() == {}
    memory.core("ana").put(CoreBlock(label="team", value="ana's own"))  # the label is free again
    assert shared.list() == [] and memory.core("ana").get("team").value == "ana's own"


def test_a_scoped_key_imports_only_shared_blocks_its_agents_hold_and_undoes_none_away(memory: Memory) -> None:
    keys = KeyRing.parse([("test", "admin-key-0123456789"), ("test", "ana-key-0123456789=ana|carol")])
    with TestClient(create_app(memory, keys)) as api:
        for name in ("ana", "bob"):
            assert api.post("/v1/agents", json={"name": name}, headers=ADMIN).status_code == 201
        made = api.post("/v1/blocks", json={"label": "team", "value": "Project: apollo"}, headers=ADMIN)
        block_id = made.json()["id"]
        assert api.patch(f"/v1/agents/bob/core-memory/blocks/attach/{block_id}", headers=ADMIN).status_code == 200
        exported = api.get("/v1/agents/bob/export", headers=ADMIN).json()
        assert [b["id"] for b in exported["shared_blocks"]] == [block_id]
        made_up = {**exported["shared_blocks"][0], "id": "block-" + "ab" * 16, "history": []}
        for blocks in ([exported["shared_blocks"][0]], [made_up]):  # one it cannot see; one it would create
            refused = api.post(
                "/v1/agents/import", params={"name": "carol"}, json={**exported, "shared_blocks": blocks}, headers=ANA
            )
            assert refused.status_code == 403 and "none of its agents holds it" in refused.json()["detail"]
        assert api.get("/v1/agents/carol", headers=ADMIN).status_code == 404
        assert _shared(api.get("/v1/blocks", headers=ADMIN).json()) == [block_id]
        assert [a["name"] for a in api.get(f"/v1/blocks/{block_id}/agents", headers=ADMIN).json()] == ["bob"]
        assert api.patch(f"/v1/agents/ana/core-memory/blocks/attach/{block_id}", headers=ADMIN).status_code == 200
        imported = api.post("/v1/agents/import", params={"name": "carol"}, json=exported, headers=ANA)
        assert imported.status_code == 201, imported.text  # ana holds it: carol may hold it too
        assert [a["name"] for a in api.get(f"/v1/blocks/{block_id}/agents", headers=ADMIN).json()] == [
            "ana",
            "bob",
            "carol",
        ]
        undo = api.post("/v1/agents/ana/core-memory/blocks/team/undo", headers=ANA)
        assert undo.status_code == 409 and "would delete shared block" in undo.json()["detail"]
        assert api.get(f"/v1/blocks/{block_id}", headers=ADMIN).json()["value"] == "Project: apollo"


def test_blocks_list_shows_agents_own_blocks_after_the_shared_ones_by_label(memory: Memory) -> None:
    for name in ("ana", "bob"):
        memory.create_agent(AgentSettings(name=name), blocks=[CoreBlock(label="notes", value=f"{name}'s notes")])
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        shared = api.post("/v1/blocks", json={"label": "notes", "value": "everyone's"}).json()["id"]
        listed = [b["id"] for b in api.get("/v1/blocks", params={"label": "notes"}).json()]
        assert listed == [shared, "ana:notes", "bob:notes"]  # Letta lists every block, not only shared ones
        assert api.delete("/v1/blocks/ana:notes").status_code == 200
        assert [b["id"] for b in api.get("/v1/blocks", params={"label": "notes"}).json()] == [shared, "bob:notes"]
