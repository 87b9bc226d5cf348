"""Letta's conversations: threads of one agent, each with its own context over the agent's shared
memory; through the Python API with the scripted model, through letta-client against a real
`memvec serve`, and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import letta_client
import pytest

from memvec import Memory
from memvec.agent import Agent
from memvec.agent.compact import compact
from memvec.embed import HashingEmbedder
from memvec.errors import NotFoundError
from memvec.types import AgentSettings
from tests.scripted_llm import ScriptedLLM, call, say
from tests.service_helpers import Server, letta_for, serving_with_openai_script

ADMIN, SCOPED = "admin-key-0123456789", "scoped-key-0123456789"


def _said(requests: list[dict[str, Any]]) -> str:
    return " ".join(str(m.get("content")) for m in requests)


def test_two_conversations_keep_their_contexts_apart_and_share_the_agents_blocks(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        first = mem.conversations().create("bot", summary="sailing")
        second = mem.conversations().create("bot")
        llm.script = [call("core_memory_append", label="human", content="Races on Sundays."), say("Noted.")]
        Agent(mem, "bot", conversation=first.id).reply("I race my dinghy, Bluefin")
        llm.script = [say("Hello!")]
        Agent(mem, "bot", conversation=second.id).reply("hi")
        in_second = _said(llm.requests[-1])
        assert "Races on Sundays." in in_second, "the agent's blocks are every conversation's"
        assert "Bluefin" not in in_second, "another conversation's messages are not in its context"
        assert len(mem.conversations().get(first.id).state.in_context) == 2  # the message and the answer
        stored = mem.recall("bot").list(session_id=first.id)
        assert stored[0].text == "I race my dinghy, Bluefin" and stored[0].citation.session_id == first.id
        assert mem.get_agent("bot")[1].in_context == [], "the agent's own context is untouched"
        llm.script = [say("Again.")]
        Agent(mem, "bot", conversation=first.id).reply("and you?")
        assert "Bluefin" in _said(llm.requests[-1]), "its own earlier messages are in its context"
        assert mem.conversations().get(first.id).last_message_at is not None
        mem.conversations().delete(second.id)
        with pytest.raises(NotFoundError):
            Agent(mem, "bot", conversation=second.id)
        mem.delete_agent("bot")
        assert mem.conversations().list(["bot"]) == []


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("conversations") / "home"
    with serving_with_openai_script(home, keys=f"{ADMIN},{SCOPED}=scoped-agent") as srv:
        yield srv


def test_conversations_through_letta_client(server: Server) -> None:
    with letta_for(server, ADMIN) as client:
        agent = client.agents.create(name="Sailing coach", model="openai/gpt-4o-mini")
        made = client.conversations.create(agent_id=agent.id, summary="race day")
        assert made.id.startswith("conv-") and made.agent_id == agent.id and made.summary == "race day"
        assert made.in_context_message_ids == [] and made.last_message_at is None
        chunks = list(
            client.conversations.messages.create(
                made.id, messages=[{"role": "user", "content": "Reply with the message 'Fair winds!'"}]
            )
        )
        assert [c.message_type for c in chunks] == ["assistant_message", "stop_reason", "usage_statistics"]
        assert chunks[0].content == "Fair winds!"
        listed = list(client.conversations.messages.list(made.id))
        assert (listed[0].message_type, getattr(listed[0], "content", None)) == (
            "user_message",
            "Reply with the message 'Fair winds!'",
        )
        assert "assistant_message" in [m.message_type for m in listed]
        assert list(client.agents.messages.list(agent.id, after="0")), "the agent's recall holds them too"
        again = client.conversations.retrieve(made.id)
        assert again.last_message_at is not None and len(again.in_context_message_ids) == len(listed)
        other = client.conversations.create(agent_id=agent.id)
        assert [c.id for c in client.conversations.list(agent_id=agent.id)] == [other.id, made.id]
        assert list(client.conversations.messages.list(other.id)) == []
        assert client.conversations.update(made.id, summary="regatta").summary == "regatta"
        client.conversations.delete(other.id)
        with pytest.raises(letta_client.NotFoundError):
            client.conversations.retrieve(other.id)


def test_a_conversation_answers_in_one_response_and_checks_what_it_is_given(server: Server) -> None:
    import httpx

    with letta_for(server, ADMIN) as client:
        agent = client.agents.create(name="plain", model="openai/gpt-4o-mini")
        conversation = client.conversations.create(agent_id=agent.id)
    url = f"{server.url}/v1/conversations/{conversation.id}/messages"
    headers = {"authorization": f"Bearer {ADMIN}"}
    said = {"messages": [{"role": "user", "content": "Reply with the message 'one answer'"}], "streaming": False}
    answer = httpx.post(url, json=said, headers=headers, timeout=60).json()
    assert [m["message_type"] for m in answer["messages"]][-1] == "assistant_message"
    refused = httpx.post(
        f"{server.url}/v1/conversations?agent_id={agent.id}", json={"isolated_block_labels": ["human"]}, headers=headers
    )
    assert refused.status_code == 422 and "isolated blocks are not served" in refused.text
    assert (
        httpx.post(f"{server.url}/v1/conversations?agent_id=agent-nobody", json={}, headers=headers).status_code == 404
    )
    bad_model = httpx.post(f"{server.url}/v1/conversations?agent_id={agent.id}", json={"model": "gpt"}, headers=headers)
    assert bad_model.status_code == 422


def test_a_scoped_key_sees_only_its_agents_conversations(server: Server) -> None:
    with letta_for(server, ADMIN) as admin:
        theirs = admin.agents.create(name="someone-else")
        hidden = admin.conversations.create(agent_id=theirs.id)
    with letta_for(server, SCOPED) as scoped:
        own = scoped.agents.create(name="scoped-agent")
        mine = scoped.conversations.create(agent_id=own.id)
        assert [c.id for c in scoped.conversations.list()] == [mine.id]
        with pytest.raises(letta_client.NotFoundError):
            scoped.conversations.retrieve(hidden.id)
        with pytest.raises(letta_client.NotFoundError):
            scoped.conversations.create(agent_id=theirs.id)
    with letta_for(server, ADMIN) as admin:  # an unscoped key lists every agent's
        assert {hidden.id, mine.id} <= {c.id for c in admin.conversations.list(limit=1000)}


def test_the_default_conversation_is_the_agent_itself(server: Server) -> None:
    """Letta's agent-direct mode: conversation_id `default` with agent_id (or the agent's id in its
    place) sends to and lists the agent's own messages."""
    with letta_for(server, ADMIN) as client:
        agent = client.agents.create(name="direct", model="openai/gpt-4o-mini")
        said = [{"role": "user", "content": "Reply with the message 'straight to you'"}]
        chunks = list(client.conversations.messages.create("default", agent_id=agent.id, messages=said))
        assert chunks[0].message_type == "assistant_message"
        listed = [m.message_type for m in client.conversations.messages.list("default", agent_id=agent.id)]
        assert listed == ["user_message", "assistant_message"]
        assert [m.message_type for m in client.conversations.messages.list(agent.id)] == listed
        assert [m.message_type for m in client.agents.messages.list(agent.id, after="0")] == listed
        with pytest.raises(letta_client.BadRequestError, match="agent_id"):
            client.conversations.messages.list("default")


def test_compaction_folds_all_but_the_last_messages_into_the_summary(home: Path, llm: ScriptedLLM) -> None:
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.create_agent(AgentSettings(name="bot", model="scripted/agent", keep_last=2))
        thread = mem.conversations().create("bot")
        for said in ("first, about the Bluefin", "second", "third"):
            llm.script = [say(f"heard: {said}")]
            Agent(mem, "bot", conversation=thread.id).reply(said)
        llm.summarizer = lambda messages: "They talked about the Bluefin."
        done = compact(mem, "bot", conversation=thread.id, timeout_s=5)
        assert (done.before, done.after, done.summary) == (6, 2, "They talked about the Bluefin.")
        state = mem.conversations().get(thread.id).state
        assert (len(state.in_context), state.summary) == (2, "They talked about the Bluefin.")
        assert len(mem.recall("bot").list(session_id=thread.id)) == 6, "the folded messages stay in recall"
        assert compact(mem, "bot", conversation=thread.id, timeout_s=5).before == 2  # nothing more to fold
        assert mem.get_agent("bot")[1].summary == "", "the agent's own context is another thread"


def test_compaction_through_letta_client(server: Server) -> None:
    with letta_for(server, ADMIN) as client:
        agent = client.agents.create(name="talkative", model="openai/gpt-4o-mini")
        thread = client.conversations.create(agent_id=agent.id)
        for n in range(3):
            said = [{"role": "user", "content": f"Reply with the message 'answer {n}'"}]
            client.agents.messages.create(agent.id, messages=said)
            list(client.conversations.messages.create(thread.id, messages=said))
        own = client.agents.messages.compact(agent.id)
        assert (own.num_messages_before, own.num_messages_after) == (6, 4) and own.summary
        assert len(client.agents.retrieve(agent.id).message_ids or []) == 4
        theirs = client.conversations.messages.compact(thread.id)
        assert (theirs.num_messages_before, theirs.num_messages_after) == (6, 4)
        assert len(client.conversations.retrieve(thread.id).in_context_message_ids) == 4
        shown = client.conversations.recompile(thread.id, dry_run=True)
        assert theirs.summary and theirs.summary in shown, "the conversation's own summary is in its prompt"
        assert client.conversations.recompile("default", agent_id=agent.id) == client.agents.recompile(agent.id)
        fresh = client.conversations.create(agent_id=agent.id)
        assert theirs.summary not in client.conversations.recompile(fresh.id), "nor another's"


def test_messages_search_across_agents_and_conversations_within_the_keys_reach(server: Server) -> None:
    said = [{"role": "user", "content": "Reply with the message 'The quokka ferry leaves at nine'"}]
    with letta_for(server, ADMIN) as client:
        ferry = client.agents.create(name="ferry-desk", model="openai/gpt-4o-mini")
        thread = client.conversations.create(agent_id=ferry.id)
        list(client.conversations.messages.create(thread.id, messages=said))
        client.agents.messages.create(
            ferry.id, messages=[{"role": "user", "content": "Reply with the message 'a quokka, outside the thread'"}]
        )
        other = client.agents.create(name="quokka-island", model="openai/gpt-4o-mini")
        client.agents.messages.create(other.id, messages=[{"role": "user", "content": "quokka tours start at ten"}])
        everywhere = client.messages.search(query="quokka ferry", limit=100)
        assert {hit.agent_id for hit in everywhere} >= {ferry.id, other.id}
        assert (everywhere[0].agent_id, everywhere[0].conversation_id) == (ferry.id, thread.id)
        assert {hit.message_type for hit in everywhere} <= {"user_message", "assistant_message", "system_message"}
        in_thread = client.messages.search(query="quokka", conversation_id=thread.id, search_mode="fts")
        assert sorted(hit.message_type for hit in in_thread) == ["assistant_message", "user_message"]
        assert {(hit.agent_id, hit.conversation_id) for hit in in_thread} == {(ferry.id, thread.id)}
        assert client.messages.search(query="quokka", conversation_id=thread.id, agent_id=other.id) == []
        own = client.messages.search(query="quokka tours", agent_id=other.id, search_mode="vector")
        assert (own[0].content, own[0].conversation_id) == ("quokka tours start at ten", None)
        assert {h.agent_id for h in own} == {other.id}, "vectors rank every message of that agent, none of another"
        listed = [m.id for m in client.agents.messages.list(other.id)]
        assert own[0].message_id in listed, "the id is the one the agent's listing gives"
    with letta_for(server, SCOPED) as scoped:  # the key's reach: none of those agents
        assert all(hit.agent_id not in (ferry.id, other.id) for hit in scoped.messages.search(query="quokka ferry"))
        with pytest.raises(letta_client.NotFoundError):
            scoped.messages.search(query="quokka", conversation_id=thread.id)
        with pytest.raises(letta_client.NotFoundError):
            scoped.messages.search(query="quokka", agent_id=ferry.id)
