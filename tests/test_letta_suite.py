"""The harness that runs Letta's own tests against memvec (make letta-suite): its scripted OpenAI-shaped
model answers through litellm as Letta's test messages ask, streamed or not, and its report counts
each file's outcomes from pytest's junit XML."""

from __future__ import annotations

import asyncio
import gc
import json
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks import letta_suite, openai_script
from benchmarks.letta_suite import read_junit, report

SEND = {"type": "function", "function": {"name": "send_message", "parameters": {}}}
DICE = {"type": "function", "function": {"name": "roll_dice", "parameters": {}}}


def ask(text: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A chat-completions request as litellm sends it (the model named apart)."""
    return {"messages": [{"role": "user", "content": text}], **({"tools": tools} if tools else {})}


def test_the_script_follows_letta_test_messages() -> None:
    quoted = "Call the send_message tool with the message 'Teamwork makes the dream work'."
    assert openai_script.reply_to(ask(quoted, [SEND])) == (
        None,
        [("send_message", {"message": "Teamwork makes the dream work"})],
    )
    dice = "This is an automated test message. Call the roll_dice tool with 16 sides and send me a message."
    assert openai_script.reply_to(ask(dice, [SEND, DICE])) == (None, [("roll_dice", {"num_sides": 16})])
    after_tool = ask(dice, [SEND, DICE])
    after_tool["messages"].append({"role": "tool", "content": '{"result": 7}'})
    assert openai_script.reply_to(after_tool)[1][0][0] == "send_message"
    assert openai_script.reply_to(ask("Hi!")) == (openai_script.GREETING, [])  # no tools: plain text


def reassembled(chunks: list[dict[str, Any]]) -> tuple[str, str, str]:
    text, name, arguments = "", "", ""
    for chunk in chunks:
        delta = chunk["choices"][0]["delta"]
        text += delta.get("content") or ""
        for call in delta.get("tool_calls") or []:
            name += call["function"].get("name", "")
            arguments += call["function"]["arguments"]
    return text, name, arguments


def test_a_streamed_reply_is_the_same_reply_in_pieces() -> None:
    request = ask("Call the send_message tool with the message 'in pieces, whole again'.", [SEND])
    chunks = list(openai_script.chunks(request))
    assert len(chunks) > 2 and chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    text, name, arguments = reassembled(chunks)
    assert (text, name, json.loads(arguments)) == ("", "send_message", {"message": "in pieces, whole again"})
    plain = list(openai_script.chunks(ask("Hi!")))
    assert reassembled(plain)[0] == openai_script.GREETING


def test_litellm_calls_the_script_as_it_calls_openai() -> None:
    from memvec.agent.llm import litellm_module

    litellm = litellm_module()
    with openai_script.serving() as base:
        assert httpx.post(f"{base}/embeddings", json={}).status_code == 404
        request = ask("Call the send_message tool with the message 'through litellm'.", [SEND])
        response = litellm.completion(model="openai/gpt-4o-mini", api_base=base, api_key="sk-scripted", **request)
        [call] = response.choices[0].message.tool_calls
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "send_message",
            {"message": "through litellm"},
        )
        stream = litellm.completion(
            model="openai/gpt-4o-mini", api_base=base, api_key="sk-scripted", stream=True, **ask("Hi!")
        )
        assert "".join(chunk.choices[0].delta.content or "" for chunk in stream) == openai_script.GREETING


def test_a_sync_litellm_call_leaves_no_event_loop_open() -> None:
    """litellm's sync OpenAI path asks asyncio for the main thread's loop (for its service hooks); a
    loop asyncio made then is never closed, and the next `asyncio.run` drops it: a ResourceWarning in
    whatever later test the collector ran, so a module's pass depended on which ran first in its
    worker. conftest's pytest_configure declares the main thread loop-less, as Python 3.14 does."""
    from memvec.agent.llm import litellm_module

    with openai_script.serving() as base:
        litellm_module().completion(model="openai/gpt-4o-mini", api_base=base, api_key="sk-scripted", **ask("Hi!"))
    asyncio.run(asyncio.sleep(0))  # replaces the thread's loop, as any later test's asyncio.run would
    gc.collect()  # an unclosed loop dropped is an unraisable ResourceWarning here, in this test


def test_the_script_answers_as_late_as_a_hosted_model_when_asked() -> None:
    with openai_script.serving(latency_s=0.25) as base:
        started = time.monotonic()
        assert httpx.post(f"{base}/chat/completions", json=ask("Hi!")).status_code == 200
        assert time.monotonic() - started >= 0.25  # a floor: sleeping is never shorter


def test_the_files_run_in_jobs_as_lettas_ci_runs_them() -> None:
    assert letta_suite.ci_jobs(letta_suite.FILES)[:3] == [
        ["tests/sdk/agents_test.py", "tests/sdk/blocks_test.py"],  # its `sdk/` job
        ["tests/test_embedding_optional.py"],
        ["tests/test_client.py"],
    ]


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.sdk.blocks_test" name="test_create[a]" time="0.1"/>
<testcase classname="tests.sdk.blocks_test" name="test_create[b]" time="0.1">
  <failure message="AssertionError: assert 2000 == 100000">trace</failure></testcase>
<testcase classname="tests.test_client" name="test_tags" time="0.1">
  <error message="failed on setup with &quot;NotFoundError: 404&quot;">trace</error></testcase>
<testcase classname="tests.test_client.TestGroup" name="test_skip" time="0.0">
  <skipped message="not implemented"/></testcase>
<testcase classname="tests.test_client" name="test_upsert" time="0.1">
  <error message="on setup: &quot;AttributeError: 'ToolsResource' object has no attribute 'upsert'&quot;">
  trace</error></testcase>
<testcase classname="tests.test_client" name="test_cleanup" time="0.1">
  <failure message="UnboundLocalError: cannot access local variable 'tool'">
  AttributeError: 'ToolsResource' object has no attribute 'upsert_from_function'
  During handling of the above exception, another exception occurred:</failure></testcase>
</testsuite></testsuites>"""


def test_the_report_counts_outcomes_per_file_and_names_the_reasons(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT)
    results = read_junit(tmp_path / "junit.xml")
    assert dict(results["tests/sdk/blocks_test.py"].outcomes) == {"passed": 1, "failed": 1}
    # a missing method behind the error that ended the test counts as what the client lacks too
    assert dict(results["tests/test_client.py"].outcomes) == {"error": 1, "skipped": 1, "lacking": 2}
    written = report({"1.7.12": results})
    assert "| tests/sdk/blocks_test.py | 1/2 (0 skipped) |" in written
    assert "| all | 1/3 (1 skipped, 2 call what the client lacks) |" in written  # not counted as run
    assert "- 1 x `AssertionError: assert 2000 == 100000`" in written


def test_the_script_calls_a_file_tool_with_the_arguments_an_instruction_words() -> None:
    def tool(name: str, *parameters: str) -> dict[str, Any]:
        properties = {p: {"type": "string"} for p in parameters}
        return {"type": "function", "function": {"name": name, "parameters": {"properties": properties}}}

    offered = [
        tool("open_files", "file_requests"),
        tool("grep_files", "pattern"),
        tool("semantic_search_files", "query"),
    ]
    opened = ask("Use ONLY the open_files tool to open the file named a/b.txt with offset 5 and length 3", offered)
    assert openai_script.reply_to(opened)[1] == [
        ("open_files", {"file_requests": [{"file_name": "a/b.txt", "offset": 5, "length": 3}]})
    ]
    grepped = ask("Use ONLY the grep_files tool to search for `x = 1`.", offered)
    assert openai_script.reply_to(grepped)[1] == [("grep_files", {"pattern": "x = 1"})]
    searched = ask("Use ONLY the semantic_search_files tool to search for the election.", offered)
    assert openai_script.reply_to(searched)[1] == [("semantic_search_files", {"query": "the election"})]
    quoted = ask("Use the semantic_search_files tool to search for 'electoral history' in the files.", offered)
    assert openai_script.reply_to(quoted)[1] == [("semantic_search_files", {"query": "electoral history"})]


def test_the_script_replies_in_text_and_makes_parallel_calls_as_asked() -> None:
    reply = ask("This is an automated test message. Reply with the message 'Teamwork makes the dream work'.", [DICE])
    assert openai_script.reply_to(reply) == ("Teamwork makes the dream work", [])  # no send_message: plain text
    three = ask("Call the roll_dice tool three times: num_sides=6, num_sides=12, and num_sides=20.", [DICE])
    assert openai_script.reply_to(three)[1] == [("roll_dice", {"num_sides": n}) for n in (6, 12, 20)]


def test_the_script_answers_a_json_schema_with_an_object_of_it() -> None:
    shape = {"type": "object", "properties": {"response": {"type": "string"}, "count": {"type": "integer"}}}
    request = {
        **ask("What is the capital of France?"),
        "response_format": {"type": "json_schema", "json_schema": {"schema": shape}},
    }
    text, _ = openai_script.reply_to(request)
    answer = json.loads(text or "")
    assert isinstance(answer["response"], str) and answer["response"] and answer["count"] == 1
