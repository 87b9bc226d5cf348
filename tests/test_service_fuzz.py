"""Schemathesis generates requests from the service's own OpenAPI spec, valid and invalid ones,
against a real server, with an unscoped and a scoped key: none may get a 500, every status must be
one the spec documents, and every body must match the documented schema. Derandomized: a failure
reproduces on the next run."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error, response_schema_conformance, status_code_conformance
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode

from tests.service_helpers import Server

KEY = "fuzz-key-0123456789"
SCOPED_KEY = "fuzz-scoped-01234"
AUTH = {"Authorization": f"Bearer {KEY}"}
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("fuzz") / "home", keys=f"{KEY},{SCOPED_KEY}=ana").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """One client for the whole module: making an httpx client parses the CA bundle (~20 ms of CPU),
    which a client per generated case would spend hundreds of times."""
    with httpx.Client(timeout=60) as http:
        yield http


def ensure_agent(url: str, client: httpx.Client) -> None:
    """A real agent with data, re-created if a generated DELETE removed it."""
    if client.get(f"{url}/v1/agents/ana", headers=AUTH).status_code == 404:
        client.post(
            f"{url}/v1/agents", headers=AUTH, json={"name": "ana", "memory_blocks": [{"label": "human", "value": "x"}]}
        )
        client.post(
            f"{url}/v1/agents/ana/archival-memory", headers=AUTH, json={"text": "Ana likes tea", "tags": ["food"]}
        )


# examples per (mode, key): the scoped key mostly meets agents it may not see, so it needs fewer
# (derandomized: the same cases every run; ~45 operations, so tens of requests per route and mode)
EXAMPLES = {
    (GenerationMode.POSITIVE, KEY): 10,
    (GenerationMode.NEGATIVE, KEY): 10,
    (GenerationMode.POSITIVE, SCOPED_KEY): 7,
    (GenerationMode.NEGATIVE, SCOPED_KEY): 4,
}


def fuzz(
    operation: Any, mode: GenerationMode, url: str, statuses: Counter[int], key: str, client: httpx.Client
) -> None:
    agent_may_be_gone = [True]  # checked before an operation's first case and after each DELETE

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES[mode, key],
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    def check(case: Any) -> None:
        if agent_may_be_gone[0]:
            ensure_agent(url, client)
        agent_may_be_gone[0] = case.method.upper() == "DELETE"
        if "agent_id" in (case.path_parameters or {}) and len(str(case.path_parameters["agent_id"])) % 2:
            case.path_parameters["agent_id"] = "ana"  # about half the cases reach the real agent
        # judged on status and schema, not latency: the first model check imports litellm (seconds on a busy box)
        response = case.call_and_validate(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, checks=CHECKS, timeout=60
        )
        statuses[response.status_code] += 1
        if case.media_type == "application/json" and case.body is not None:
            for status in resent_as_hostile_bodies(case, url, key, client):
                statuses[status] += 1

    check()


def resent_as_hostile_bodies(case: Any, url: str, key: str, client: httpx.Client) -> list[int]:
    """The generated body again, sent chunked (no Content-Length), then nested past the depth limit:
    neither may be a 5xx, and the deep one must be refused."""
    kwargs = case.as_transport_kwargs(
        base_url=url, headers={"Authorization": f"Bearer {key}", "content-type": "application/json"}
    )
    try:
        body = json.dumps(kwargs.pop("json")).encode()
    except (KeyError, TypeError):  # not a JSON body after all (negative cases may generate bytes)
        return []
    deep = b'{"a": ' * 70 + body + b"}" * 70
    statuses = []
    for content, refused in ((iter([body[:7], body[7:]]), False), (iter([deep]), True)):
        response = client.request(
            kwargs["method"], kwargs["url"], params=kwargs.get("params"), headers=kwargs["headers"], content=content
        )
        assert response.status_code < 500, (kwargs["method"], kwargs["url"], response.text)
        assert not refused or response.status_code in {401, 404, 413, 422}, response.text
        statuses.append(response.status_code)
    return statuses


# what each (mode, key) run must have met, so it cannot pass without reaching the handlers
EXPECTED = {
    (GenerationMode.POSITIVE, KEY): ((200, 201, 204), 50),  # valid requests reached the handlers
    (GenerationMode.NEGATIVE, KEY): ((422,), 50),  # invalid ones were refused with 4xx
    (GenerationMode.POSITIVE, SCOPED_KEY): ((404,), 10),  # the scoped key met agents it may not see
    (GenerationMode.NEGATIVE, SCOPED_KEY): ((404, 422), 10),
}


@pytest.mark.parametrize(
    ("mode", "key"), list(EXPECTED), ids=["valid-admin", "invalid-admin", "valid-scoped", "invalid-scoped"]
)
def test_no_server_error_on_any_generated_request(
    live_server: Server, client: httpx.Client, mode: GenerationMode, key: str
) -> None:
    spec = schemathesis.openapi.from_url(f"{live_server.url}/openapi.json")
    results = list(spec.get_all_operations())
    assert [r for r in results if not isinstance(r, Ok)] == []  # every operation of the schema parses
    operations = [r.ok() for r in results if isinstance(r, Ok)]
    assert len(operations) >= 15
    statuses: Counter[int] = Counter()
    for operation in operations:
        try:
            fuzz(operation, mode, live_server.url, statuses, key, client)
        except Unsatisfiable:  # nothing invalid to generate (e.g. GET /v1/health has no inputs)
            assert mode is GenerationMode.NEGATIVE
    wanted, at_least = EXPECTED[mode, key]
    assert sum(statuses[status] for status in wanted) > at_least, statuses
