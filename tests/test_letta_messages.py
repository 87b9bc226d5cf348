"""A reply's messages as Letta's clients read them, through the official letta-client against a real
`memvec serve` whose agent answers through litellm (an OpenAI-shaped scripted model,
benchmarks/openai_script.py): each message's run, step and otid (ending in its index within its step),
the client's otid kept with what it sent, and tool calls listed from the store as call and return."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import Letta, UnprocessableEntityError

from tests.service_helpers import Server, letta_for, serving_with_openai_script

ADMIN = "messages-admin-01"
SAY = "Call the send_message tool with the message 'Teamwork makes the dream work'."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving_with_openai_script(tmp_path_factory.mktemp("letta-messages") / "home", keys=ADMIN) as srv:
        yield srv


@pytest.fixture
def client(server: Server) -> Iterator[Letta]:
    with letta_for(server, ADMIN) as letta:
        yield letta


def _kinds(messages: list[Any]) -> list[str]:
    return [m.message_type for m in messages]


def test_a_reply_carries_its_run_step_and_otids_and_the_store_keeps_them(client: Letta) -> None:
    agent = client.agents.create(name="speaker", model="openai/gpt-4o-mini")
    sent_otid = str(uuid.uuid4())
    reply = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": SAY, "otid": sent_otid}])
    [said] = reply.messages
    assert said.message_type == "assistant_message" and said.otid and said.otid.endswith("0")
    assert said.run_id and said.run_id.startswith("run-") and said.step_id and said.step_id.startswith("step-")
    system, user, stored = client.agents.messages.list(agent.id).items
    assert system.message_type == "system_message" and user.otid == sent_otid and user.run_id == said.run_id
    assert (stored.id, stored.otid, stored.run_id, stored.step_id) == (said.id, said.otid, said.run_id, said.step_id)
    as_call = client.agents.messages.list(agent.id, after=user.id, use_assistant_message=False).items
    assert _kinds(as_call) == ["tool_call_message", "tool_return_message"]
    assert as_call[0].tool_call.name == "send_message" and as_call[0].otid == said.otid  # type: ignore[union-attr]
    assert as_call[1].otid and as_call[1].otid.endswith("-0")


def test_a_tool_call_is_listed_from_the_store_as_its_call_and_its_return(client: Letta, tmp_path: Path) -> None:
    agent = client.agents.create(name="grepper", model="openai/gpt-4o-mini")
    folder = client.folders.create(name="notes")
    client.agents.folders.attach(folder.id, agent_id=agent.id)
    (tmp_path / "n.txt").write_text("alpha\nbeta\n")
    with open(tmp_path / "n.txt", "rb") as handle:
        client.folders.files.upload(folder.id, file=handle)
    reply = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "Use ONLY the grep_files tool to search for `beta`."}]
    )
    assert _kinds(reply.messages) == ["tool_call_message", "tool_return_message", "assistant_message"]
    run_id = reply.messages[0].run_id
    listed = [m for m in client.agents.messages.list(agent.id).items if m.run_id == run_id]
    assert _kinds(listed) == ["user_message", "tool_call_message", "tool_return_message", "assistant_message"]
    call, returned = listed[1], listed[2]
    assert call.tool_call.name == "grep_files" and call.otid == reply.messages[0].otid  # type: ignore[union-attr]
    assert returned.tool_return.startswith("Found 1 total matches") and returned.status == "success"  # type: ignore[union-attr]
    assert returned.tool_call_id == call.tool_call.tool_call_id  # type: ignore[union-attr]
    assert call.step_id != listed[3].step_id  # the answer came from the next model call


def test_a_memory_only_agent_keeps_the_otid_it_was_sent(client: Letta) -> None:
    agent = client.agents.create(name="recorder")
    reply = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "note", "otid": "mine-7"}])
    assert reply.messages[0].otid == "mine-7"
    assert client.agents.messages.list(agent.id, after="0").items[0].otid == "mine-7"


def _finished(client: Letta, run_id: str) -> Any:
    for _ in range(200):
        run = client.runs.retrieve(run_id)
        if run.status in ("completed", "failed"):
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end: {run.status}")


def test_every_send_is_a_run_and_a_background_send_runs_after_the_answer(client: Letta) -> None:
    agent = client.agents.create(name="runner", model="openai/gpt-4o-mini")
    reply = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": SAY}])
    run_id = reply.messages[0].run_id
    assert run_id is not None
    run = client.runs.retrieve(run_id)
    assert (run.status, run.stop_reason, run.agent_id, run.background) == ("completed", "end_turn", agent.id, False)
    assert [m.id for m in client.runs.messages.list(run_id)][-1] == reply.messages[0].id
    assert client.runs.usage.retrieve(run_id).total_tokens == reply.usage.total_tokens
    started = client.agents.messages.create_async(agent.id, messages=[{"role": "user", "content": SAY}])
    assert started.status in ("created", "running", "completed") and started.background
    done = _finished(client, started.id)
    assert done.status == "completed" and done.completed_at is not None
    written = list(client.runs.messages.list(started.id))
    assert _kinds(written) == ["user_message", "assistant_message"] and all(m.run_id == started.id for m in written)
    listed = [r.id for r in client.runs.list(agent_ids=[agent.id])]
    assert listed[:2] == [started.id, run_id]  # newest first


def test_a_background_run_whose_model_fails_ends_failed_with_the_reason(client: Letta) -> None:
    agent = client.agents.create(name="unreachable", model="ollama/not-running-here")
    started = client.agents.messages.create_async(agent.id, messages=[{"role": "user", "content": "hi"}])
    done = _finished(client, started.id)
    assert done.status == "failed" and "ModelCallError" in str((done.metadata or {}).get("error"))
    assert client.agents.messages.list(agent.id, after="0").items == []  # a turn the model never answered keeps nothing


def test_a_background_run_shows_only_the_message_types_its_send_asked_for(client: Letta) -> None:
    agent = client.agents.create(name="filtered", model="openai/gpt-4o-mini")
    started = client.agents.messages.create_async(
        agent.id, messages=[{"role": "user", "content": SAY}], include_return_message_types=["assistant_message"]
    )
    _finished(client, started.id)
    assert _kinds(list(client.runs.messages.list(started.id))) == ["assistant_message"]


def test_an_agent_that_answers_in_text_streams_its_answer_as_the_assistant_message(client: Letta) -> None:
    """Offered no send_message (Letta's letta_v1_agent), the model's text is its answer: streamed in
    pieces of one assistant message, then end_turn; a finished run replays its messages as a stream."""
    agent = client.agents.create(name="texter", model="openai/gpt-4o-mini", include_base_tools=False)
    ask = "This is an automated test message. Reply with the message 'Teamwork makes the dream work'."
    sent: Any = [{"role": "user", "content": ask}]
    chunks = list(client.agents.messages.create(agent.id, messages=sent, streaming=True, stream_tokens=True))
    kinds = [c.message_type for c in chunks]
    assert kinds[-2:] == ["stop_reason", "usage_statistics"] and set(kinds[:-2]) == {"assistant_message"}
    assert "".join(c.content for c in chunks[:-2]) == "Teamwork makes the dream work"  # type: ignore[union-attr, misc]
    assert len({c.otid for c in chunks[:-2]}) == 1 and chunks[-2].stop_reason == "end_turn"  # type: ignore[union-attr]
    replayed = list(client.runs.messages.stream(chunks[0].run_id))  # type: ignore[union-attr, arg-type]
    assert [m.message_type for m in replayed] == ["assistant_message", "stop_reason", "usage_statistics"]
    assert replayed[0].content == "Teamwork makes the dream work"  # type: ignore[union-attr]


def test_a_response_format_from_model_settings_reaches_the_model(client: Letta) -> None:
    """Letta's model_settings.response_format is kept with the agent and sent with each model call:
    the scripted model answers a json_schema with an object of it, and only then."""
    shape = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
    wanted = {"type": "json_schema", "json_schema": {"name": "answer", "schema": shape}}
    agent = client.agents.create(
        name="structured", model="openai/gpt-4o-mini", extra_body={"model_settings": {"response_format": wanted}}
    )
    reply = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "Capital of France?"}])
    assert json.loads(reply.messages[-1].content)["response"]  # type: ignore[union-attr, arg-type]
    plain = client.agents.create(name="unstructured", model="openai/gpt-4o-mini")
    reply = client.agents.messages.create(plain.id, messages=[{"role": "user", "content": "Capital of France?"}])
    assert reply.messages[-1].content == "Hello! How can I help you today?"  # type: ignore[union-attr]
    with pytest.raises(UnprocessableEntityError):
        client.agents.create(name="bad", extra_body={"model_settings": {"response_format": {"type": "xml"}}})
