"""`POST /v1/agents/{id}/generate` (Letta's): one completion with the agent's model, through litellm
(the scripted provider), outside the conversation: nothing read from memory, nothing stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from letta_client import Letta

from tests.scripted_llm import ScriptedLLM
from tests.service_helpers import served_in_process


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with served_in_process(tmp_path / "home") as served:
        yield served


def test_generate_answers_with_the_agents_model_and_stores_nothing(url: str, llm: ScriptedLLM) -> None:
    answers = iter(["4", "Hello from the override"])
    llm.summarizer = lambda messages: next(answers)  # a call without tools: what generate makes
    with Letta(base_url=url) as letta:
        agent = letta.agents.create(name="generator", model="scripted/agent")
        made = httpx.post(
            f"{url}/v1/agents/{agent.id}/generate", json={"prompt": "What is 2+2?", "system_prompt": "Be terse."}
        )
        assert made.status_code == 200, made.text
        assert made.json()["content"] == "4" and made.json()["model"] == "scripted/agent"
        assert set(made.json()["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
        assert [(m["role"], m["content"]) for m in llm.summaries[-1]] == [
            ("system", "Be terse."),
            ("user", "What is 2+2?"),
        ]  # no memory, no tools
        other = httpx.post(
            f"{url}/v1/agents/{agent.id}/generate", json={"prompt": "hi", "override_model": "scripted/x"}
        )
        assert other.json()["model"] == "scripted/x" and other.json()["content"] == "Hello from the override"
        stored = [m.message_type for m in letta.agents.messages.list(agent.id).items]
        assert stored == ["system_message"]  # nothing stored


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"prompt": ""}, 422),
        ({"prompt": "  \n\t "}, 422),
        ({"prompt": "hi", "override_model": "invalid/model-that-does-not-exist"}, 404),
    ],
)
def test_generate_refuses_what_it_cannot_answer(url: str, llm: ScriptedLLM, body: dict[str, str], status: int) -> None:
    with Letta(base_url=url) as letta:
        agent = letta.agents.create(name="refuser", model="scripted/agent")
        assert httpx.post(f"{url}/v1/agents/{agent.id}/generate", json=body).status_code == status
        assert httpx.post(
            f"{url}/v1/agents/agent-00000000-0000-4000-8000-000000000000/generate", json=body
        ).status_code in (
            404,
            422,
        )
    assert llm.requests == [] and llm.summaries == []
