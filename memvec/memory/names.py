"""Agent names, checked where a name enters the API."""

from __future__ import annotations

from pydantic import TypeAdapter

from memvec.errors import InvalidInputError
from memvec.types import AgentName

_agent_name: TypeAdapter[str] = TypeAdapter(AgentName)


def validate_agent(agent: str) -> str:
    try:
        return _agent_name.validate_python(agent)
    except ValueError as exc:
        raise InvalidInputError(
            f"invalid agent name {agent!r}: 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit"
        ) from exc
