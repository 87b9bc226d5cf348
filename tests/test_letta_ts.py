"""The official TypeScript SDK, `@letta-ai/letta-client` (pinned in tests/letta_ts/package.json and its
lock, installed with npm on the machine's Node.js by this module), unchanged, against a real
`memvec serve` whose agents answer through the scripted model behind litellm. tests/letta_ts/flow.mjs
makes the calls a Letta app makes and prints what it saw; the judging happens here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import unavailable
from tests.service_helpers import Server

HERE = Path(__file__).parent / "letta_ts"
PINNED = json.loads((HERE / "package.json").read_text())["dependencies"]["@letta-ai/letta-client"]
KEY = "ts-admin-key-0001"


def installed_sdk() -> Path:
    """tests/letta_ts/node_modules as the lock file says (npm ci), unless that version is there already."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable("Node.js and npm are needed for the TypeScript SDK test")
    marker = HERE / "node_modules" / "@letta-ai" / "letta-client" / "package.json"
    if not marker.exists() or json.loads(marker.read_text())["version"] != PINNED:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            unavailable(f"npm ci failed: {done.stderr[-2000:]}")
    return HERE


def run_flow(url: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", "flow.mjs"],
        cwd=installed_sdk(),
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "MEMVEC_URL": url, "MEMVEC_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


@pytest.mark.slow
def test_the_typescript_sdk_manages_agents_blocks_passages_and_streams_a_reply(tmp_path: Path) -> None:
    server = Server(tmp_path / "home", keys=KEY, module="tests.scripted_serve").start()
    try:
        seen = run_flow(server.url)
    finally:
        server.stop()
    assert seen["created"] == {"id": seen["created"]["id"], "name": "ts-agent", "labels": ["human", "persona"]}
    assert seen["listed"] == [seen["created"]["id"]] and seen["retrieved"] == "ts-agent"
    assert seen["updated"] == {"description": "changed", "tags": ["ts", "more"]}
    assert seen["block_labels"] == ["human", "persona"] and seen["block_value"] == "Name: Ana"
    assert seen["block_updated"] == "Name: Ana Lima"
    shared = seen["shared"]
    assert shared["id"].startswith("block-") and shared["attached"] and shared["listed"] == [shared["id"]]
    assert shared["seen_by_other"] == "Project: gemini" == shared["retrieved"]
    assert shared["updated"] == "Project: hermes"
    assert shared["detached"] == ["human"] and shared["after_delete"] == 404
    assert seen["passages"] == ["Ana keeps bees in Lisbon", "The meeting moved to Friday"]
    assert seen["search"] == ["Ana keeps bees in Lisbon"]
    assert seen["after_delete"] == ["The meeting moved to Friday"]
    assert seen["after_agent_delete"] == 404
    check_tools(seen["tools"])
    check_files(seen["files"])
    check_stream(seen["stream"], seen["transcript"])
    check_conversation(seen["conversations"])
    assert seen["exported"] == {"agents": ["ts-agent"], "blocks": ["human", "persona"]}  # Letta's agent file


def check_tools(tools: dict[str, Any]) -> None:
    """A custom tool made from source, upserted by name (same id), attached to the agent and detached."""
    assert tools["id"].startswith("tool-") and tools["type"] == "custom" and tools["required"] == ["num_sides"]
    assert tools["upserted"] == tools["id"] and tools["description"] == "Roll one die."
    assert tools["named"] == [tools["id"]]
    assert tools["attached"][-1] == "roll_dice" and "send_message" in tools["attached"]
    assert "roll_dice" not in tools["detached"] and "send_message" in tools["detached"]


def check_files(files: dict[str, Any]) -> None:
    """A folder's files as file blocks: open at their start once uploaded, a second upload of a name
    renamed as Letta renames it, opened and closed through the agent-files routes."""
    assert files["names"] == ["notes.txt", "notes_(1).txt", "notes.txt"]
    head = "[Viewing file start (out of 30 lines)]"
    assert files["blocks"] == [
        {"label": "ts-shelf/notes.txt", "open": True, "head": head},
        {"label": "ts-shelf/notes_(1).txt", "open": True, "head": head},
    ]
    assert files["listed"] == [["ts-shelf/notes.txt", True], ["ts-shelf/notes_(1).txt", True]]
    assert files["closed"] == ["ts-shelf/notes.txt"] and files["reopened"] == []
    assert files["closedAll"] == ["ts-shelf/notes.txt", "ts-shelf/notes_(1).txt"]
    assert files["fileTools"] == ["grep_files", "open_files", "semantic_search_files"]
    assert files["after"] == 0  # the folder deleted, its files went with it


def check_stream(events: list[dict[str, Any]], transcript: list[dict[str, Any]]) -> None:
    """The scripted model's reply ("(script exhausted)" through send_message) came in token pieces,
    ended by the stop reason and usage; the transcript holds the turn once."""
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["stop_reason", "usage_statistics"], kinds
    assert events[-2]["stop"] == "end_turn" and events[-1]["steps"] == 1
    pieces = [e for e in events if e["type"] == "assistant_message"]
    assert len(pieces) > 1 and "".join(p["text"] for p in pieces) == "(script exhausted)"
    assert len({p["id"] for p in pieces}) == 1, "the pieces of one message share its id"
    said = [(m["type"], m["text"]) for m in transcript if m["type"] in {"user_message", "assistant_message"}]
    assert said == [("user_message", "hello"), ("assistant_message", "(script exhausted)")]


def check_conversation(seen: dict[str, Any]) -> None:
    """A conversation of the agent: made with its summary, a message streamed to it, listed back."""
    assert seen["id"].startswith("conv-") and seen["agent"] and seen["summary"] == "ts thread"
    assert seen["kinds"][-2:] == ["stop_reason", "usage_statistics"] and "assistant_message" in seen["kinds"]
    assert seen["said"][0] == ["user_message", "hi in a thread"] and seen["said"][-1][0] == "assistant_message"
    assert seen["listed"] == [seen["id"]] and seen["messaged"]
