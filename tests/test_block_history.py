"""Core-block history and undo (#23): every change is recorded with the whole block before and after
it and who made it, through every surface; an undo restores the exact previous state, step by step."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvec import CoreBlock, CoreMemoryError, Memory, NotFoundError
from memvec.embed import HashingEmbedder
from memvec.errors import InvalidInputError, NameTakenError
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.store import STORE_FILE
from memvec.types import AgentSettings
from tests.conftest import run_cli


def test_every_change_is_recorded_and_undone_step_by_step(memory: Memory) -> None:
    core = memory.core("ana", actor="tool:test")
    original = core.put(CoreBlock(label="human", value="Name: Ana", limit=200, description="about Ana"))
    core.append("human", "Likes tea")
    core.replace("human", "tea", "coffee")
    core.insert("human", "Lives in Lisbon", line=1)
    core.rewrite("human", "Ana (rewritten)")
    core.put(CoreBlock(label="human", value="Ana", limit=50))  # a new limit and no description
    assert [(c.op, c.actor) for c in core.history("human")] == [
        ("create", "tool:test"),
        ("append", "tool:test"),
        ("replace", "tool:test"),
        ("insert", "tool:test"),
        ("rewrite", "tool:test"),
        ("put", "tool:test"),
    ]
    states = [c.new for c in core.history("human")]
    assert states[3] is not None and states[3].value == "Name: Ana\nLives in Lisbon\nLikes coffee"
    for expected in reversed(states[:-1]):  # each undo goes one change further back, the whole block
        assert core.undo("human") == expected == core.get("human")
    assert core.get("human") == original
    assert core.undo("human") is None and core.blocks() == []  # the first change created it
    with pytest.raises(NotFoundError, match="no change to undo"):
        core.undo("human")
    undone = [c for c in core.history("human") if c.op != "undo"]
    assert all(c.undone_by is not None for c in undone)


def test_a_deleted_block_comes_back_whole_and_other_blocks_are_untouched(memory: Memory) -> None:
    core = memory.core("ana")
    block = core.put(CoreBlock(label="notes", value="keep this", limit=99, read_only=True, description="d"))
    core.put(CoreBlock(label="human", value="Ana"))
    core.delete("notes")
    assert core.undo("notes") == block == core.get("notes")
    assert core.get("human").value == "Ana" and [c.op for c in core.history("human")] == ["create"]


def test_undo_refuses_a_block_changed_outside_its_history(memory: Memory, home: Path) -> None:
    core = memory.core("ana")
    core.put(CoreBlock(label="human", value="Ana"))
    core.append("human", "Likes tea")
    with sqlite3.connect(home / STORE_FILE) as db:
        db.execute("UPDATE core_blocks SET value = 'edited by hand' WHERE label = 'human'")
    with pytest.raises(CoreMemoryError, match="changed after the edit to undo"):
        core.undo("human")
    assert core.get("human").value == "edited by hand"


def test_deleting_the_agent_deletes_its_block_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(16)) as mem:
        core = mem.core("ana")
        core.put(CoreBlock(label="human", value="canary-6f3a9 old"))
        core.rewrite("human", "canary-6f3a9 new")
        mem.delete_agent("ana")
        assert core.history() == []
    assert not any(b"canary-6f3a9" in path.read_bytes() for path in home.rglob("*") if path.is_file())


def test_over_http_each_key_is_named_in_the_history_and_undo_is_served(memory: Memory) -> None:
    keys = KeyRing.parse([("test", "admin-key-0123456789"), ("test", "ana-key-0123456789=ana")])
    with TestClient(create_app(memory, keys)) as api:
        admin = {"Authorization": "Bearer admin-key-0123456789"}
        scoped = {"Authorization": "Bearer ana-key-0123456789"}
        assert api.post("/v1/agents", json={"name": "ana"}, headers=admin).status_code == 201
        assert api.post("/v1/agents", json={"name": "bob"}, headers=admin).status_code == 201
        path = "/v1/agents/ana/core-memory/blocks/human"
        assert api.patch(path, json={"value": "Name: Ana"}, headers=scoped).status_code == 200
        history = api.get(f"{path}/history", headers=admin).json()
        assert [(c["op"], c["new"]["value"]) for c in history] == [("create", ""), ("put", "Name: Ana")]
        created_by, edited_by = history[0]["actor"], history[1]["actor"]
        assert created_by != edited_by and created_by.startswith("http:") and edited_by.startswith("http:")
        assert "ana-key" not in json.dumps(history)  # a key id, never the key
        undone = api.post(f"{path}/undo", headers=scoped)
        assert undone.status_code == 200 and undone.json()["value"] == ""
        assert api.get(path, headers=admin).json()["value"] == ""
        assert api.get("/v1/agents/bob/core-memory/blocks/human/history", headers=scoped).status_code == 404
        assert api.post("/v1/agents/bob/core-memory/blocks/human/undo", headers=scoped).status_code == 404
        assert api.get(f"{path}/history", headers=admin).json()[-1]["actor"] == edited_by  # the undo, by ana's key


def test_a_named_key_is_credited_by_its_name(memory: Memory) -> None:
    keys = KeyRing.parse([("test", "admin-key-0123456789 # ops"), ("test", "ana-key-0123456789 = ana #Ana's laptop")])
    with TestClient(create_app(memory, keys)) as api:
        admin = {"Authorization": "Bearer admin-key-0123456789"}
        assert api.post("/v1/agents", json={"name": "ana"}, headers=admin).status_code == 201
        path = "/v1/agents/ana/core-memory/blocks/human"
        scoped = {"Authorization": "Bearer ana-key-0123456789"}
        assert api.patch(path, json={"value": "Name: Ana"}, headers=scoped).status_code == 200
        history = api.get(f"{path}/history", headers=admin).json()
        assert [c["actor"] for c in history] == ["http:ops", "http:Ana's laptop"]
        assert api.get("/v1/agents/bob", headers=scoped).status_code == 404, "the name leaves the scope as it was"
    with pytest.raises(InvalidInputError, match="a key's name is 1-40"):
        KeyRing.parse([("MEMVEC_API_KEYS entry 1", "admin-key-0123456789 # <b>me</b>")])


def test_the_letta_block_tools_edit_and_are_recorded_as_tool_calls(memory: Memory) -> None:
    from memvec.agent.tools import ToolBox

    memory.create_agent(AgentSettings(name="ana"))
    box = ToolBox(memory, "ana", session_id="s", turn=1)
    steps = [
        ("memory_insert", {"label": "human", "new_str": "Name: Ana"}),
        ("memory_insert", {"label": "human", "new_str": "Title: Dr", "insert_line": 0}),
        ("memory_replace", {"label": "human", "old_str": "Dr", "new_str": "Prof"}),
        ("memory_rethink", {"label": "persona", "new_memory": "I am brief."}),
        ("memory_finish_edits", {}),
    ]
    for name, arguments in steps:
        outcome = box.run(name, json.dumps(arguments))
        assert outcome.ok, outcome.content
    core = memory.core("ana")
    assert core.get("human").value == "Title: Prof\nName: Ana" and core.get("persona").value == "I am brief."
    assert [c.actor for c in core.history("human")][1:] == [
        "tool:memory_insert",
        "tool:memory_insert",
        "tool:memory_replace",
    ]
    assert not box.run("memory_insert", json.dumps({"label": "human", "new_str": "x", "insert_line": 9})).ok


@pytest.mark.slow
def test_history_and_undo_on_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_cli("--model", "hash:16", "agent", "create", "ana", "--human", "Name: Ana", home=home)
    listed = json.loads(run_cli("--model", "hash:16", "blocks", "history", "ana", "human", "--json", home=home).stdout)
    assert [(c["op"], c["actor"], c["new"]["value"]) for c in listed] == [
        ("create", "cli", ""),
        ("rewrite", "cli", "Name: Ana"),
    ]
    undone = run_cli("--model", "hash:16", "blocks", "undo", "ana", "human", home=home)
    assert undone.stdout.strip() == "human: ''"
    nothing = run_cli("--model", "hash:16", "blocks", "undo", "ana", "nope", home=home, check=False)
    assert nothing.returncode == 5 and "no change to undo" in nothing.stderr


def test_an_mcp_host_edits_blocks_with_the_letta_tools(memory: Memory) -> None:
    from memvec.mcp_server.server import build_server
    from tests.test_mcp import call, run_client

    async def session(client: Any) -> list[tuple[bool, str]]:
        return [
            await call(client, "memory_rethink", label="persona", new_memory="I answer in one line."),
            await call(client, "memory_insert", label="persona", new_str="x", insert_line=5),
        ]

    (rethink_error, _), (insert_error, message) = run_client(build_server(memory, "ana", tools="letta"), session)
    assert not rethink_error and insert_error and "outside block" in message
    assert memory.core("ana").get("persona").value == "I answer in one line."
    assert memory.core("ana").history("persona")[-1].actor == "tool:memory_rethink"


def test_forgetting_a_blocks_history_leaves_its_old_values_in_no_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(32)) as mem:
        mem.create_agent(AgentSettings(name="ana"))
        mem.core("ana").rewrite("human", "Ana's PIN is canary-5b1e")
        mem.core("ana").rewrite("human", "Ana (PIN changed)")
        client = TestClient(create_app(mem), base_url="http://localhost")
        forgotten = client.delete("/v1/agents/ana/core-memory/blocks/human/history")
        assert forgotten.status_code == 200 and forgotten.json()["forgotten"] == 3  # created, two rewrites
        assert mem.core("ana").history("human") == [] and mem.core("ana").get("human").value == "Ana (PIN changed)"
        assert [p for p in home.rglob("*") if p.is_file() and b"canary-5b1e" in p.read_bytes()] == []


def test_a_renamed_block_keeps_its_content_and_each_step_can_be_undone(memory: Memory) -> None:
    memory.create_agent(AgentSettings(name="ana"))
    core = memory.core("ana")
    core.append("human", "Ana likes tea")
    renamed = core.change("human", {"label": "person", "limit": 500})
    assert (renamed.label, renamed.limit) == ("person", 500) and "Ana likes tea" in core.get("person").value
    assert [c.op for c in core.history()][-2:] == ["delete", "create"] and "human" not in {
        b.label for b in core.blocks()
    }
    with pytest.raises(NameTakenError):
        core.change("person", {"label": "persona"})
    assert core.undo("person") is None and core.undo("human") is not None  # back as it was
    assert "Ana likes tea" in core.get("human").value and "person" not in {b.label for b in core.blocks()}
