"""An agent's folders as Letta shows them, through the official letta-client against a real `memvec
serve` with the real model: file blocks in its memory and prompt, the agent-files routes, the file
tools an agent calls through litellm (an OpenAI-shaped scripted model, benchmarks/openai_script.py),
and duplicate uploads renamed as Letta renames them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import Letta

from tests.service_helpers import Server, letta_for, serving_with_openai_script

ADMIN = "files-admin-01"
HUNDRED = "\n".join(f"x{n} = {n}" for n in range(1, 101)) + "\n"
FILE_TOOLS = {"open_files", "grep_files", "semantic_search_files"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving_with_openai_script(
        tmp_path_factory.mktemp("letta-files") / "home", keys=ADMIN, model="onnx-int8:all-MiniLM-L6-v2"
    ) as srv:
        yield srv


@pytest.fixture
def client(server: Server) -> Iterator[Letta]:
    with letta_for(server, ADMIN) as letta:
        yield letta


def _system(client: Letta, agent_id: str) -> str:
    shown = client.post(f"/v1/agents/{agent_id}/recompile", cast_to=object, body={})
    payload = client.post(f"/v1/agents/{agent_id}/messages/preview-raw-payload", cast_to=dict[str, Any], body={})
    assert payload["messages"][0]["content"] == shown  # what recompile shows is what the model gets
    return str(shown)


def _ask(client: Letta, agent_id: str, text: str) -> Any:
    reply = client.agents.messages.create(agent_id, messages=[{"role": "user", "content": text}])
    [returned] = [m for m in reply.messages if m.message_type == "tool_return_message"]
    assert returned.status == "success", returned
    return returned


def _upload(client: Letta, folder_id: str, path: Path, text: str) -> Any:
    path.write_text(text)
    with open(path, "rb") as handle:
        return client.folders.files.upload(folder_id, file=handle)


def test_an_attached_folders_files_are_file_blocks_the_agent_opens_with_its_tools(
    client: Letta, tmp_path: Path
) -> None:
    agent = client.agents.create(name="reader", model="openai/gpt-4o-mini", memory_blocks=[])
    assert agent.llm_config.context_window == 128_000  # the model's window, as Letta sets it
    assert not FILE_TOOLS & {t.name for t in agent.tools}
    folder = client.folders.create(name="shelf")
    client.agents.folders.attach(folder.id, agent_id=agent.id)
    uploaded = _upload(client, folder.id, tmp_path / "hundred.py", HUNDRED)
    state = client.agents.retrieve(agent.id)
    [block] = state.memory.file_blocks or []
    assert (block.label, block.is_open, block.file_id) == ("shelf/hundred.py", True, uploaded.id)
    assert block.value.startswith("[Viewing file start (out of 100 lines)]\n1: x1 = 1\n")
    assert {t.name for t in state.tools if t.tool_type == "letta_files_core"} == FILE_TOOLS
    payload = client.post(
        f"/v1/agents/{agent.id}/messages/preview-raw-payload",
        cast_to=dict[str, Any],
        body={"messages": [{"role": "user", "content": "hi"}]},
    )
    assert '<directory name="shelf">\n<file status="open" name="shelf/hundred.py">' in payload["messages"][0]["content"]
    assert payload["messages"][-1] == {"role": "user", "content": "hi"}
    assert {t["function"]["name"] for t in payload["tools"]} >= FILE_TOOLS

    said = _ask(
        client,
        agent.id,
        "Use ONLY the open_files tool to open the file named shelf/hundred.py with offset 49 and length 2",
    )
    assert said.tool_return == "* Opened shelf/hundred.py (lines 50-51)"
    [block] = client.agents.retrieve(agent.id).memory.file_blocks or []
    assert block.value == "[Viewing lines 50 to 51 (out of 100 lines)]\n50: x50 = 50\n51: x51 = 51"
    found = _ask(client, agent.id, "Use ONLY the grep_files tool to search for `x77 = 7`.")
    assert "> 77: x77 = 77" in found.tool_return and "Found 1 total matches across 1 files" in found.tool_return
    meant = _ask(client, agent.id, "Use ONLY the semantic_search_files tool to search for x42 = 42.")
    assert "=== shelf/hundred.py (passage #1)" in meant.tool_return


def test_the_agent_files_routes_open_close_and_list(client: Letta, tmp_path: Path) -> None:
    agent = client.agents.create(name="lister", model="openai/gpt-4o-mini", max_files_open=1)
    folder = client.folders.create(name="pile")
    client.agents.folders.attach(folder.id, agent_id=agent.id)
    first = _upload(client, folder.id, tmp_path / "a.txt", "alpha\n")
    second = _upload(client, folder.id, tmp_path / "b.txt", "beta\n")
    listed = list(client.agents.files.list(agent.id))
    assert [(f.file_name, f.is_open) for f in listed] == [("pile/a.txt", False), ("pile/b.txt", True)]
    assert client.agents.files.open(first.id, agent_id=agent.id) == ["pile/b.txt"]  # one open at most
    assert '<file status="open" name="pile/a.txt">' in _system(client, agent.id)
    client.agents.files.close(first.id, agent_id=agent.id)
    assert '<file status="closed" name="pile/a.txt">' in _system(client, agent.id)
    assert [f.file_name for f in client.agents.files.list(agent.id, is_open=False)] == ["pile/a.txt", "pile/b.txt"]
    client.agents.files.open(second.id, agent_id=agent.id)
    assert client.agents.files.close_all(agent.id) == ["pile/b.txt"]
    client.folders.files.delete(second.id, folder_id=folder.id)
    assert [b.label for b in client.agents.retrieve(agent.id).memory.file_blocks or []] == ["pile/a.txt"]
    client.agents.folders.detach(folder.id, agent_id=agent.id)
    state = client.agents.retrieve(agent.id)
    assert not state.memory.file_blocks and not FILE_TOOLS & {t.name for t in state.tools}
    assert "<directories>" not in _system(client, agent.id)


def test_a_second_upload_of_a_name_is_renamed_and_names_may_hold_folders(client: Letta, tmp_path: Path) -> None:
    folder = client.folders.create(name="dupes")
    names = [_upload(client, folder.id, tmp_path / "test.txt", "test\n").file_name for _ in range(3)]
    assert names == ["test.txt", "test_(1).txt", "test_(2).txt"]
    files = list(client.folders.files.list(folder.id))
    assert {f.original_file_name for f in files} == {"test.txt"}
    with open(tmp_path / "test.txt", "rb") as handle:
        nested = client.folders.files.upload(folder.id, file=handle, name="a/b/c.txt")
    assert (nested.file_name, nested.original_file_name) == ("a/b/c.txt", "a/b/c.txt")
    with open(tmp_path / "test.txt", "rb") as handle, pytest.raises(Exception, match="already exists"):
        client.folders.files.upload(folder.id, file=handle, name="a/b/c.txt", duplicate_handling="error")
    fetched = client.get(f"/v1/sources/{folder.id}/files/{nested.id}", cast_to=dict[str, Any])
    assert fetched["processing_status"] == "completed"
