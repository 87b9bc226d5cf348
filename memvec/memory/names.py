"""Agent names and display names, checked where they enter the API."""

from __future__ import annotations

from pydantic import TypeAdapter

from memvec.errors import InvalidInputError
from memvec.types import MAX_DISPLAY_NAME_CHARS, AgentName, DisplayName

_agent_name: TypeAdapter[str] = TypeAdapter(AgentName)
_display_name: TypeAdapter[str] = TypeAdapter(DisplayName)


def validate_agent(agent: str) -> str:
    try:
        return _agent_name.validate_python(agent)
    except ValueError as exc:
        raise InvalidInputError(
            f"invalid agent name {agent!r}: 1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit"
        ) from exc


def validate_display_name(name: str) -> str:
    try:
        return _display_name.validate_python(name)
    except ValueError as exc:
        raise InvalidInputError(
            f"invalid display name {name!r}: 1-{MAX_DISPLAY_NAME_CHARS} characters, not only spaces, "
            "no control characters"
        ) from exc
