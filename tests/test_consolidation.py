"""Sleep-time consolidation (#23 item 5) through litellm with a scripted model (no network): a run adds
cited facts, supersedes a contradicted one and rewrites a block; it is logged as a diff and its undo
restores the exact previous state; a model that answers garbage or fails writes nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memvec import Memory
from memvec.agent.consolidate import consolidate
from memvec.embed import HashingEmbedder
from memvec.errors import CoreMemoryError, ModelCallError, VersionConflictError
from memvec.types import AgentSettings, Tier
from tests.conftest import CLEAN_VERIFY
from tests.scripted_llm import ScriptedLLM

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def answer_with(llm: ScriptedLLM, answer: Answer | str) -> None:
    """The scripted model answers the consolidation prompt: `answer` reads what it was shown (the JSON
    of core blocks, archival facts and messages) and returns the proposal, or is the raw text."""

    def reply(messages: list[dict[str, Any]]) -> str:
        return answer if isinstance(answer, str) else json.dumps(answer(json.loads(messages[-1]["content"])))

    llm.summarizer = reply


def moved_to_berlin(shown: dict[str, Any]) -> dict[str, Any]:
    messages = {m["text"]: m["id"] for m in shown["messages"]}
    lisbon = next(f["id"] for f in shown["archival_facts"] if "Lisbon" in f["text"])
    moved = messages["I moved to Berlin last month, new flat in Kreuzberg."]
    return {
        "facts": [
            {
                "text": "Ana lives in Berlin (Kreuzberg).",
                "sources": [moved],
                "supersedes": lisbon,
                "reason": "she says she moved",
            },
            {
                "text": "Ana's sister is called Maya.",
                "sources": [messages["My sister Maya visited."]],
                "reason": "new family fact",
            },
        ],
        "blocks": [{"label": "human", "value": "Name: Ana\nLives in Berlin", "reason": "moved"}],
    }


def ana(mem: Memory) -> int:
    mem.create_agent(AgentSettings(name="ana", model="scripted/sleepy"))
    mem.core("ana").ensure_defaults()
    mem.core("ana").rewrite("human", "Name: Ana\nLives in Lisbon")
    lisbon = mem.archival("ana").insert("Ana lives in Lisbon.", tags=["home"]).record.id
    recall = mem.recall("ana")
    for turn, text in enumerate(
        ["I moved to Berlin last month, new flat in Kreuzberg.", "My sister Maya visited.", "What a week!"]
    ):
        recall.append("user", text, session_id="s1", turn_id=turn)
    return lisbon


def snapshot(mem: Memory) -> dict[str, Any]:
    """Everything a run may touch, as data: every version of every passage, the blocks, the counts."""
    archival = mem.archival("ana")
    current = archival.list(limit=100)
    versions = [v.model_dump() for r in current for v in archival.history(r.id)]
    return {
        "versions": versions,
        "blocks": [b.model_dump() for b in mem.core("ana").blocks()],
        "count": archival.count(),
        "messages": [m.model_dump() for m in mem.recall("ana").list(limit=100)],
    }


def test_a_run_adds_cited_facts_supersedes_and_edits_then_undoes_exactly(real_memory: Memory, llm: ScriptedLLM) -> None:
    lisbon = ana(real_memory)
    before = snapshot(real_memory)
    answer_with(llm, moved_to_berlin)
    run = consolidate(real_memory, "ana")
    assert run is not None and run.model == "scripted/sleepy" and len(run.facts) == 2
    berlin, maya = run.facts
    assert berlin.supersedes == lisbon and berlin.created and berlin.reason == "she says she moved"
    archival = real_memory.archival("ana")
    stored = archival.get(berlin.id)
    assert stored.citation.session_id == "s1" and stored.citation.source_url == f"memvec:recall/{berlin.sources[0]}"
    assert [h.text for h in archival.search("where does Ana live", k=3)][:1] == ["Ana lives in Berlin (Kreuzberg)."]
    assert "Ana lives in Lisbon." not in [h.text for h in archival.search("Ana lives in Lisbon", k=5)]
    assert archival.get(lisbon).superseded_by == berlin.id
    assert real_memory.core("ana").get("human").value == "Name: Ana\nLives in Berlin"
    assert real_memory.core("ana").history("human")[-1].actor == f"consolidation:{run.id}"
    assert real_memory.consolidation_runs("ana") == [run]  # the logged diff is what the run returned
    assert maya.text in [h.text for h in archival.search("Ana's sister", k=2)]

    undone = real_memory.undo_consolidation("ana", run.id)
    assert undone.undone_at is not None
    after = snapshot(real_memory)
    assert after == before
    assert real_memory.verify().model_dump() == CLEAN_VERIFY
    with pytest.raises(Exception, match="undone already"):
        real_memory.undo_consolidation("ana", run.id)


@pytest.mark.parametrize(
    "garbage",
    [
        "Sure! Here are the facts: Ana moved.",  # not JSON
        '{"facts": [{"text": "Ana moved.", "sources": []}]}',  # no source
        '{"facts": [{"text": "Ana moved.", "sources": [999]}]}',  # a message it was not shown
        '{"facts": [{"text": "Ana moved.", "sources": [1], "supersedes": 999}]}',  # a fact it was not shown
        '{"facts": [], "blocks": [], "mood": "happy"}',  # a field nobody asked for
        "[1, 2, 3]",
    ],
)
def test_an_answer_that_is_not_a_proposal_writes_nothing(tmp_path: Path, llm: ScriptedLLM, garbage: str) -> None:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        ana(mem)
        before = snapshot(mem)
        answer_with(llm, garbage)
        with pytest.raises(ModelCallError, match="consolidation model"):
            consolidate(mem, "ana")
        assert snapshot(mem) == before and mem.consolidation_runs("ana") == []


def test_a_model_that_fails_or_overflows_a_block_writes_nothing(tmp_path: Path, llm: ScriptedLLM) -> None:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        ana(mem)
        before = snapshot(mem)

        def timeout(messages: list[dict[str, Any]]) -> str:
            raise TimeoutError("the model took too long")

        llm.summarizer = timeout
        with pytest.raises(ModelCallError, match="took too long"):
            consolidate(mem, "ana")
        answer_with(llm, lambda shown: {**moved_to_berlin(shown), "blocks": [{"label": "human", "value": "x" * 5000}]})
        with pytest.raises(CoreMemoryError, match="limit"):
            consolidate(mem, "ana")
        assert snapshot(mem) == before and mem.consolidation_runs("ana") == []


def test_runs_read_only_new_messages_and_an_undo_refuses_once_things_moved_on(tmp_path: Path, llm: ScriptedLLM) -> None:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        ana(mem)
        answer_with(llm, moved_to_berlin)
        first = consolidate(mem, "ana")
        assert first is not None
        assert consolidate(mem, "ana") is None and len(llm.summaries) == 1  # nothing new: the model is not asked
        mem.recall("ana").append("user", "Maya moved in with me.", session_id="s2", turn_id=0)
        seen: list[list[str]] = []

        def answer(shown: dict[str, Any]) -> dict[str, Any]:
            seen.append([m["text"] for m in shown["messages"]])
            return {"facts": []}

        answer_with(llm, answer)
        second = consolidate(mem, "ana")
        assert second is not None and seen == [["Maya moved in with me."]] and second.facts == []

        mem.core("ana").append("human", "Has a cat")  # a later edit of the block the run rewrote
        with pytest.raises(CoreMemoryError, match="edited after run"):
            mem.undo_consolidation("ana", first.id)
        mem.core("ana").undo("human")
        mem.archival("ana").update(first.facts[1].id, "Ana's sister is called Maya Silva.")
        with pytest.raises(VersionConflictError, match="updated or deleted since"):
            mem.undo_consolidation("ana", first.id)
        assert mem.consolidation_runs("ana")[0].undone_at is None


def test_consolidate_on_the_command_line(home: Path, llm: ScriptedLLM, capsys: pytest.CaptureFixture[str]) -> None:
    from memvec.cli import cli, run

    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        ana(mem)
    base = ["--home", str(home), "--model", "hash:64"]
    answer_with(llm, moved_to_berlin)
    capsys.readouterr()
    assert run(cli, [*base, "consolidate", "--agent", "ana"]) == 0
    shown = capsys.readouterr().out
    assert "supersedes [1]: Ana lives in Berlin (Kreuzberg)." in shown and "block human:" in shown
    assert run(cli, [*base, "consolidate", "--agent", "ana", "--list", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in runs] == [1] and runs[0]["blocks"][0]["new"] == "Name: Ana\nLives in Berlin"
    assert run(cli, [*base, "consolidate", "--agent", "ana", "--undo", "1"]) == 0
    assert "undone" in capsys.readouterr().out
    answer_with(llm, "not json")
    assert run(cli, [*base, "consolidate", "--agent", "ana"]) == 1
    assert "did not answer JSON" in capsys.readouterr().err


def test_a_forgotten_fact_leaves_no_trace_in_the_runs_or_the_files(tmp_path: Path, llm: ScriptedLLM) -> None:
    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        ana(mem)

        def secret(shown: dict[str, Any]) -> dict[str, Any]:
            return {"facts": [{"text": "Ana's safe code is canary-9b3f.", "sources": [shown["messages"][0]["id"]]}]}

        answer_with(llm, secret)
        run = consolidate(mem, "ana")
        assert run is not None
        assert mem.forget("ana", ids=[run.facts[0].id]) == 1
        assert mem.consolidation_runs("ana")[0].facts[0].text == "[forgotten]"
    leaked = [p for p in home.rglob("*") if p.is_file() and b"canary-9b3f" in p.read_bytes()]
    assert leaked == []


def test_the_serve_schedule_consolidates_agents_with_a_model_and_survives_failures(
    tmp_path: Path, llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    from memvec.agent.sleep import SleepSchedule

    caplog.set_level(logging.WARNING, logger="memvec")  # whatever an earlier test in this process set
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        ana(mem)
        mem.recall("no-model").append("user", "I have no model to consolidate with.")
        answer_with(llm, "garbage first")
        schedule = SleepSchedule(mem, every_s=3600)
        schedule.consolidate_all()  # one period, run in this thread
        assert (schedule.runs, schedule.failures) == (0, 1) and "nothing written" in caplog.text
        answer_with(llm, moved_to_berlin)
        schedule.consolidate_all()
        assert (schedule.runs, schedule.failures) == (1, 1)
        assert [len(r.facts) for r in mem.consolidation_runs("ana")] == [2]
        assert mem.consolidation_runs("no-model") == []
        threaded = SleepSchedule(mem, every_s=0.01).start()  # the thread runs periods until stopped
        threaded.stop()
        assert not threaded._thread.is_alive()
    with pytest.raises(ValueError, match="positive"):
        SleepSchedule(mem, every_s=0)


def test_serve_offers_the_schedule() -> None:
    from click.testing import CliRunner

    from memvec.cli import cli

    shown = CliRunner().invoke(cli, ["serve", "--help"]).output
    assert "--consolidate-every MINUTES" in shown


def test_consolidation_over_http(tmp_path: Path, llm: ScriptedLLM) -> None:
    from fastapi.testclient import TestClient

    from memvec.service.app import create_app
    from memvec.service.auth import KeyRing

    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        ana(mem)
        mem.create_agent(AgentSettings(name="bob"))
        keys = KeyRing.parse([("t", "admin-key-0123456789"), ("t", "bob-key-0123456789=bob")])
        api = TestClient(create_app(mem, keys))
        admin, bob = ({"Authorization": f"Bearer {k}"} for k in ("admin-key-0123456789", "bob-key-0123456789"))
        base = "/v1/agents/ana/consolidations"
        answer_with(llm, "no JSON here")
        failed = api.post(base, headers=admin)
        assert failed.status_code == 502 and api.get(base, headers=admin).json() == []
        answer_with(llm, moved_to_berlin)
        assert api.post(base, headers=bob).status_code == 404  # a scoped key sees only its agents
        made = api.post(base, headers=admin)
        assert made.status_code == 201 and made.json()["facts"][0]["supersedes"] is not None
        assert api.post(base, headers=admin).status_code == 204  # nothing new since
        assert [r["id"] for r in api.get(base, headers=admin).json()] == [made.json()["id"]]
        undone = api.post(f"{base}/{made.json()['id']}/undo", headers=admin)
        assert undone.status_code == 200 and undone.json()["undone_at"] is not None
        assert api.post(f"{base}/{made.json()['id']}/undo", headers=admin).status_code == 400
        assert api.post(f"{base}/99/undo", headers=admin).status_code == 404


@pytest.mark.slow
def test_two_servers_consolidating_one_agent_at_once_write_one_run(tmp_path: Path, llm: ScriptedLLM) -> None:
    """A run holds the agent's lease: a second server asked to consolidate the same agent meanwhile
    waits for it, then finds nothing new (two runs from the same messages would write every fact twice)."""
    import threading
    import time

    with (
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as one,
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as two,
    ):
        ana(one)

        def slowly(shown: dict[str, Any]) -> dict[str, Any]:
            time.sleep(0.5)
            return moved_to_berlin(shown)

        answer_with(llm, slowly)
        runs: list[object] = []
        servers = [threading.Thread(target=lambda m=mem: runs.append(consolidate(m, "ana"))) for mem in (one, two)]
        for server in servers:
            server.start()
        for server in servers:
            server.join()
        assert sorted(run is None for run in runs) == [False, True]
        assert len(one.consolidation_runs("ana")) == 1 and len(llm.summaries) == 1


def test_an_export_carries_the_runs_with_their_ids_remapped_and_the_copy_can_undo_them(tmp_path: Path) -> None:
    from memvec.exchange.consolidation import ConsolidationProposal

    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(64)) as mem:
        lisbon = ana(mem)
        messages = {m.text: m.id for m in mem.recall("ana").list(limit=10)}
        moved = messages["I moved to Berlin last month, new flat in Kreuzberg."]
        proposal = ConsolidationProposal.model_validate(
            {
                "facts": [
                    {"text": "Ana lives in Berlin.", "sources": [moved], "supersedes": lisbon, "reason": "she moved"}
                ],
                "blocks": [{"label": "human", "value": "Name: Ana\nLives in Berlin", "reason": "moved"}],
            }
        )
        mem.apply_consolidation("ana", proposal, model="scripted/sleepy", through_message=max(messages.values()))
        mem.recall("ana").append("user", "a message after the run", session_id="s2", turn_id=0)
        mem.import_agent(mem.export_agent("ana"), name="copy")

        def described(agent: str) -> list[object]:
            texts = {
                r.id: r.text
                for r in mem._engine.store.get(
                    agent, [int(i) for tier in Tier for i in mem._engine.store.ids(agent, tier)]
                )
            }
            return [
                (
                    run.model,
                    run.started_at,
                    texts.get(run.through_message or 0),
                    [
                        (texts[f.id], [texts[s] for s in f.sources], texts.get(f.supersedes or 0), f.reason)
                        for f in run.facts
                    ],
                    [(b.label, b.old, b.new) for b in run.blocks],
                )
                for run in mem.consolidation_runs(agent)
            ]

        assert described("copy") == described("ana") and len(described("copy")) == 1
        copied_fact = mem.archival("copy").list()[0]
        copied_moved = next(m.id for m in mem.recall("copy").list(limit=10) if m.text.startswith("I moved"))
        assert copied_fact.citation.source_url == f"memvec:recall/{copied_moved}" != f"memvec:recall/{moved}"
        copied_run = mem.consolidation_runs("copy")[0]
        mem.undo_consolidation("copy", copied_run.id)  # the copy undoes its own run, as the original would
        assert [r.text for r in mem.archival("copy").list()] == ["Ana lives in Lisbon."]
        assert mem.core("copy").get("human").value == "Name: Ana\nLives in Lisbon"
        assert [r.text for r in mem.archival("ana").list()] == ["Ana lives in Berlin."]  # the original untouched
