"""Agent names and display names, checked where they enter the API."""

from __future__ import annotations

from pydantic import TypeAdapter

from memvec.errors import InvalidInputError
from memvec.types import MAX_DISPLAY_NAME_CHARS, AgentName, DisplayName

_agent_name: TypeAdapter[str] = TypeAdapter(AgentName)
_display_name: TypeAdapter[str] = TypeAdapter(DisplayName)


def _checked(adapter: TypeAdapter[str], value: str, what: str, rule: str) -> str:
    try:
        return adapter.validate_python(value)
    except ValueError as exc:
        raise InvalidInputError(f"invalid {what} {value!r}: {rule}") from exc


def validate_agent(agent: str) -> str:
    return _checked(_agent_name, agent, "agent name", "1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit")


def validate_display_name(name: str) -> str:
    rule = f"1-{MAX_DISPLAY_NAME_CHARS} characters, not only spaces, no control characters"
    return _checked(_display_name, name, "display name", rule)
