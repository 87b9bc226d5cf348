"""Runs (Letta's): a send's run, and a cancelled run stopping between its model calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from memvec import Memory
from memvec.agent import Agent
from memvec.agent.cancel import CancelWatch
from memvec.agent.events import Event
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from memvec.types import AgentSettings
from tests.scripted_llm import ScriptedLLM, Turn, call, say


def test_a_cancelled_run_drops_the_answer_it_was_waiting_for_and_keeps_what_it_wrote(
    home: Path, llm: ScriptedLLM
) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        run = mem.runs().start("bot", background=True)

        def cancelled_meanwhile(messages: list[dict[str, Any]]) -> Turn:  # a client cancels during the call
            assert mem.runs().cancel("bot") == [run.id]
            return say("never said")

        llm.script = [call("archival_memory_insert", content="kept though cancelled"), cancelled_meanwhile]
        reply = Agent(mem, "bot").reply("hi", run_id=run.id)
        assert (reply.trace.stopped_by, reply.trace.model_calls, reply.message) == ("cancelled", 2, None)
        assert [r.text for r in mem.archival("bot").list()] == ["kept though cancelled"]  # the first step's
        ended = mem.runs().finish(run.id, stop_reason="end_turn", usage={"step_count": 1})
        assert (ended.status, ended.stop_reason) == ("cancelled", "cancelled")  # the end does not undo it


def test_a_call_answered_after_a_cancel_is_not_run(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        run = mem.runs().start("bot", background=True)

        def cancelled_meanwhile(messages: list[dict[str, Any]]) -> Turn:
            mem.runs().cancel("bot")
            return call("archival_memory_insert", content="written after the cancel")

        llm.script = [cancelled_meanwhile]
        reply = Agent(mem, "bot").reply("hi", run_id=run.id)
        assert (reply.trace.stopped_by, reply.trace.model_calls, reply.trace.tool_calls) == ("cancelled", 1, 0)
        assert mem.archival("bot").list() == []


def test_messages_cancel_cancels_the_agents_runs_still_going(memory: Memory) -> None:
    memory.create_agent(AgentSettings(name="ana"))
    waiting = memory.runs().start("ana", background=True, status="created")
    done = memory.runs().start("ana", background=False)
    memory.runs().finish(done.id, stop_reason="end_turn", usage={})
    with TestClient(create_app(memory), base_url="http://localhost") as api:
        answer = api.post("/v1/agents/ana/messages/cancel", json={})
        assert answer.json() == {"cancelled_run_ids": [waiting.id]}  # a finished run stays as it ended
        assert api.get(f"/v1/runs/{waiting.id}").json()["status"] == "cancelled"
        assert api.get(f"/v1/runs/{done.id}").json()["status"] == "completed"
        assert api.post("/v1/agents/ana/messages/cancel", json={"run_ids": [done.id]}).json() == {
            "cancelled_run_ids": []
        }


def test_a_streamed_answer_stops_going_out_once_its_run_is_cancelled(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        run = mem.runs().start("bot", background=True)
        heard: list[Event] = []

        def cancelled_meanwhile(messages: list[dict[str, Any]]) -> Turn:
            mem.runs().cancel("bot")
            return say("a long answer that nobody should see streamed")

        llm.script = [call("archival_memory_insert", content="noted"), cancelled_meanwhile]
        reply = Agent(mem, "bot", on_event=heard.append, stream_tokens=True).reply("hi", run_id=run.id)
        assert reply.trace.stopped_by == "cancelled" and llm.streamed == 2
        assert [e.kind for e in heard] == ["tool_call", "tool_return"]  # no chunk of the cancelled answer


def test_a_cancel_is_read_at_most_every_so_often_while_tokens_stream(memory: Memory) -> None:
    memory.create_agent(AgentSettings(name="ana"))
    run = memory.runs().start("ana", background=True)
    now = [0.0]
    watch = CancelWatch(memory, run.id, every_s=0.1, clock=lambda: now[0])
    assert not watch.cancelled(fresh=True)
    assert not watch.cancelled()  # the first ask after a fresh read reads again, and is not cancelled
    memory.runs().cancel("ana")
    now[0] = 0.05
    assert not watch.cancelled()  # not read again yet
    assert watch.cancelled(fresh=True)
    now[0] = 1.0
    assert watch.cancelled() and CancelWatch(memory, None).cancelled(fresh=True) is False


def test_a_run_cancelled_before_its_reply_starts_makes_no_model_call(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        run = mem.runs().start("bot", background=True, status="created")
        mem.runs().cancel("bot")
        llm.script = [say("never asked")]
        reply = Agent(mem, "bot").reply("hi", run_id=run.id)
        assert (reply.trace.stopped_by, reply.trace.model_calls, llm.requests) == ("cancelled", 0, [])
