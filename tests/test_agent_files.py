"""Letta Agent Files (.af) from ../shared/data/letta-agent-files: through letta-client's
`import_file` against a real `memvec serve`, and through `memvec import`."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import letta_client
import pytest
from letta_client import Letta

from memvec import Memory
from tests.conftest import SHARED_DATA, require_data, run_cli
from tests.service_helpers import Server

AGENT_FILES = SHARED_DATA / "letta-agent-files"
FILES = ["memgpt_agent_with_convo.af", "deep_research_agent.af"]


def load(name: str) -> dict[str, Any]:
    path = AGENT_FILES / name
    require_data(path)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def with_conversation(data: dict[str, Any]) -> dict[str, Any]:
    """The real file plus a short conversation in Letta's message format (content parts, ids)."""
    data = copy.deepcopy(data)
    agent = data["agents"][0]
    said = [
        ("user", "Hi, I'm Chad. I race sailboats on the Bay every Sunday."),
        ("assistant", "Nice to meet you Chad! Sailing every Sunday sounds great."),
        ("user", "My favourite restaurant is Taste of the Himalayas in Berkeley."),
    ]
    for n, (role, text) in enumerate(said, start=1):
        agent["messages"].append(
            {
                "type": "message",
                "role": role,
                "id": f"message-{n}",
                "name": None,
                "content": [{"type": "text", "text": text}],
                "created_at": f"2025-11-0{n}T10:00:00+00:00",
                "tool_calls": None,
            }
        )
    agent["in_context_message_ids"] = ["message-0", "message-3"]
    return data


def expected_blocks(data: dict[str, Any]) -> list[tuple[str, str, int, bool]]:
    by_id = {b["id"]: b for b in data["blocks"]}
    return [
        (by_id[i]["label"], by_id[i]["value"], by_id[i]["limit"], bool(by_id[i]["read_only"]))
        for i in data["agents"][0]["block_ids"]
    ]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "home").start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("name", FILES)
def test_import_file_through_letta_client(server: Server, name: str) -> None:
    data = load(name)
    with Letta(base_url=server.url, _strict_response_validation=True) as client:
        imported = client.agents.import_file(file=(name, json.dumps(data).encode(), "application/json"))
        assert len(imported.agent_ids) == 1
        agent = client.agents.retrieve(imported.agent_ids[0])
        source = data["agents"][0]
        assert agent.system == source["system"] and agent.llm_config.model == source["llm_config"]["handle"]
        assert agent.llm_config.context_window == source["llm_config"]["context_window"]
        assert [(b.label, b.value, b.limit, b.read_only) for b in agent.blocks] == expected_blocks(data)
        skipped = (imported.model_extra or {})["skipped"]
        assert skipped["tools"] == [t["name"] for t in data["tools"]] and skipped["system_messages"] == 1
        assert agent.id.startswith("agent-") and agent.name == source["name"] + "_copy"  # Letta's default
        # as in Letta, each import is a new agent, named as the file says when asked not to add `_copy`
        again = client.agents.import_file(file=(name, json.dumps(data).encode()), append_copy_suffix=False)
        second = client.agents.retrieve(again.agent_ids[0])
        assert second.id != agent.id and second.name == source["name"]
        renamed = client.agents.import_file(file=(name, json.dumps(data).encode()), override_name="My research agent")
        assert client.agents.retrieve(renamed.agent_ids[0]).name == "My research agent"


def test_an_imported_conversation_is_searchable_with_citations(server: Server) -> None:
    data = with_conversation(load("memgpt_agent_with_convo.af"))
    with Letta(base_url=server.url, _strict_response_validation=True) as client:
        agent_id = client.agents.import_file(file=("convo.af", json.dumps(data).encode())).agent_ids[0]
        listed = list(client.agents.messages.list(agent_id, after="0", order="asc"))  # past the system message
        assert [(m.message_type, m.content) for m in listed] == [  # type: ignore[union-attr]
            ("user_message", "Hi, I'm Chad. I race sailboats on the Bay every Sunday."),
            ("assistant_message", "Nice to meet you Chad! Sailing every Sunday sounds great."),
            ("user_message", "My favourite restaurant is Taste of the Himalayas in Berkeley."),
        ]
        state = client.agents.retrieve(agent_id)
        assert state.message_ids == [listed[-1].id]  # what was in Letta's context is in memvec's
    import httpx

    found = httpx.get(
        f"{server.url}/v1/agents/{agent_id}/recall-memory/search", params={"query": "Himalayas restaurant", "top_k": 1}
    ).json()["results"][0]
    assert found["content"].startswith("My favourite restaurant")
    assert found["citation"] == {
        "session_id": "agent-file:memgpt_agent",  # the agent the file had
        "turn_id": "4",
        "source_url": None,
        "document": None,
    }


def test_a_broken_agent_file_writes_nothing(server: Server) -> None:
    data = load("deep_research_agent.af")
    broken = copy.deepcopy(data)
    broken["blocks"][2]["label"] = "not a label!"
    with Letta(base_url=server.url, max_retries=0) as client:
        with pytest.raises(letta_client.BadRequestError, match="label"):
            client.agents.import_file(file=("broken.af", json.dumps(broken).encode()))
        with pytest.raises(letta_client.BadRequestError, match="not JSON"):
            client.agents.import_file(file=("x.af", b"{nope"))
        assert list(client.agents.list()) == []


@pytest.mark.parametrize("name", FILES)
@pytest.mark.slow
def test_memvec_import_on_the_command_line(tmp_path: Path, name: str) -> None:
    home, data = tmp_path / "home", with_conversation(load(name))
    path = tmp_path / name
    path.write_text(json.dumps(data))
    report = json.loads(run_cli("--model", "hash:64", "import", str(path), "--json", home=home).stdout)
    agent = report["agent_ids"][0]
    assert report["imported"][0]["messages"] == 3
    again = run_cli("--model", "hash:64", "import", str(path), home=home, check=False)
    assert again.returncode == 2 and "already exist" in again.stderr
    with Memory.open(home, model="hash:64") as mem:
        blocks = [(b.label, b.value, b.limit, b.read_only) for b in mem.core(agent).blocks()]
        assert blocks == expected_blocks(data)
        hit = mem.recall(agent).search("Himalayas restaurant in Berkeley", k=1, mode="bm25")[0]
        assert hit.text.startswith("My favourite restaurant") and hit.citation.turn_id == "4"


def test_export_file_in_lettas_format_and_back(server: Server) -> None:
    """letta-client's `export_file(use_legacy_format=False)` is Letta's agent file: the agent's
    blocks, tools, folders with their files' text and its conversation, which import back as a new
    agent; without the switch it stays memvec's lossless export."""
    with Letta(base_url=server.url, max_retries=0) as client:
        agent = client.agents.create(
            name="Sailing coach", memory_blocks=[{"label": "human", "value": "Name: Chad", "limit": 500}]
        )
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "I race on Sundays"}])
        client.agents.passages.create(agent.id, text="Bluefin regatta: an archival passage")
        folder = client.folders.create(name="notes")
        client.folders.files.upload(folder.id, file=("rules.md", b"# Rules\n\nStarboard has right of way.\n"))
        client.agents.folders.attach(folder.id, agent_id=agent.id)
        data = json.loads(client.agents.export_file(agent.id, use_legacy_format=False))
        exported = data["agents"][0]
        assert exported["id"] == "agent-0" and exported["name"] == "Sailing coach"
        blocks = {b["id"]: b for b in data["blocks"]}
        assert [(blocks[i]["label"], blocks[i]["value"], blocks[i]["limit"]) for i in exported["block_ids"]] == [
            ("human", "Name: Chad", 500)
        ]
        said = [(m["role"], m["content"][0]["text"]) for m in exported["messages"]]
        assert said == [("user", "I race on Sundays")]
        assert "send_message" in {t["name"] for t in data["tools"]} and len(exported["tool_ids"]) == len(data["tools"])
        assert [(s["id"], s["name"]) for s in data["sources"]] == [("source-0", "notes")]
        assert [(f["file_name"], f["source_id"]) for f in data["files"]] == [("rules.md", "source-0")]
        assert "right of way" in data["files"][0]["content"] and "Bluefin" not in json.dumps(data)
        assert json.loads(client.agents.export_file(agent.id))["format"] == "memvec-agent-export"
        with pytest.raises(letta_client.BadRequestError, match="legacy"):
            client.agents.export_file(agent.id, use_legacy_format=True)
        copy_id = client.agents.import_file(file=("coach.af", json.dumps(data).encode())).agent_ids[0]
        copied = client.agents.retrieve(copy_id)
        assert copied.name == "Sailing coach_copy" and copied.id != agent.id
        assert [(b.label, b.value) for b in copied.blocks] == [("human", "Name: Chad")]
        listed = list(client.agents.messages.list(copy_id, after="0", order="asc"))
        assert [m.content for m in listed] == ["I race on Sundays"]  # type: ignore[union-attr]
        scrubbed = json.loads(client.agents.export_file(agent.id, use_legacy_format=False, scrub_messages=True))
        assert scrubbed["agents"][0]["messages"] == []
