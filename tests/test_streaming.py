"""Streamed replies (#36 item 1) with the official letta-client (pinned) against memvec's app under
uvicorn on a real port, the model scripted behind litellm and streamed through litellm's own
streaming: the steps in order, the assistant's text token by token, a provider failure as an error
event, and a client that leaves mid-stream leaving a whole transcript and a free agent."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import letta_client
import pytest
from letta_client import Letta

from benchmarks import streaming
from memvec.agent.stream import decoded_prefix
from tests.conftest import unavailable
from tests.scripted_llm import SCRIPTED, STREAM_PIECE, ScriptedLLM, ToolCall, Turn, say
from tests.service_helpers import served_in_process

NOTE = "User likes green tea"
ANSWER = 'Noted: you like "green tea" \u2014 I saved it.'


@pytest.fixture
def agent_server(tmp_path: Path, llm: ScriptedLLM) -> Iterator[str]:
    with served_in_process(tmp_path / "home") as url:
        yield url


def _script(llm: ScriptedLLM) -> None:
    llm.script = [
        Turn(content="I should save this.", calls=[ToolCall("archival_memory_insert", {"content": NOTE})]),
        say(ANSWER),
    ]


def _agent(letta: Letta) -> str:
    return letta.agents.create(name="talker", model="scripted/agent").id


def test_streaming_true_gives_each_step_in_order_then_the_stop_reason_and_usage(
    agent_server: str, llm: ScriptedLLM
) -> None:
    _script(llm)
    with Letta(base_url=agent_server, _strict_response_validation=True) as letta:
        agent = _agent(letta)
        chunks = list(letta.agents.messages.create(agent, input="I like green tea", streaming=True))
        kinds = [c.message_type for c in chunks]
        assert kinds == [  # send_message shows as the assistant message it sent, as Letta streams it
            "reasoning_message",
            "tool_call_message",
            "tool_return_message",
            "assistant_message",
            "stop_reason",
            "usage_statistics",
        ]
        assert chunks[1].tool_call.name == "archival_memory_insert"  # type: ignore[union-attr]
        assert chunks[3].content == ANSWER  # type: ignore[union-attr]
        assert chunks[4].stop_reason == "end_turn" and chunks[5].step_count == 2  # type: ignore[union-attr]
        assert chunks[5].total_tokens == chunks[5].prompt_tokens + chunks[5].completion_tokens  # type: ignore
        assert llm.streamed == 0, "whole steps: the provider is not asked to stream"
        assert letta.agents.passages.search(agent, query="green tea").results[0].content == NOTE


@pytest.mark.slow
def test_stream_tokens_gives_the_assistant_text_in_pieces_through_litellms_streaming(
    agent_server: str, llm: ScriptedLLM
) -> None:
    _script(llm)
    with Letta(base_url=agent_server, _strict_response_validation=True) as letta:
        agent = _agent(letta)
        with pytest.warns(DeprecationWarning):  # letta-client marks its /stream method deprecated; Letta serves it
            stream = letta.agents.messages.stream(agent, input="I like green tea", stream_tokens=True)
        chunks = list(stream)
        assert llm.streamed == 2
        reasoning = [c for c in chunks if c.message_type == "reasoning_message"]
        spoken = [c for c in chunks if c.message_type == "assistant_message"]
        assert "".join(str(c.reasoning) for c in reasoning) == "I should save this."
        assert len(reasoning) == -(-len("I should save this.") // STREAM_PIECE) and len({c.id for c in reasoning}) == 1
        assert "".join(str(c.content) for c in spoken) == ANSWER
        assert len(spoken) > 5 and len({c.id for c in spoken}) == 1, "token by token, one message"
        kinds = [c.message_type for c in chunks]
        first_call = kinds.index("tool_call_message")
        assert set(kinds[:first_call]) == {"reasoning_message"}
        assert kinds[-2:] == ["stop_reason", "usage_statistics"]
        usage = chunks[-1]  # the provider's counts of its two streamed steps (100 + 10 tokens each)
        assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (200, 20, 220)  # type: ignore
        assert kinds.index("tool_return_message") < kinds.index("assistant_message")
        listed = [
            (m.message_type, getattr(m, "content", None))
            for m in letta.agents.messages.list(agent, order="asc")
            if m.message_type in ("user_message", "assistant_message")
        ]
        assert listed == [("user_message", "I like green tea"), ("assistant_message", ANSWER)]


@pytest.mark.slow
def test_a_provider_failure_mid_stream_is_an_error_event_and_stores_nothing(
    agent_server: str, llm: ScriptedLLM
) -> None:
    llm.script = [say(ANSWER)]
    llm.fail_stream_after = 3
    with Letta(base_url=agent_server, _strict_response_validation=True, max_retries=0) as letta:
        agent = _agent(letta)
        seen: list[Any] = []
        with pytest.raises(letta_client.APIError) as raised:
            for chunk in letta.agents.messages.create(agent, input="hello", streaming=True, stream_tokens=True):
                seen.append(chunk)
        assert "model_error" in str(raised.value)
        assert "dropped the stream" not in str(raised.value), "the provider's words stay in the log"
        kept = [m.message_type for m in letta.agents.messages.list(agent)]
        assert kept == ["system_message"], "a turn the model never finished keeps nothing"


@pytest.mark.slow
def test_a_client_that_leaves_mid_stream_leaves_a_whole_transcript_and_a_free_agent(
    agent_server: str, llm: ScriptedLLM
) -> None:
    _script(llm)
    llm.stream_pause_s = 0.05
    with Letta(base_url=agent_server, _strict_response_validation=True) as letta:
        agent = _agent(letta)
        with httpx.stream(
            "POST",
            f"{agent_server}/v1/agents/{agent}/messages/stream",
            json={"input": "I like green tea", "stream_tokens": True},
            timeout=30,
        ) as response:
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if line.startswith("data:") and "reasoning_message" in line:
                    break  # and the connection is closed mid-reply
        llm.stream_pause_s = 0.0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(llm.requests) < 2:
            time.sleep(0.05)
        llm.script = [say("Second reply.")]
        again = letta.agents.messages.create(agent, input="still there?")  # the agent was let go
        assert again.messages[-1].content == "Second reply."  # type: ignore[union-attr]
        said = [
            (m.message_type, getattr(m, "content", None))
            for m in letta.agents.messages.list(agent, order="asc")
            if m.message_type in ("user_message", "assistant_message")
        ]
        assert said == [
            ("user_message", "I like green tea"),
            ("assistant_message", ANSWER),
            ("user_message", "still there?"),
            ("assistant_message", "Second reply."),
        ]
        assert [p.text for p in letta.agents.passages.list(agent)] == [NOTE], "the reply's write, once"


@pytest.mark.slow
def test_sse_lines_are_json_and_end_with_done(agent_server: str, llm: ScriptedLLM) -> None:
    llm.script = [say("hi")]
    with Letta(base_url=agent_server) as letta:
        agent = _agent(letta)
    with httpx.stream(
        "POST", f"{agent_server}/v1/agents/{agent}/messages", json={"input": "x", "streaming": True}, timeout=30
    ) as response:
        assert response.headers["x-accel-buffering"] == "no"
        events = [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]" and all(isinstance(json.loads(e), dict) for e in events[:-1])


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ("Hello", ("Hello", False)),
        ('Hello"', ("Hello", True)),
        ('say \\"hi', ('say "hi', False)),
        ("caf\\u00", ("caf", False)),
        ('caf\\u00e9"}', ("caf\u00e9", True)),
        ("a\\", ("a", False)),
        ("", ("", False)),
    ],
)
def test_a_partial_json_string_decodes_as_far_as_it_is_whole(fragment: str, expected: tuple[str, bool]) -> None:
    assert decoded_prefix(fragment) == expected


def test_the_scripted_model_is_reset_between_tests() -> None:
    assert SCRIPTED.fail_stream_after is None and SCRIPTED.stream_pause_s == 0.0


def test_an_error_event_uses_the_words_of_the_same_error_in_a_plain_response() -> None:
    from memvec.errors import CoreMemoryError, StoreUnavailableError
    from memvec.service.streaming import error_payload

    assert error_payload(StoreUnavailableError("down")) == {"error": "store_unavailable", "detail": "down"}
    assert error_payload(CoreMemoryError("full"))["error"] == "core_memory_refused"
    assert error_payload(RuntimeError("secret"))["error"] == "internal_error"


@pytest.mark.slow
def test_behind_nginx_the_first_token_comes_while_the_model_is_still_streaming(tmp_path: Path) -> None:
    """The router's nginx passes each event on as it comes: the model pauses before every piece, so
    the first and the last assistant piece cannot arrive closer together than those pauses add up
    to unless a hop held the first back (a buffering nginx delivers them together)."""
    if shutil.which("nginx") is None:
        unavailable("Debian's nginx is not installed: `apt-get install -y nginx` (the router tests run it)")
    pause = 0.1
    with (
        streaming.scripted_server(tmp_path / "home", pause) as url,
        streaming.nginx_in_front(url, tmp_path / "nginx") as routed,
    ):
        httpx.post(
            f"{routed}/v1/agents", json={"name": streaming.AGENT, "model": "scripted/echo"}, timeout=30
        ).raise_for_status()
        for _ in range(2):
            reply = streaming.streamed_reply(routed)
            assert reply["pieces"] >= 3, reply
            assert reply["done_s"] - reply["first_token_s"] >= (reply["pieces"] - 1) * pause, reply


@pytest.mark.parametrize("how", ["sync", "streamed", "tokens"])
def test_include_return_message_types_keeps_only_those_types(agent_server: str, llm: ScriptedLLM, how: str) -> None:
    _script(llm)
    wanted: Any = ["reasoning_message", "tool_call_message"]
    with Letta(base_url=agent_server, _strict_response_validation=True) as letta:
        agent = _agent(letta)
        if how == "sync":
            reply = letta.agents.messages.create(agent, input="I like green tea", include_return_message_types=wanted)
            kinds: list[Any] = [m.message_type for m in reply.messages]
            assert reply.stop_reason.stop_reason == "end_turn"
        else:
            chunks = letta.agents.messages.create(
                agent,
                input="I like green tea",
                include_return_message_types=wanted,
                streaming=True,
                stream_tokens=how == "tokens",
            )
            kinds = [c.message_type for c in chunks]
            assert kinds[-2:] == ["stop_reason", "usage_statistics"]
            kinds = kinds[:-2]
        assert set(kinds) == set(wanted) and "tool_call_message" in kinds
        stored = [m.message_type for m in letta.agents.messages.list(agent)]
        assert "tool_return_message" in stored  # the filter is on the answer, not on what is stored
