"""What an agent's model sees (Letta's `recompile` and `preview-raw-payload`): its system prompt,
rebuilt from core memory and its files at every model call, and the next request in full."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from memvec.agent.preview import raw_payload, system_prompt
from memvec.service.deps import Caller, ScopedAgent, Service, api_router, visible_agent
from memvec.service.schemas import Lenient, MessageIn

router = api_router(tags=["agents"])


class PreviewIn(Lenient):
    messages: list[MessageIn] = Field(default_factory=list, max_length=100, description="messages to add, not stored")


@router.post("/v1/agents/{agent_id}/recompile", response_model=str)
def recompile(agent_id: ScopedAgent, principal: Caller, service: Service) -> str:
    """The agent's system prompt as its next model call gets it. memvec builds it afresh at every call,
    so there is nothing to recompile: this shows it."""
    visible_agent(agent_id, principal, service)
    return system_prompt(service.memory, agent_id)


@router.post("/v1/agents/{agent_id}/messages/preview-raw-payload", response_model=dict[str, Any])
def preview_raw_payload(
    agent_id: ScopedAgent, principal: Caller, service: Service, body: PreviewIn | None = None
) -> dict[str, Any]:
    """The request the agent's next model call would make with these messages added (nothing is stored
    and nothing is sent): `model`, `messages` (the system prompt first), `tools`."""
    visible_agent(agent_id, principal, service)
    given = body.messages if body is not None else []
    added = [{"role": "user" if m.role == "tool" else m.role, "content": m.text()} for m in given]
    return raw_payload(service.memory, agent_id, added)
