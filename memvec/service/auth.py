"""API keys: `Authorization: Bearer KEY`, optionally scoped to agents.

Keys come from MEMVEC_API_KEYS (comma-separated) and/or a keys file (one key per line; `#` comments).
A key may be scoped: `KEY=agent1|agent2` can only see and touch those agents; a scoped key asking
for another agent gets 404, exactly as if the agent did not exist. With no keys configured the
service is open (meant for 127.0.0.1).
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from pathlib import Path

from memvec.errors import InvalidInputError


@dataclass(frozen=True)
class Principal:
    """Who is calling: None agents means every agent."""

    agents: frozenset[str] | None = None

    def may_see(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents


@dataclass(frozen=True)
class KeyRing:
    keys: dict[str, Principal]

    @property
    def open(self) -> bool:
        return not self.keys

    def principal(self, presented: str | None) -> Principal | None:
        """The principal for a presented key (constant-time compare), or None when it is not valid."""
        if self.open:
            return Principal()
        if not presented:
            return None
        for key, principal in self.keys.items():
            if hmac.compare_digest(key.encode(), presented.encode()):
                return principal
        return None

    @classmethod
    def parse(cls, entries: list[str]) -> KeyRing:
        keys: dict[str, Principal] = {}
        for entry in (e.strip() for e in entries):
            if not entry or entry.startswith("#"):
                continue
            key, _, scope = entry.partition("=")
            if len(key) < 8:
                raise InvalidInputError("API keys must be at least 8 characters long")
            agents = frozenset(a for a in scope.split("|") if a) if scope else None
            keys[key] = Principal(agents)
        return cls(keys)

    @classmethod
    def from_environment(cls, keys_file: Path | None = None) -> KeyRing:
        entries = [e for e in os.environ.get("MEMVEC_API_KEYS", "").split(",") if e.strip()]
        env_file = os.environ.get("MEMVEC_API_KEYS_FILE")
        path = keys_file or (Path(env_file) if env_file else None)
        if path is not None:
            entries += path.read_text().splitlines()
        return cls.parse(entries)
