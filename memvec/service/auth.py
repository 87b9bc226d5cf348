"""API keys: `Authorization: Bearer KEY`, optionally scoped to agents.

Keys come from MEMVEC_API_KEYS (comma-separated) and/or a keys file (one key per line; `#` comments).
A key may be scoped: `KEY=agent1|agent2` can only see and touch those agents; a scoped key asking
for another agent gets 404, exactly as if the agent did not exist. An entry whose scope is empty or
names no valid agent (`KEY=`, `KEY=|`, as a template with an unset variable writes) is refused at
start: it must never widen into an unscoped key. A name for people may follow after ` #`
(`KEY=ana # Ana's laptop`): block histories and the memory browser credit the key's edits to it
(`http:Ana's laptop`) instead of the key's hash. With no keys configured the service is open
(meant for 127.0.0.1).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memvec.errors import InvalidInputError
from memvec.types import AGENT_PATTERN

MIN_KEY_CHARS = 8
KEY_NAME = re.compile(r"[\w .'@()-]{1,40}")  # what a key's name may be: shown in histories, one line


@dataclass(frozen=True)
class Principal:
    """Who is calling: None agents means every agent. `key_id` names the key in logs without
    revealing it (the first 8 hex digits of its SHA-256; empty when no keys are configured); `name`,
    the name the keys list gave it, names it in block histories (its key_id where it has none)."""

    agents: frozenset[str] | None = None
    key_id: str = field(default="", compare=False)
    name: str = field(default="", compare=False)

    def may_see(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents

    @property
    def actor(self) -> str:
        who = self.name or self.key_id
        return f"http:{who}" if who else "http"


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

    def principal_of_header(self, authorization: str | None) -> Principal | None:
        """The principal for an `Authorization` header value (`Bearer KEY`), or None."""
        scheme, _, token = (authorization or "").partition(" ")
        return self.principal(token.strip() if scheme.lower() == "bearer" else None)

    @classmethod
    def parse(cls, entries: list[tuple[str, str]]) -> KeyRing:
        """Keys from (where, entry) pairs; `where` names the entry in errors (never the key itself)."""
        keys: dict[str, Principal] = {}
        for where, raw in entries:
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            granted, _, name = entry.partition(" #")  # a key holds no space, a scope no '#': a name may follow
            key, scoped, scope = (part.strip() for part in granted.partition("="))
            principal = Principal(
                _scope(where, scope) if scoped else None,
                key_id=hashlib.sha256(key.encode()).hexdigest()[:8],
                name=_name(where, name.strip()),
            )
            if len(key) < MIN_KEY_CHARS or re.search(r"\s", key):
                raise InvalidInputError(
                    f"{where}: API keys must be at least {MIN_KEY_CHARS} characters long, without spaces"
                )
            if keys.get(key, principal) != principal:
                raise InvalidInputError(f"{where}: this key is listed twice with different scopes")
            keys[key] = principal
        return cls(keys)

    @classmethod
    def from_environment(cls, keys_file: Path | None = None) -> KeyRing:
        """MEMVEC_API_KEYS plus the keys file (`keys_file`, else MEMVEC_API_KEYS_FILE)."""
        entries = [
            (f"MEMVEC_API_KEYS entry {n}", e)
            for n, e in enumerate(os.environ.get("MEMVEC_API_KEYS", "").split(","), start=1)
        ]
        env_file = os.environ.get("MEMVEC_API_KEYS_FILE")
        path = keys_file or (Path(env_file) if env_file else None)
        if path is not None:
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInputError(f"cannot read the keys file {path}: {exc}") from exc
            entries += [(f"{path} line {n}", line) for n, line in enumerate(lines, start=1)]
        return cls.parse(entries)


def _name(where: str, name: str) -> str:
    if name and not KEY_NAME.fullmatch(name):
        raise InvalidInputError(
            f"{where}: a key's name is 1-40 letters, digits, spaces or . ' @ ( ) _ - (it is shown in histories)"
        )
    return name


def _scope(where: str, scope: str) -> frozenset[str]:
    """The agents of a `KEY=a|b` scope; blank parts are ignored, and a scope left empty is an error."""
    agents = frozenset(a.strip() for a in scope.split("|") if a.strip())
    if not agents:
        raise InvalidInputError(
            f"{where}: the key has '=' but no agent after it; a scoped key must name "
            "its agents (KEY=agent1|agent2), an unscoped key has no '='"
        )
    invalid = sorted(a for a in agents if not re.match(AGENT_PATTERN, a))
    if invalid:
        raise InvalidInputError(f"{where}: {', '.join(map(repr, invalid))} is not an agent name")
    return agents
