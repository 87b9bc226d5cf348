"""Mistakes say so: an unknown agent is exit 5 with the API's message (never "no hits", exit 0), a
taken port is exit 6 before any model loads, the CLI takes the API's timestamps, a deleted agent
leaves `stats`, and `memvec mcp` on a terminal says what it waits for."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvec import Memory
from tests.test_cli import Cli


@pytest.fixture
def memvec(home: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(home, capsys)


@pytest.mark.parametrize(
    "args",
    [
        ["search", "tea", "--agent", "anna", "--tier", "archival"],
        ["list", "--agent", "anna", "--tier", "recall"],
        ["forget", "--agent", "anna", "--tag", "x"],
        ["verify", "--agent", "anna"],
        ["sweep", "--agent", "anna"],
    ],
)
def test_an_unknown_agent_is_exit_5_with_the_apis_message(memvec: Cli, args: list[str]) -> None:
    assert memvec("add", "Ana likes tea", "--agent", "ana", "--tier", "archival")[0] == 0
    code, out, err = memvec(*args)
    assert (code, out) == (5, "") and "agent 'anna' not found" in err
    assert memvec(*[("ana" if a == "anna" else a) for a in args])[0] == 0


@pytest.mark.parametrize(
    "stamp", ["2024-05-07T10:00:00Z", "2024-05-07T12:00:00+02:00", "2024-05-07 10:00:00", "2024-05-07"]
)
def test_the_cli_takes_the_timestamps_the_api_takes(memvec: Cli, stamp: str) -> None:
    code, out, err = memvec("add", "dated", "--agent", "ana", "--tier", "archival", "--created-at", stamp, "--json")
    assert code == 0, err
    assert json.loads(out)["created_at"].startswith("2024-05-07T")
    code, out, _ = memvec("search", "dated", "--agent", "ana", "--tier", "archival", "--since", stamp, "--json")
    assert code == 0 and len(json.loads(out)) == 1


def test_a_timestamp_that_is_not_one_is_exit_2(memvec: Cli) -> None:
    code, _, err = memvec("add", "x", "--agent", "ana", "--tier", "archival", "--created-at", "next tuesday")
    assert code == 2 and "is not a timestamp" in err


def test_a_new_home_is_announced_once(memvec: Cli, home: Path) -> None:
    code, _, err = memvec("stats")
    assert code == 0 and f"created a new home at {home}" in err
    code, _, err = memvec("stats")
    assert code == 0 and "created a new home" not in err


def test_a_deleted_agent_leaves_stats(memvec: Cli, home: Path) -> None:
    for agent in ("gone", "kept"):
        assert memvec("add", "hello", "--agent", agent, "--tier", "archival")[0] == 0
    with Memory.open(home, model="hash:64") as mem:
        mem.delete_agent("gone")
    code, out, _ = memvec("stats", "--json")
    assert code == 0 and [p["agent"] for p in json.loads(out)["partitions"]] == ["kept"]


@pytest.mark.slow
def test_a_taken_port_is_exit_6_before_the_model_loads(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "memvec", "--home", str(tmp_path / "home"), "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 6 and f"127.0.0.1:{port} is already in use" in done.stderr, done.stderr
    assert "embedding with" not in done.stderr  # refused before the model was loaded


@pytest.mark.slow
def test_mcp_on_a_terminal_says_it_waits_for_a_client(tmp_path: Path) -> None:
    leader, follower = pty.openpty()  # stdin is a terminal, as when a person types `memvec mcp`
    process = subprocess.Popen(
        [sys.executable, "-m", "memvec", "--home", str(tmp_path / "home"), "--model", "hash:64", "mcp"],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    said = b""
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        while b"waiting for an MCP client" not in said and time.monotonic() < deadline:
            if select.select([process.stderr], [], [], 1.0)[0]:
                said += os.read(process.stderr.fileno(), 4096)
    finally:
        process.kill()
        process.communicate(timeout=30)  # and closes its pipes
        os.close(leader)
        os.close(follower)
    assert b"waiting for an MCP client on stdin/stdout" in said, said


def test_agents_are_listed_and_deleted_on_the_command_line(memvec: Cli) -> None:
    for agent, text in (("ana", "Ana keeps bees"), ("bo", "Bo runs")):
        assert memvec("add", text, "--agent", agent, "--tier", "archival")[0] == 0
    code, out, _ = memvec("agent", "list", "--json")
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == [
        {"name": "ana", "model": None, "recall": 0, "archival": 1},
        {"name": "bo", "model": None, "recall": 0, "archival": 1},
    ]
    assert memvec("agent", "delete", "bo")[0] == 1, "without --yes and no terminal to answer: aborted"
    code, out, _ = memvec("agent", "delete", "bo", "--yes")
    assert code == 0 and "deleted agent bo (1 records)" in out
    assert memvec("agent", "delete", "bo", "--yes")[0] == 5
    code, out, _ = memvec("agent", "list")
    assert out.splitlines() == ["ana  model -  recall 0  archival 1"]


WARM_UP = """
import sys
from memvec import Memory
from memvec.cli.serve import warm_llm_library
from memvec.types import AgentSettings
with Memory.open(sys.argv[1], model="hash:64") as mem:
    if sys.argv[2] == "model":
        mem.create_agent(AgentSettings(name="talker", model="openai/gpt-4o-mini"))
    warm_llm_library(mem).join(timeout=120)
    print("litellm" in sys.modules)
"""


@pytest.mark.parametrize(("agent", "loaded"), [("model", "True"), ("none", "False")])
def test_serve_imports_litellm_ahead_only_for_a_home_with_a_model(tmp_path: Path, agent: str, loaded: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP, str(tmp_path / "home"), agent],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == loaded
