"""One agent, one writer (#25 item 4): the reply loop holds its agent's lease in the store, so two
servers (two apps, each with its own Memory, on one home) sent the same agent's messages at once never
interleave its replies; a reply that cannot get the lease in time is refused (409, retry), not mixed in."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.errors import AgentBusyError
from memvec.service.app import create_app
from memvec.service.auth import KeyRing
from memvec.types import AgentSettings
from tests.scripted_llm import ScriptedLLM, Turn, say

KEY = "lease-key-0123456789"


def test_a_lease_is_held_by_one_holder_until_released_or_expired(memory: Memory) -> None:
    store = memory._store
    now = datetime.now(UTC)
    assert store.acquire_lease("ana", "server-a", now, 30)
    assert not store.acquire_lease("ana", "server-b", now, 30)
    assert store.acquire_lease("ana", "server-a", now, 30)  # its own again: renewed
    assert not store.renew_lease("ana", "server-b", now, 30)
    store.release_lease("ana", "server-b")  # not b's: nothing happens
    assert not store.acquire_lease("ana", "server-b", now, 30)
    store.release_lease("ana", "server-a")
    assert store.acquire_lease("ana", "server-b", now, 0.05)
    later = datetime.now(UTC).replace(year=now.year + 1)
    assert store.acquire_lease("ana", "server-a", later, 30)  # b's expired (b was killed): a takes it over
    assert not store.renew_lease("ana", "server-b", later, 30)


@pytest.mark.slow
def test_a_held_lease_makes_a_second_holder_wait_then_give_up(memory: Memory) -> None:
    with memory.agent_lease("ana", ttl_s=0.3) as holder:
        time.sleep(0.5)  # past the ttl: the renewer keeps it
        with pytest.raises(AgentBusyError, match="replying elsewhere"), memory.agent_lease("ana", wait_s=0.2):
            pass
        assert holder
    with memory.agent_lease("ana", wait_s=0.2):  # released on exit
        pass


def echo_slowly(messages: list[dict[str, Any]]) -> Turn:
    """Answer the last user message, slowly enough that a concurrent reply would overlap it."""
    time.sleep(0.15)
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return say(f"echo: {last}")


def two_servers(home: Path, **settings: Any) -> tuple[TestClient, TestClient, list[Memory]]:
    memories = [Memory.open(home, embedder=HashingEmbedder(64), **settings) for _ in range(2)]
    keys = KeyRing.parse([("t", KEY)])
    return TestClient(create_app(memories[0], keys)), TestClient(create_app(memories[1], keys)), memories


def send(client: TestClient, text: str) -> int:
    return client.post(
        "/v1/agents/bot/messages",
        headers={"Authorization": f"Bearer {KEY}"},
        json={"messages": [{"role": "user", "content": text}]},
    ).status_code


@pytest.mark.slow
def test_one_agents_messages_sent_to_two_servers_at_once_never_interleave(home: Path, llm: ScriptedLLM) -> None:
    first, second, memories = two_servers(home)
    try:
        memories[0].create_agent(AgentSettings(name="bot", model="scripted/agent"))
        llm.script = [echo_slowly] * 12
        statuses: list[int] = []
        senders = [
            threading.Thread(
                target=lambda c=client, n=n: statuses.extend(send(c, f"message {n}.{i}") for i in range(3))
            )
            for n, client in enumerate([first, second, first, second])
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        assert statuses == [200] * 12
        log = [(m.role, m.text) for m in memories[1].recall("bot").list(limit=100)]
        assert len(log) == 24
        for (role, text), (reply_role, reply) in zip(log[::2], log[1::2], strict=True):
            assert role == "user" and reply_role == "assistant" and reply == f"echo: {text}", log
        _, state = memories[0].get_agent("bot")
        assert state.turn == 12  # every reply started from the state the previous one left
    finally:
        for mem in memories:
            mem.close()


@pytest.mark.slow
def test_a_reply_that_cannot_get_the_lease_is_refused_with_a_retry(home: Path, llm: ScriptedLLM) -> None:
    first, _, memories = two_servers(home, lease_wait_s=0.2)
    try:
        memories[0].create_agent(AgentSettings(name="bot", model="scripted/agent"))
        with memories[1].agent_lease("bot"):  # the other server is replying
            response = first.post(
                "/v1/agents/bot/messages",
                headers={"Authorization": f"Bearer {KEY}"},
                json={"messages": [{"role": "user", "content": "hello?"}]},
            )
        assert response.status_code == 409 and response.json()["error"] == "agent_busy"
        assert response.headers["retry-after"] == "1" and response.headers["x-should-retry"] == "true"
        assert memories[0].recall("bot").count() == 0  # nothing of the refused reply was written
        llm.script = [say("hi")]
        assert send(first, "hello again") == 200
    finally:
        for mem in memories:
            mem.close()


@pytest.mark.slow
def test_messages_recorded_by_two_servers_at_once_are_all_kept_with_distinct_turns(home: Path) -> None:
    """An agent without a model only records: its turn ids are handed out under the lease, so
    concurrent messages (the same text included) to two servers are each stored once, with their own turn."""
    first, second, memories = two_servers(home)
    try:
        memories[0].create_agent(AgentSettings(name="log"))
        acknowledged: list[tuple[int, bool, str]] = []
        guard = threading.Lock()

        def post(client: TestClient, text: str) -> None:
            response = client.post(
                "/v1/agents/log/messages",
                headers={"Authorization": f"Bearer {KEY}"},
                json={"messages": [{"role": "user", "content": text}]},
            )
            assert response.status_code == 200, response.text
            for passage in response.json()["recorded"]:
                with guard:
                    acknowledged.append((int(passage["id"]), passage["created"], passage["citation"]["turn_id"]))

        texts = ["same words"] * 12 + [f"words {n}" for n in range(12)]
        senders = [
            threading.Thread(target=post, args=(client, text))
            for text, client in zip(texts, [first, second] * len(texts), strict=False)
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        ids = [record_id for record_id, _, _ in acknowledged]
        assert len(acknowledged) == 24 and len(set(ids)) == 24 and all(created for _, created, _ in acknowledged)
        stored = memories[1].recall("log").list(limit=100)
        assert sorted(r.id for r in stored) == sorted(ids)
        assert sorted(int(r.citation.turn_id or 0) for r in stored) == list(range(1, 25))
        assert memories[0].get_agent("log")[1].turn == 24
    finally:
        for mem in memories:
            mem.close()


@pytest.mark.slow
def test_a_repeated_message_in_the_same_turn_says_it_was_not_created(home: Path) -> None:
    first, _, memories = two_servers(home)
    try:
        memories[0].create_agent(AgentSettings(name="log"))
        response = first.post(
            "/v1/agents/log/messages",
            headers={"Authorization": f"Bearer {KEY}"},
            json={"messages": [{"role": "user", "content": "hello"}]},
        )
        assert [p["created"] for p in response.json()["recorded"]] == [True]
        _, state = memories[0].get_agent("log")
        memories[0].update_agent(memories[0].get_agent("log")[0], state.model_copy(update={"turn": 0}))
        again = first.post(
            "/v1/agents/log/messages",
            headers={"Authorization": f"Bearer {KEY}"},
            json={"messages": [{"role": "user", "content": "hello"}]},
        ).json()["recorded"]
        assert [(p["created"], p["duplicate_of"]) for p in again] == [(False, response.json()["recorded"][0]["id"])]
    finally:
        for mem in memories:
            mem.close()


@pytest.mark.slow
def test_a_message_to_a_busy_agent_in_the_same_server_waits_at_most_the_lease_wait(
    home: Path, llm: ScriptedLLM
) -> None:
    """The in-process wait (one event loop, as in a server) ends where the cross-server one does
    (409 agent_busy, Retry-After) without waiting for the store lease, and another agent of the same
    server answers meanwhile."""
    import asyncio

    import httpx

    memory = Memory.open(home, embedder=HashingEmbedder(64), lease_wait_s=0.3)
    memories = [memory]
    try:
        memory.create_agent(AgentSettings(name="bot", model="scripted/agent"))
        memory.create_agent(AgentSettings(name="other"))

        replying, release = threading.Event(), threading.Event()

        def slow(messages: list[dict[str, Any]]) -> Turn:
            replying.set()  # the first message holds the agent now
            release.wait(timeout=20)  # a second message that waits without bound is stuck until then
            return say("done")

        llm.script = [slow]
        app = create_app(memory, KeyRing.parse([("t", KEY)]))

        async def scenario() -> tuple[httpx.Response, bool, httpx.Response, httpx.Response]:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://localhost",
                headers={"Authorization": f"Bearer {KEY}"},
            ) as client:

                def message(agent: str, text: str) -> Any:
                    return client.post(
                        f"/v1/agents/{agent}/messages", json={"messages": [{"role": "user", "content": text}]}
                    )

                busy = asyncio.ensure_future(message("bot", "take your time"))
                assert await asyncio.to_thread(replying.wait, 60)
                refused = await message("bot", "me too")
                still_replying = not busy.done()  # the refusal did not wait for the first reply
                other = await message("other", "meanwhile")
                release.set()
                return refused, still_replying, other, await busy

        refused, still_replying, other, first = asyncio.run(scenario())
        assert refused.status_code == 409 and "busy with another message" in refused.json()["detail"]
        assert refused.headers["retry-after"] == "1" and still_replying
        assert other.status_code == 200 and first.status_code == 200
        assert [m.text for m in memory.recall("bot").list(limit=10, newest_first=False)] == ["take your time", "done"]
    finally:
        for mem in memories:
            mem.close()
