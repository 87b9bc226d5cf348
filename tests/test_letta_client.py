"""The official `letta-client` (pinned), unchanged, against a real `memvec serve`.

The client validates every response strictly against its own models
(`_strict_response_validation=True`), so a missing or None field it declares fails the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import letta_client
import pytest
from letta_client import Letta
from letta_client.types import CreateBlockParam, MessageCreateParam

from tests.service_helpers import Server, letta_for, served_in_process

ADMIN = "letta-admin-0001"
SCOPED = "letta-scope-0001"
QUICKSTART_BLOCKS: list[CreateBlockParam] = [
    {"label": "human", "value": "The human's name is Chad. They like vibe coding."},
    {"label": "persona", "value": "My name is Sam, the all-knowing sentient AI."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("letta") / "home", keys=f"{ADMIN},{SCOPED}=scoped-agent").start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Letta]:
    with letta_for(server, ADMIN) as letta:
        yield letta


def test_create_in_the_quickstart_form_and_retrieve(client: Letta) -> None:
    agent = client.agents.create(
        model="openai/gpt-4o-mini",
        embedding="openai/text-embedding-3-small",
        memory_blocks=QUICKSTART_BLOCKS,
        tags=["demo"],
        description="quickstart",
        include_base_tools=True,
    )
    assert agent.id.startswith("agent-") and agent.name == agent.id
    assert [b.label for b in agent.blocks] == ["human", "persona"] and agent.blocks[0].value.startswith("The human")
    assert [b.label for b in agent.memory.blocks] == ["human", "persona"]
    assert agent.llm_config.model == "openai/gpt-4o-mini" and agent.llm_config.api_model_endpoint_type == "openai"
    assert agent.llm_config.context_window == 128_000  # the model's own window, where litellm knows it
    assert agent.embedding == "openai/text-embedding-3-small" and agent.embedding_config is not None
    assert agent.embedding_config.embedding_model == "hash:64" and agent.embedding_config.embedding_dim == 64
    assert agent.agent_type == "memgpt_agent" and agent.system and agent.tags == ["demo"]
    assert {t.name for t in agent.tools} >= {"send_message", "archival_memory_search", "conversation_search"}
    assert all(t.tool_type in ("letta_core", "letta_memory_core") for t in agent.tools)
    assert agent.sources == [] and agent.description == "quickstart"
    again = client.agents.retrieve(agent.id)
    assert again.model_dump() == agent.model_dump()


def test_list_pages_with_the_clients_cursor(client: Letta) -> None:
    made = [client.agents.create(name=f"page {i}", tags=["paged"] if i % 2 else ["other"]).id for i in range(5)]
    listed = [a.id for a in client.agents.list(limit=2) if a.id in made]
    assert listed == made  # every agent once, oldest first, and the iteration ends
    assert [a.id for a in client.agents.list(name="page 3")] == [made[3]]
    assert [a.id for a in client.agents.list(tags=["paged"], limit=50)] == [made[1], made[3]]
    first_page = client.agents.list(order="desc", limit=3, name=None).items
    assert [a.id for a in first_page] == made[:1:-1]  # newest first


def test_modify_and_delete(client: Letta) -> None:
    agent = client.agents.create(name="mod-me", model="openai/gpt-4o-mini")
    changed = client.agents.update(
        agent.id,
        tags=["a", "b"],
        description="changed",
        metadata={"team": "x"},
        system="Be brief.",
        model="anthropic/claude-haiku-4-5",
        context_window_limit=16000,
    )
    assert changed.tags == ["a", "b"] and changed.description == "changed" and changed.metadata == {"team": "x"}
    assert changed.system == "Be brief." and changed.llm_config.api_model_endpoint_type == "anthropic"
    assert changed.llm_config.context_window == 16000
    assert client.agents.retrieve(agent.id).model_dump() == changed.model_dump()
    renamed = client.agents.update(agent.id, name="Other Name")  # a display name: the id stays
    assert (renamed.id, renamed.name) == (agent.id, "Other Name")
    assert client.agents.retrieve(agent.id).name == "Other Name"
    client.agents.delete(agent.id)
    with pytest.raises(letta_client.NotFoundError):
        client.agents.retrieve(agent.id)


def test_blocks_list_retrieve_update_by_label(client: Letta) -> None:
    agent = client.agents.create(name="blocky", memory_blocks=QUICKSTART_BLOCKS)
    blocks = client.agents.blocks.list(agent.id)
    assert [(b.label, b.id) for b in blocks] == [("human", "blocky:human"), ("persona", "blocky:persona")]
    human = client.agents.blocks.retrieve("human", agent_id=agent.id)
    assert human.value.startswith("The human's name is Chad") and human.limit == 100_000  # Letta's default
    updated = client.agents.blocks.update(
        "human", agent_id=agent.id, value="Name: Chad", metadata={"v": 2}, description="who they are"
    )
    assert (updated.value, updated.metadata, updated.description) == ("Name: Chad", {"v": 2}, "who they are")
    assert client.agents.retrieve(agent.id).blocks[0].value == "Name: Chad"
    client.agents.blocks.update("human", agent_id=agent.id, limit=2_000)
    with pytest.raises(letta_client.UnprocessableEntityError, match="the block limit is 2000"):
        client.agents.blocks.update("human", agent_id=agent.id, value="x" * 2_001)
    # letta-client 0.1.x read the whole core memory (`core_memory.retrieve`) as Letta's Memory
    memory = client.get(f"/v1/agents/{agent.id}/core-memory", cast_to=object)
    assert isinstance(memory, dict) and set(memory) == {"blocks", "file_blocks", "prompt_template", "agent_type"}
    assert memory["blocks"][0]["value"] == "Name: Chad" and memory["file_blocks"] == []


def test_refusals_are_not_retried(server: Server, client: Letta) -> None:
    first, second = client.agents.create(name="dup"), client.agents.create(name="dup")  # names may repeat
    assert first.id != second.id and first.name == second.name == "dup"
    exported = httpx.get(f"{server.url}/v1/agents/{first.id}/export", headers={"Authorization": f"Bearer {ADMIN}"})
    auth = {"Authorization": f"Bearer {ADMIN}"}
    response = httpx.post(f"{server.url}/v1/agents/import", json=exported.json(), headers=auth)  # "dup" is taken
    assert response.status_code == 409 and response.headers["x-should-retry"] == "false", response.text
    invalid = httpx.post(f"{server.url}/v1/agents", json={"name": " "}, headers={"Authorization": f"Bearer {ADMIN}"})
    assert invalid.status_code == 422 and invalid.headers["x-should-retry"] == "false"


def test_a_scoped_key_sees_only_its_agents(server: Server, client: Letta) -> None:
    mine = client.agents.create(name="scoped-agent")
    with Letta(base_url=server.url, api_key=SCOPED, _strict_response_validation=True) as scoped:
        assert [a.id for a in scoped.agents.list()] == [mine.id]
        with pytest.raises(letta_client.NotFoundError):
            scoped.agents.retrieve("dup")
        with pytest.raises(letta_client.PermissionDeniedError):
            scoped.agents.create(model="openai/gpt-4o-mini")
    with (
        Letta(base_url=server.url, api_key="wrong-key-0000", max_retries=0) as stranger,
        pytest.raises(letta_client.AuthenticationError),
    ):
        stranger.agents.list()


@pytest.mark.slow
def test_agents_written_through_the_python_api_are_agents_of_the_service(tmp_path: Path) -> None:
    from memvec import Memory
    from memvec.embed import HashingEmbedder

    home = tmp_path / "home"
    with Memory.open(home, embedder=HashingEmbedder(64)) as mem:
        mem.recall("probe").append("user", "hello from the CLI", session_id="s1")
    srv = Server(home).start()
    try:
        with Letta(base_url=srv.url, _strict_response_validation=True) as letta:
            (listed,) = letta.agents.list()
            assert listed.id.startswith("agent-") and listed.name == "probe"
            by_id, by_handle = letta.agents.retrieve(listed.id), letta.agents.retrieve("probe")
            assert (by_id.id, by_id.name) == (by_handle.id, by_handle.name) == (listed.id, "probe")
    finally:
        srv.stop()


def test_passages_create_list_search_delete(client: Letta) -> None:
    agent = client.agents.create(name="archivist")
    made = [
        client.agents.passages.create(agent.id, text=text, tags=tags)[0]
        for text, tags in (
            ("The launch window opens on 4 March.", ["space"]),
            ("Ana's dog is a beagle called Toby.", ["pets"]),
            ("The quarterly report is due on Friday.", ["work"]),
            ("Toby the beagle loves the beach.", ["pets"]),
        )
    ]
    assert all(isinstance(p.id, str) and p.text and p.created_at for p in made) and made[1].tags == ["pets"]
    ids = [str(p.id) for p in made]  # each a str: asserted above
    assert [p.id for p in client.agents.passages.list(agent.id)] == ids
    assert [p.id for p in client.agents.passages.list(agent.id, ascending=False, limit=2)] == ids[:1:-1]
    assert [p.id for p in client.agents.passages.list(agent.id, after=ids[1], limit=10)] == ids[2:]
    assert [p.id for p in client.agents.passages.list(agent.id, before=ids[2])] == ids[:2]
    assert client.agents.passages.list(agent.id, search="beagle", limit=2)[0].id in {ids[1], ids[3]}
    found = client.agents.passages.search(agent.id, query="what kind of dog is Toby?", top_k=2, tags=["pets"])
    assert found.count == 2 and {r.id for r in found.results} == {ids[1], ids[3]}
    assert found.results[0].content and found.results[0].timestamp and found.results[0].tags == ["pets"]
    extras = found.results[0].model_extra or {}
    assert set(extras) >= {"citation", "score", "scores", "untrusted"}  # memvec's fields ride along
    client.agents.passages.delete(ids[0], agent_id=agent.id)
    assert [p.id for p in client.agents.passages.list(agent.id)] == ids[1:]
    with pytest.raises(letta_client.NotFoundError):
        client.agents.passages.delete(ids[0], agent_id=agent.id)


def test_a_patched_passage_reads_back_as_its_current_version(client: Letta, server: Server) -> None:
    """letta-client 1.12 has no passage update; the PATCH goes as Letta's route takes it, and the
    client's own list and search then see only the new version."""
    agent = client.agents.create(name="mover")
    old = client.agents.passages.create(agent.id, text="Ana lives in Lisbon.", tags=["home"])[0]
    patched = httpx.patch(
        f"{server.url}/v1/agents/{agent.id}/archival-memory/{old.id}",
        json={"id": old.id, "text": "Ana lives in Berlin."},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert patched.status_code == 200
    new = patched.json()[0]
    listed = client.agents.passages.list(agent.id)
    assert [(p.id, p.text, p.tags) for p in listed] == [(new["id"], "Ana lives in Berlin.", ["home"])]
    found = client.agents.passages.search(agent.id, query="where does Ana live?")
    assert [r.content for r in found.results] == ["Ana lives in Berlin."]
    client.agents.passages.delete(new["id"], agent_id=agent.id)  # the passage goes with its history
    history = httpx.get(
        f"{server.url}/v1/agents/{agent.id}/archival-memory/{old.id}/history",
        headers={"Authorization": f"Bearer {ADMIN}"},
    )
    assert history.status_code == 404


@pytest.fixture
def agent_server(tmp_path: Path) -> Iterator[str]:
    with served_in_process(tmp_path / "home") as url:
        yield url


def test_messages_create_returns_a_letta_response(agent_server: str) -> None:
    from tests.scripted_llm import SCRIPTED, ToolCall, Turn, say

    SCRIPTED.reset()
    SCRIPTED.script = [
        Turn(
            content="The user shared a preference; I should save it.",
            calls=[ToolCall("archival_memory_insert", {"content": "User likes green tea"})],
        ),
        say("Noted: you like green tea."),
    ]
    try:
        with Letta(base_url=agent_server, _strict_response_validation=True) as letta:
            agent = letta.agents.create(name="talker", model="scripted/agent", memory_blocks=QUICKSTART_BLOCKS)
            response = letta.agents.messages.create(
                agent.id, messages=[{"role": "user", "content": [{"type": "text", "text": "I like green tea"}]}]
            )
            kinds = [m.message_type for m in response.messages]
            # send_message shows as the assistant message it sent, as Letta shows it
            assert kinds == ["reasoning_message", "tool_call_message", "tool_return_message", "assistant_message"]
            reasoning, call, result = response.messages[:3]
            assert reasoning.reasoning.startswith("The user shared a preference")  # type: ignore[union-attr]
            assert call.tool_call.name == "archival_memory_insert"  # type: ignore[union-attr]
            assert (reasoning.otid or "")[-1] == "0" and (call.otid or "")[-1] == "1"  # their index in the step
            assert result.status == "success" and result.tool_call_id == call.tool_call.tool_call_id  # type: ignore
            assert response.messages[-1].content == "Noted: you like green tea."  # type: ignore[union-attr]
            assert response.stop_reason.stop_reason == "end_turn" and response.usage.step_count == 2
            assert (
                letta.agents.passages.search(agent.id, query="green tea").results[0].content == "User likes green tea"
            )
            SCRIPTED.script = [say("Hello again.")]
            again = letta.agents.messages.create(agent.id, input="hi")
            assert [m.message_type for m in again.messages][-1] == "assistant_message"
            listed = list(letta.agents.messages.list(agent.id, order="asc", limit=2))
            said = [(m.message_type, getattr(m, "content", None)) for m in listed]
            assert said.pop(0)[0] == "system_message"
            assert said == [  # the tool call listed from the store as its call and its return
                ("user_message", "I like green tea"),
                ("tool_call_message", None),
                ("tool_return_message", None),
                ("assistant_message", "Noted: you like green tea."),
                ("user_message", "hi"),
                ("assistant_message", "Hello again."),
            ]
            newest = letta.agents.messages.list(agent.id, limit=1).items
            assert newest[0].content == "Hello again."  # type: ignore[union-attr]
    finally:
        SCRIPTED.reset()


def test_a_memory_only_agent_records_messages(client: Letta) -> None:
    agent = client.agents.create(name="recorder")
    response = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "remember the milk"}])
    assert [(m.message_type, m.content) for m in response.messages] == [("user_message", "remember the milk")]  # type: ignore
    assert response.stop_reason.stop_reason == "end_turn"
    assert [m.id for m in client.agents.messages.list(agent.id)] == ["0", response.messages[0].id]


def test_export_file_gives_memvecs_export(client: Letta) -> None:
    agent = client.agents.create(name="exported", memory_blocks=QUICKSTART_BLOCKS)
    client.agents.passages.create(agent.id, text="kept in the export")
    exported = json.loads(client.agents.export_file(agent.id))
    assert exported["format"] == "memvec-agent-export" and exported["agent"]["name"] == "exported"
    assert [p["text"] for p in exported["passages"]] == ["kept in the export"]


def test_shared_blocks_through_the_client(client: Letta) -> None:
    first, second = (client.agents.create(name=name, memory_blocks=QUICKSTART_BLOCKS) for name in ("crew-a", "crew-b"))
    block = client.blocks.create(label="team", value="Project: apollo", limit=500, description="the crew's plan")
    assert block.id.startswith("block-") and block.label == "team" and block.limit == 500
    client.agents.blocks.attach(block.id, agent_id=first.id)
    state = client.agents.blocks.attach(block.id, agent_id=second.id)
    assert block.id in [b.id for b in state.memory.blocks]
    client.agents.blocks.update("team", agent_id=first.id, value="Project: gemini")  # through one holder
    assert client.agents.blocks.retrieve("team", agent_id=second.id).value == "Project: gemini"
    assert client.blocks.retrieve(block.id).value == "Project: gemini"
    assert [b.id for b in client.blocks.list(label="team")] == [block.id]
    assert [a.id for a in client.blocks.agents.list(block.id)] == [first.id, second.id]
    assert client.blocks.update(block.id, value="Project: hermes").value == "Project: hermes"
    third = client.agents.create(name="crew-c", block_ids=[block.id])  # attached on create, beside the defaults
    assert sorted(str(b.label) for b in third.memory.blocks) == ["human", "persona", "team"]
    assert client.agents.blocks.retrieve("team", agent_id=third.id).value == "Project: hermes"
    with pytest.raises(letta_client.BadRequestError, match="label"):
        client.agents.create(name="crew-d", block_ids=[block.id], memory_blocks=[{"label": "team", "value": "x"}])
    assert [a.name for a in client.agents.list(name="crew-d")] == []  # nothing written
    assert [a.name for a in client.agents.list(query_text="CREW-")] == ["crew-a", "crew-b", "crew-c"]
    client.agents.delete(third.id)
    assert "team" not in [b.label for b in client.agents.blocks.detach(block.id, agent_id=first.id).memory.blocks]
    assert client.agents.blocks.retrieve("team", agent_id=second.id).value == "Project: hermes"
    client.blocks.delete(block.id)
    assert "team" not in [b.label for b in client.agents.blocks.list(agent_id=second.id)]
    with pytest.raises(letta_client.NotFoundError):
        client.blocks.retrieve(block.id)


def test_embedding_config_and_block_limits_as_letta_shows_them(client: Letta) -> None:
    bare = client.agents.create(name="no embedding")
    assert bare.embedding_config is None and bare.embedding is None  # Letta: an agent without one
    configured = client.agents.create(name="configured", extra_body={"embedding_config": {"handle": "openai/x"}})
    assert configured.embedding == "openai/x" and configured.embedding_config is not None
    [plain] = client.agents.passages.create(bare.id, text="found without an embedding asked for")
    [vector] = client.agents.passages.create(configured.id, text="stored with its vector shown")
    assert plain.embedding is None and vector.embedding is not None and len(vector.embedding) == 64  # hash:64
    assert [p.content for p in client.agents.passages.search(bare.id, query="found").results] == [
        "found without an embedding asked for"
    ]
    assert {b.label: b.limit for b in bare.memory.blocks} == {"persona": 2_000, "human": 2_000}
    assert client.blocks.create(label="notes", value="x").limit == 100_000  # Letta's default
    with pytest.raises(letta_client.UnprocessableEntityError):
        client.blocks.create(label="huge", value="x", limit=100_001)


def test_a_route_memvec_does_not_serve_says_so_once(server: Server) -> None:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    for method, path in (("GET", "/v1/identities"), ("DELETE", "/v1/templates/someone")):
        response = httpx.request(method, f"{server.url}{path}", headers=auth)
        assert response.status_code == 501 and response.headers["x-should-retry"] == "false", response.text
        assert response.json()["error"] == "not_served" and f"{method} {path}" in response.json()["detail"]
    assert httpx.get(f"{server.url}/v1/identities").status_code == 401  # no key: no word about routes
    assert httpx.get(f"{server.url}/v1/agents/nobody", headers=auth).json()["error"] == "not_found"
    assert httpx.get(f"{server.url}/v1/agents/..%2F..%2Fetc", headers=auth).status_code == 404  # not a route's shape
    sent: list[httpx.Request] = []
    counted = httpx.Client(event_hooks={"request": [sent.append]})
    with (
        Letta(base_url=server.url, api_key=ADMIN, http_client=counted) as letta,
        pytest.raises(letta_client.APIStatusError) as raised,
    ):
        letta.get("/v1/identities", cast_to=object)
    assert raised.value.status_code == 501 and len(sent) == 1  # the client's own retries do not resend it


def test_models_lists_what_the_agents_use_and_the_homes_embedding(client: Letta) -> None:
    client.agents.create(name="modelled", model="openai/gpt-4o-mini", context_window_limit=16_000)
    client.agents.create(name="modelled again", model="openai/gpt-4o-mini")
    listed = [m for m in client.models.list() if m.handle == "openai/gpt-4o-mini"]
    assert len(listed) == 1 and listed[0].model == "gpt-4o-mini" and listed[0].context_window >= 16_000
    assert listed[0].api_model_endpoint_type == listed[0].provider_type == "openai"
    [embedding] = client.models.embeddings.list()
    assert (embedding.embedding_model, embedding.embedding_dim) == ("hash:64", 64)


def test_reset_messages_forgets_the_conversation_and_keeps_the_rest(client: Letta) -> None:
    agent = client.agents.create(name="resettable", memory_blocks=QUICKSTART_BLOCKS)  # no model: sends are recorded
    client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "my locker code is 4471"}])
    client.agents.passages.create(agent.id, text="archival notes stay")
    assert len(client.agents.messages.list(agent.id).items) == 2  # the system message, then the one sent
    client.agents.messages.reset(agent.id, add_default_initial_messages=False)
    assert [m.message_type for m in client.agents.messages.list(agent.id).items] == ["system_message"]
    assert [p.text for p in client.agents.passages.list(agent.id)] == ["archival notes stay"]
    assert client.agents.retrieve(agent.id).message_ids == []
    again = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hello again"}])
    assert [m.content for m in again.messages] == ["hello again"]  # type: ignore[union-attr]


def test_tags_lists_the_tags_of_the_agents_a_key_sees(server: Server, client: Letta) -> None:
    client.agents.create(name="tagged one", tags=["zz-prod", "zz-team"])
    client.agents.create(name="tagged two", tags=["zz-dev", "zz-team"])
    mine = [t for t in client.tags.list(limit=1000) if t.startswith("zz-")]
    assert mine == sorted(set(mine)) and {"zz-prod", "zz-team", "zz-dev"} <= set(mine)
    assert client.tags.list(query_text="ZZ-PR") == ["zz-prod"] and client.tags.list(name="zz-dev") == ["zz-dev"]
    assert client.tags.list(after="zz-dev", limit=1) == ["zz-prod"]
    assert client.tags.list(order="desc", before="zz-dev", limit=1000)[-1] != "zz-dev"
    with Letta(base_url=server.url, api_key=SCOPED) as scoped:  # only the tags of its own agents
        assert not {"zz-prod", "zz-team", "zz-dev"} & set(scoped.tags.list(limit=1000))


def test_passages_search_across_the_agents_a_key_can_see(server: Server, client: Letta) -> None:
    bees = client.agents.create(name="keeper", embedding="openai/text-embedding-3-small")
    other = client.agents.create(name="gardener")
    client.agents.passages.create(bees.id, text="Ana keeps bees on the roof in Lisbon.")
    client.agents.passages.create(other.id, text="Rui grows tomatoes in the garden.")
    one = client.passages.search(query="bees on the roof", agent_id=bees.id)
    assert [(hit.passage.text, hit.metadata) for hit in one] == [
        ("Ana keeps bees on the roof in Lisbon.", {"agent_id": bees.id})
    ]
    both = client.passages.search(query="tomatoes in the garden")
    assert both[0].passage.text == "Rui grows tomatoes in the garden." and both[0].metadata == {"agent_id": other.id}
    assert {hit.metadata["agent_id"] for hit in both} >= {bees.id, other.id}  # type: ignore[index]
    with Letta(base_url=server.url, api_key=SCOPED) as scoped:
        assert scoped.passages.search(query="tomatoes in the garden") == []  # its agent has no passages
        with pytest.raises(letta_client.NotFoundError):
            scoped.passages.search(query="bees", agent_id=bees.id)
    with pytest.raises(letta_client.BadRequestError, match="archives"):
        client.passages.search(query="bees", archive_id="archive-1")
    client.agents.delete(bees.id)
    client.agents.delete(other.id)


def test_an_agent_starts_with_its_initial_message_sequence(client: Letta) -> None:
    opening: list[MessageCreateParam] = [
        {"role": "assistant", "content": "Hello, how are you?"},
        {"role": "user", "content": "I'm good, and you?"},
    ]
    agent = client.agents.create(name="opener", initial_message_sequence=opening)
    listed = list(client.agents.messages.list(agent.id, order="asc"))
    assert listed[0].message_type == "system_message"
    assert [(m.message_type, m.content) for m in listed[1:]] == [  # type: ignore[union-attr]
        ("assistant_message", "Hello, how are you?"),
        ("user_message", "I'm good, and you?"),
    ]
    assert client.agents.retrieve(agent.id).message_ids == [m.id for m in listed[1:]]  # in its context
    with pytest.raises(letta_client.UnprocessableEntityError):
        client.agents.create(name="no-opener", initial_message_sequence=[{"role": "user", "content": ""}])
    assert [a.name for a in client.agents.list(name="no-opener")] == []
    client.agents.delete(agent.id)


def test_messages_list_as_letta_does_the_system_message_first_and_the_newest_in_time_order(client: Letta) -> None:
    agent = client.agents.create(name="lister", memory_blocks=QUICKSTART_BLOCKS)  # no model: sends are recorded
    for text in ("one", "two", "three"):
        client.agents.messages.create(agent.id, messages=[{"role": "user", "content": text}])
    everything = client.agents.messages.list(agent.id).items
    assert (everything[0].message_type, everything[0].id) == ("system_message", "0")
    assert "### Core memory" in everything[0].content  # type: ignore[union-attr]
    newest = client.agents.messages.list(agent.id, limit=2).items  # the newest two, oldest first (Letta's desc)
    assert [m.content for m in newest] == ["two", "three"]  # type: ignore[union-attr]
    assert [m.content for m in client.agents.messages.list(agent.id, after="0").items] == ["one", "two", "three"]  # type: ignore[union-attr]
    assert client.agents.messages.list(agent.id, before=newest[0].id, limit=1).items[0].content == "one"  # type: ignore[union-attr]
    assert client.agents.messages.list(agent.id, order="asc", limit=2).items[0].id == "0"
