"""A message re-sent by a client that retries is run and stored once (#59 item 6): letta-client with
its own retry settings against a real server whose model is slower than the client's timeout; the
same through `x-stainless-retry-count` and `Idempotency-Key` by hand; a send whose client left while
it waited for the agent is not run."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import letta_client
import pytest
from letta_client import Letta

from memvec import Memory
from memvec.embed import HashingEmbedder
from memvec.store.requests import REQUEST_TTL
from memvec.types import AgentSettings
from tests.conftest import SteppingClock
from tests.service_helpers import Server

ADMIN = "retries-admin-0001"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
MODEL_DELAY_S = 1.5  # each model call: longer than the client's timeout below


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("retries") / "home"
    server = Server(
        home, keys=ADMIN, module="tests.scripted_serve", env={"MEMVEC_TEST_MODEL_DELAY_S": str(MODEL_DELAY_S)}
    ).start()
    yield server
    server.stop()


@pytest.fixture
def ana(slow: Server) -> str:
    """An agent of its own for each test (the server is the module's)."""
    name = f"ana-{uuid.uuid4().hex[:8]}"
    created = httpx.post(f"{slow.url}/v1/agents", json={"name": name, "model": "scripted/echo"}, headers=AUTH)
    created.raise_for_status()
    return name


def said(server: Server, agent: str, role: str = "user") -> list[str]:
    listed = httpx.get(f"{server.url}/v1/agents/{agent}/messages", params={"order": "asc", "limit": 100}, headers=AUTH)
    return [m["content"] for m in listed.raise_for_status().json() if m["message_type"] == f"{role}_message"]


def running(server: Server, agent: str, text: str) -> None:
    """Wait until a send of `text` is in its model call (its user message is stored first)."""
    for _ in range(400):
        if text in said(server, agent):
            return
        time.sleep(0.025)
    raise AssertionError(f"{text!r} was never stored")


def settle(server: Server, agent: str) -> None:
    """Wait until no run of the agent is going on (a send answers, or 409 agent_busy while one runs)."""
    for _ in range(60):
        answer = httpx.post(
            f"{server.url}/v1/agents/{agent}/messages",
            json={"messages": [{"role": "user", "content": "settled?"}]},
            headers={**AUTH, "Idempotency-Key": "settle-probe"},
            timeout=30,
        )
        if answer.status_code == 200:
            return
        time.sleep(0.5)
    raise AssertionError("the agent never settled")


@pytest.mark.slow
def test_letta_clients_own_retries_store_a_slow_turn_once(slow: Server, ana: str) -> None:
    with Letta(base_url=slow.url, api_key=ADMIN, timeout=1.0) as client:  # its default max_retries: 2
        try:
            answer = client.agents.messages.create(ana, messages=[{"role": "user", "content": "a slow hello"}])
            assert answer.messages[-1].message_type == "assistant_message"  # the first attempt's answer
        except (letta_client.APITimeoutError, letta_client.ConflictError):
            pass  # every attempt ended before the first run did: still one run
    settle(slow, ana)
    assert said(slow, ana).count("a slow hello") == 1
    body = {"messages": [{"role": "user", "content": "a slow hello"}]}
    retried = httpx.post(
        f"{slow.url}/v1/agents/{ana}/messages", json=body, headers={**AUTH, "x-stainless-retry-count": "2"}, timeout=30
    )
    assert retried.status_code == 200 and retried.headers.get("x-memvec-replayed") == "true"
    assert said(slow, ana).count("a slow hello") == 1
    fresh = httpx.post(
        f"{slow.url}/v1/agents/{ana}/messages", json=body, headers={**AUTH, "x-stainless-retry-count": "0"}, timeout=30
    )
    assert fresh.status_code == 200 and "x-memvec-replayed" not in fresh.headers
    assert said(slow, ana).count("a slow hello") == 2  # a first attempt is a new message, even with the same text


@pytest.mark.slow
def test_an_idempotency_key_answers_a_repeat_with_the_first_answer_or_409_while_it_runs(slow: Server, ana: str) -> None:
    url, body = f"{slow.url}/v1/agents/{ana}/messages", {"messages": [{"role": "user", "content": "once only"}]}
    headers = {**AUTH, "Idempotency-Key": "order-41c7"}
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(httpx.post(url, json=body, headers=headers, timeout=60)))
    first.start()
    running(slow, ana, "once only")
    during = httpx.post(url, json=body, headers=headers, timeout=60)
    assert during.status_code == 409 and during.json()["error"] == "agent_busy"
    first.join()
    after = httpx.post(url, json=body, headers=headers, timeout=60)
    assert answers[0].status_code == 200 and after.status_code == 200
    assert after.json() == answers[0].json() and after.headers["x-memvec-replayed"] == "true"
    assert said(slow, ana).count("once only") == 1
    bad = httpx.post(url, json=body, headers={**AUTH, "Idempotency-Key": "has spaces"}, timeout=30)
    assert bad.status_code == 400 and said(slow, ana).count("once only") == 1
    forgotten = httpx.post(f"{slow.url}/v1/agents/{ana}/forget", json={"roles": ["user"]}, headers=AUTH, timeout=30)
    assert forgotten.status_code == 200
    again = httpx.post(url, json=body, headers=headers, timeout=60)  # the answer quoted what was forgotten
    assert again.status_code == 200 and "x-memvec-replayed" not in again.headers


@pytest.mark.slow
def test_a_send_whose_client_left_while_the_agent_was_busy_is_not_run(slow: Server, ana: str) -> None:
    url = f"{slow.url}/v1/agents/{ana}/messages"
    busy = threading.Thread(
        target=lambda: httpx.post(
            url, json={"messages": [{"role": "user", "content": "first"}]}, headers=AUTH, timeout=60
        )
    )
    busy.start()
    running(slow, ana, "first")
    with pytest.raises(httpx.TimeoutException):  # waits for the agent, then gives up
        httpx.post(url, json={"messages": [{"role": "user", "content": "gave up"}]}, headers=AUTH, timeout=1.0)
    busy.join()
    settle(slow, ana)
    assert said(slow, ana).count("first") == 1 and "gave up" not in said(slow, ana)


def test_the_ledger_is_the_stores_so_a_retry_on_another_server_sees_the_first_attempt(tmp_path: Path) -> None:
    clock = SteppingClock(datetime(2026, 1, 1, tzinfo=UTC))
    with (
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(8), clock=clock) as first,
        Memory.open(tmp_path / "home", embedder=HashingEmbedder(8), clock=clock) as second,
    ):
        first.create_agent(AgentSettings(name="ana"))
        assert first.claim_message_request("ana", "k1", fresh=True) == ("claimed", None)
        assert second.claim_message_request("ana", "k1", fresh=False) == ("running", None)
        first.finish_message_request("k1", '{"messages": []}')
        assert second.claim_message_request("ana", "k1", fresh=False) == ("done", '{"messages": []}')
        assert second.claim_message_request("ana", "k1", fresh=True) == ("claimed", None)  # sent again: runs
        second.drop_message_request("k1")  # it failed: a retry runs it
        assert first.claim_message_request("ana", "k1", fresh=False) == ("claimed", None)
        clock.advance(REQUEST_TTL + timedelta(seconds=1))  # a run lost with its server is given up
        assert second.claim_message_request("ana", "k1", fresh=False) == ("claimed", None)
        first.finish_message_request("k1", '{"messages": ["what was said"]}')
        first.recall("ana").append("user", "something said")
        first.forget("ana", roles=["user"])
        assert second.claim_message_request("ana", "k1", fresh=False) == ("claimed", None)
