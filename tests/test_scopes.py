"""Every route of the app that names an agent or a shared block, walked with a key scoped to another agent (#34): each
answers 404 (or 403), exactly as for an agent that does not exist, and the same request with the
admin key does not, so the scope is what refused it. The routes come from the app itself: a new
route is walked without anyone adding it to a list, and one this file has no request for fails."""

from __future__ import annotations

import asyncio
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from fastapi.testclient import TestClient

from memvec import CoreBlock, Memory, NotFoundError
from memvec.embed import HashingEmbedder
from memvec.exchange.consolidation import ConsolidationProposal
from memvec.service.app import create_app
from memvec.service.auth import KeyRing, Principal
from memvec.service.deps import ServiceState, scoped_agent
from memvec.types import AgentSettings
from memvec.types.tools import builtin_tool_id
from tests.service_helpers import api_routes

ADMIN, SCOPED = "admin-key-0123456789", "bob-only-key-0123456789"
KEYS = KeyRing.parse([("admin", ADMIN), ("bob", f"{SCOPED}=bob")])
# what a well-formed request to each route carries (json / params / form); None: nothing
REQUESTS: dict[str, dict[str, Any]] = {
    "PATCH /v1/agents/{agent_id}": {"json": {"description": "x"}},
    "PATCH /v1/agents/{agent_id}/core-memory/blocks/{label}": {"json": {"value": "x"}},
    "PATCH /v1/blocks/{block_id}": {"json": {"value": "x"}},
    "POST /v1/agents/{agent_id}/archival-memory": {"json": {"text": "x"}},
    "GET /v1/agents/{agent_id}/archival-memory/search": {"params": {"query": "lisbon"}},
    "PATCH /v1/agents/{agent_id}/archival-memory/{passage_id}": {"json": {"text": "y"}},
    "GET /v1/agents/{agent_id}/recall-memory/search": {"params": {"query": "hello"}},
    "POST /v1/agents/{agent_id}/forget": {"json": {"tags": ["home"]}},
    "POST /v1/agents/{agent_id}/messages": {"json": {"messages": [{"role": "user", "content": "hi"}]}},
    "POST /v1/agents/{agent_id}/messages/stream": {"json": {"messages": [{"role": "user", "content": "hi"}]}},
    "POST /v1/agents/{agent_id}/messages/async": {"json": {"messages": [{"role": "user", "content": "hi"}]}},
    "POST /v1/agents/{agent_id}/tools/{tool_name}/run": {"json": {"args": {"query": "tea"}}},
    "POST /v1/agents/{agent_id}/generate": {"json": {"prompt": "hi"}},
    "POST /ui/agents/{agent_id}/blocks/{label}": {"form": {"value": "x"}},
    "GET /ui/agents/{agent_id}/search": {"params": {"q": "lisbon"}},
    "PATCH /v1/folders/{folder_id}": {"json": {"description": "papers"}},
    "POST /v1/folders/{folder_id}/upload": {"files": {"file": ("more.txt", b"More notes.", "text/plain")}},
}


def scratch_memory() -> Memory:
    """A home of its own in a new temporary folder (a fixed path would outlive the run and its schema)."""
    return Memory.open(Path(tempfile.mkdtemp(prefix="memvec-scope-routes-")), embedder=HashingEmbedder(8))


def walked_routes() -> list[tuple[str, str]]:
    app = create_app(scratch_memory(), KEYS)
    routes = [(method, route.path) for route in api_routes(app) for method in sorted(route.methods or ())]
    app.state.service.memory.close()
    return [(m, p) for m, p in routes if "{agent_id}" in p or "{block_id}" in p or "{folder_id}" in p]


@pytest.fixture
def home_with_ana(tmp_path: Path) -> Iterator[tuple[Memory, dict[str, str]]]:
    with Memory.open(tmp_path / "home", embedder=HashingEmbedder(32)) as mem:
        mem.create_agent(AgentSettings(name="ana"))
        mem.create_agent(AgentSettings(name="bob"))
        passage = mem.archival("ana").insert("Ana lives in Lisbon.", tags=["home"]).record.id
        message = mem.recall("ana").append("user", "hello there, I like tea", session_id="s1").record.id
        mem.core("ana").append("human", "likes tea")
        proposal = ConsolidationProposal.model_validate(
            {"facts": [{"text": "Ana likes tea.", "sources": [message], "reason": "she says so"}]}
        )
        run = mem.apply_consolidation("ana", proposal, model="scripted/none", through_message=message)
        shared = mem.shared_blocks().create(CoreBlock(label="team", value="Project: apollo"))
        mem.shared_blocks().attach("ana", shared.id)  # held by ana only: bob's key cannot see it
        folder = mem.folders().create("ana's papers")
        mem.folders().attach(folder.id, "ana")  # attached to ana only: bob's key cannot see it
        file = mem.folders().upload(folder.id, "notes.txt", b"Ana keeps her notes here.").document
        own = mem.add_document("ana", "diary.md", "# Diary\n\nAna went to Porto.").document
        yield (
            mem,
            {
                "agent_id": "ana",
                "label": "human",
                "passage_id": str(passage),
                "run_id": str(run.id),
                "block_id": shared.id,
                "folder_id": folder.id,
                "file_id": f"file-{file.id}",
                "document_id": str(own.id),
                "tool_id": builtin_tool_id("conversation_search"),
                "tool_name": "conversation_search",
            },
        )


def ask(client: TestClient, method: str, path: str, values: dict[str, str], csrf: str | None) -> int:
    url = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
    extra = dict(REQUESTS.get(f"{method} {path}", {}))
    if path.startswith("/ui/") and method == "POST":
        extra["data"] = {**extra.pop("form", {}), "csrf_token": csrf or ""}
    return client.request(method, url, **extra).status_code


def ui_client(mem: Memory, key: str) -> tuple[TestClient, str]:
    client = TestClient(create_app(mem, KEYS), follow_redirects=False)
    token = re.search(r'name="login_token" value="([^"]+)"', client.get("/ui/login").text)
    assert token is not None
    assert client.post("/ui/login", data={"api_key": key, "login_token": token.group(1)}).status_code == 303
    page = client.get("/ui/agents").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    return client, csrf.group(1)


@pytest.mark.parametrize(("method", "path"), walked_routes(), ids=lambda v: v)
@pytest.mark.slow
def test_a_key_scoped_to_another_agent_sees_nothing_of_it(
    home_with_ana: tuple[Memory, dict[str, str]], method: str, path: str
) -> None:
    mem, values = home_with_ana
    scoped_csrf: str | None
    admin_csrf: str | None
    if path.startswith("/ui/"):
        (scoped, scoped_csrf), (admin, admin_csrf) = ui_client(mem, SCOPED), ui_client(mem, ADMIN)
    else:
        scoped = TestClient(create_app(mem, KEYS), headers={"Authorization": f"Bearer {SCOPED}"})
        admin = TestClient(create_app(mem, KEYS), headers={"Authorization": f"Bearer {ADMIN}"})
        scoped_csrf = admin_csrf = None
    refused = ask(scoped, method, path, values, scoped_csrf)
    assert refused in (403, 404), f"{method} {path} answered {refused} to a key scoped to another agent"
    served = ask(admin, method, path, values, admin_csrf)
    assert served not in (403, 404, 422), (
        f"{method} {path}: the request is not well-formed ({served}); add what it needs to REQUESTS"
    )


def test_every_route_with_an_agent_in_its_path_takes_it_through_the_scope_dependency() -> None:
    """A handler that declares `agent_id` itself could forget the scope check; one that takes
    ScopedAgent (the API) or PageAgent (the browser) cannot. Fast, and independent of the walk above."""
    from memvec.service.deps import scoped_agent
    from memvec.service.ui.deps import page_agent

    app = create_app(scratch_memory(), KEYS)
    app.state.service.memory.close()
    checked = 0
    for route in api_routes(app):
        if "{agent_id}" not in route.path:
            continue
        checked += 1
        direct = [param.name for param in route.dependant.path_params]
        through = [
            dep.call
            for dep in route.dependant.dependencies
            if any(param.name == "agent_id" for param in dep.path_params)
        ]
        assert "agent_id" not in direct and through in ([scoped_agent], [page_agent]), route.path
    assert checked > 30


def test_the_scope_dependency_answers_an_agent_the_key_may_not_see_as_one_that_is_not_there() -> None:
    ana_id = "agent-0b5e3c7a-0000-4000-8000-000000000001"
    service = cast(ServiceState, SimpleNamespace(memory=SimpleNamespace(find_agent=_ids_only({ana_id: "ana"}))))
    scoped, everyone = Principal(agents=frozenset({"ana"})), Principal()

    def resolve(ref: str, principal: Principal) -> str:
        return asyncio.run(scoped_agent(ref, principal, service))

    assert (resolve(ana_id, scoped), resolve("bob", everyone)) == ("ana", "bob")
    for absent in ("bob", "carl", "agent-0b5e3c7a-0000-4000-8000-000000000002"):
        with pytest.raises(NotFoundError, match=f"'{absent}' not found"):
            resolve(absent, scoped)


def _ids_only(handles: dict[str, str]) -> Callable[[str], str | None]:
    """Memory.find_agent over a store of `handles` ({id: handle}): a handle names itself, and is
    resolved on the event loop's own thread (no worker thread for it); only an id goes to one."""

    def find_agent(ref: str) -> str | None:
        on_loop = threading.current_thread() is threading.main_thread()
        assert on_loop != ref.startswith("agent-"), f"{ref!r} resolved on {threading.current_thread().name}"
        return handles.get(ref) if ref.startswith("agent-") else ref

    return find_agent
