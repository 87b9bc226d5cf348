"""Runs (Letta's): a send's run, and a cancelled run stopping between its model calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from memvec import Memory
from memvec.agent import Agent
from memvec.embed import HashingEmbedder
from memvec.service.app import create_app
from memvec.types import AgentSettings
from tests.scripted_llm import ScriptedLLM, Turn, call, say


def test_a_cancelled_run_stops_before_its_next_model_call_and_keeps_what_it_wrote(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        run = mem.runs().start("bot", background=True)

        def cancelled_meanwhile(messages: list[dict[str, Any]]) -> Turn:  # a client cancels during the call
            assert mem.runs().cancel("bot") == [run.id]
            return call("archival_memory_insert", content="kept though cancelled")

        llm.script = [cancelled_meanwhile, say("never said")]
        reply = Agent(mem, "bot").reply("hi", run_id=run.id)
        assert (reply.trace.stopped_by, reply.trace.model_calls, reply.message) == ("cancelled", 1, None)
        assert [r.text for r in mem.archival("bot").list()] == ["kept though cancelled"]
        ended = mem.runs().finish(run.id, stop_reason="end_turn", usage={"step_count": 1})
        assert (ended.status, ended.stop_reason) == ("cancelled", "cancelled")  # the end does not undo it


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
