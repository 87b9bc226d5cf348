"""`Memory`'s agent methods: settings, state, create and delete, export and import."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvec.engine.engine import Engine
from memvec.engine.transfer import export_agent, import_agents
from memvec.errors import AgentExistsError, InvalidInputError, NotFoundError
from memvec.exchange.export import AgentExport, ImportReport
from memvec.memory.names import validate_agent, validate_display_name
from memvec.store.base import Store
from memvec.store.identities import is_agent_id, new_agent_id
from memvec.tiers.conversations import Thread
from memvec.tiers.core import CoreMemory
from memvec.tiers.shared import SharedBlocks
from memvec.types import (
    AGENT_PATTERN,
    EARLIEST,
    AgentIdentity,
    AgentSettings,
    AgentState,
    CoreBlock,
    SearchFilters,
    Tier,
)


class AgentMethods:
    """A mixin of `Memory` (its store and engine)."""

    _store: Store
    _engine: Engine
    model_id: str

    def agents(self) -> list[str]:
        """Every agent with settings, core blocks or records in this home."""
        return self._store.agents()

    def own_blocks(self, label: str | None = None) -> list[tuple[str, CoreBlock]]:
        """(agent, block) for every agent's own blocks, not the shared ones (one label's when given)."""
        return self._store.own_blocks(label)

    def has_agent(self, agent: str) -> bool:
        """Whether the agent exists: it has settings, core blocks or records (the one definition)."""
        return self._store.has_agent(validate_agent(agent))

    def get_agent(self, agent: str) -> tuple[AgentSettings, AgentState]:
        """Its settings and conversation state; an agent written only through its tiers or blocks
        (no settings yet) has the defaults. NotFoundError when it does not exist."""
        name = validate_agent(agent)
        found = self._store.get_agent(name)
        if found is not None:
            return found
        if self._store.has_agent(name):
            return AgentSettings(name=name), AgentState()
        raise NotFoundError(f"agent {name!r} not found")

    def create_agent(
        self,
        settings: AgentSettings,
        *,
        blocks: Sequence[CoreBlock] = (),
        shared_block_ids: Sequence[str] = (),
        exist_ok: bool = False,
        actor: str = "python",
    ) -> AgentSettings:
        """Create an agent with `blocks` and the shared blocks `shared_block_ids` (with neither:
        persona and human; with shared blocks only, the defaults their labels do not cover). An
        existing one raises AgentExistsError, or with `exist_ok` gets these settings (its state and
        blocks kept, the default blocks added if missing)."""
        name = validate_agent(settings.name)
        if not exist_ok and self._store.has_agent(name):
            raise AgentExistsError(f"agent {name!r} already exists")
        shared = SharedBlocks(self._store, actor=actor)
        labels = [b.label for b in blocks] + [shared.get(i).label for i in shared_block_ids]
        if len(set(labels)) < len(labels):
            raise InvalidInputError(f"two of the agent's blocks have one label: {sorted(labels)}")
        self._store.put_agent(settings, AgentState() if self._store.get_agent(name) is None else None)
        core = CoreMemory(self._store, name, actor=actor)
        for block_id in shared_block_ids:
            shared.attach(name, block_id)
        for block in blocks:
            core.put(block)
        if not blocks:
            core.ensure_defaults()
        return settings

    def update_agent(self, settings: AgentSettings, state: AgentState | None = None) -> None:
        """Write an existing agent's settings (and its conversation state, when given)."""
        self.get_agent(settings.name)
        self._store.put_agent(settings, state)

    def update_agent_state(self, settings: AgentSettings, state: AgentState) -> None:
        """Write the agent's conversation state only: its settings stay as they are in the store,
        whatever changed them since `settings` were read (an agent with no settings yet gets these)."""
        Thread(self._store, validate_agent(settings.name)).write(settings, state)

    def delete_agent(self, agent: str) -> int:
        """Delete an agent, its blocks and all its records; returns how many records went."""
        deleted = self._store.delete_agent(validate_agent(agent))
        self._store.checkpoint()
        for tier in Tier:
            self._engine.tier_index(agent, tier).save()  # applies the deletions from the change log
        return len(deleted)

    def reset_messages(self, agent: str) -> int:
        """Forget every message of the agent (its recall tier, tombstones logged as for `forget`) and
        start its conversation afresh: nothing in context, no summary (Letta's reset-messages).
        Returns how many messages went; its blocks and archival memory stay."""
        settings, state = self.get_agent(agent)
        handle = validate_agent(agent)
        gone = self._engine.delete_matching(handle, [Tier.RECALL], SearchFilters(start=EARLIEST), ())
        self._store.put_agent(settings, state.model_copy(update={"in_context": [], "summary": ""}))
        return gone

    # -- identities: Letta's ids and display names (memvec.types.AgentIdentity) ---------------
    def agent_identity(self, agent: str) -> AgentIdentity:
        return self._store.identity(validate_agent(agent))

    def agent_identities(self) -> dict[str, AgentIdentity]:
        """Every agent's identity, by handle."""
        return self._store.identities()

    def find_agent(self, ref: str) -> str | None:
        """The handle `ref` names. A ref shaped as a Letta id is looked up (None: no agent has that id
        or that handle); any other ref is a handle itself, read by nobody here: whoever uses it finds
        out whether that agent exists, so a path by handle costs no read more than it did."""
        if not is_agent_id(ref):
            return ref
        handle = self._store.handle_of(ref)
        if handle is None and self._store.has_agent(ref):  # its own id, not asked for yet
            handle = ref
        return handle

    def claim_agent(self, name: str | None, *, name_as_handle_only: bool = False) -> AgentIdentity:
        """The identity of an agent about to be created over HTTP with display name `name`: its name
        as handle when that is a free handle, else (unless `name_as_handle_only`: AgentExistsError)
        a fresh id as both. Claimed in one write, so two creates never share a handle."""
        if name is not None and re.fullmatch(AGENT_PATTERN, name) and not self._store.has_agent(name):
            named = AgentIdentity(handle=name, id=new_agent_id(name), name=name)
            if self._store.claim_identity(named):
                return named
        if name_as_handle_only:
            raise AgentExistsError(f"agent {name!r} already exists")
        fresh = new_agent_id()
        identity = AgentIdentity(handle=fresh, id=fresh, name=name or fresh)
        if not self._store.claim_identity(identity):  # a uuid4 taken: not in this universe
            raise AgentExistsError(f"agent {fresh!r} already exists")
        return identity

    def free_handle(self, name: str) -> str:
        """The handle an agent with display name `name` would get now (as `claim_agent` gives it),
        claiming nothing: the name where it is a free handle, else a fresh id."""
        free = re.fullmatch(AGENT_PATTERN, name) and not self._store.has_agent(name)
        return name if free and not self._store.handle_taken(name) else new_agent_id()

    def rename_agent(self, agent: str, name: str) -> AgentIdentity:
        """Give the agent a new display name (its id and handle stay)."""
        handle = validate_agent(agent)
        self.get_agent(handle)
        self._store.rename_agent(handle, validate_display_name(name))
        return self._store.identity(handle)

    def export_agent(self, agent: str, *, with_embeddings: bool = True) -> AgentExport:
        """The agent, its blocks and all its passages and messages (with their embeddings)."""
        settings, state = self.get_agent(agent)
        return export_agent(self._engine, settings, state, model_id=self.model_id, with_embeddings=with_embeddings)

    def import_agents(self, docs: Sequence[tuple[AgentExport, str]]) -> list[ImportReport]:
        """Restore exported agents, each under the name given: all of them or none (see `memvec.engine.transfer`)."""
        named = [(doc, validate_agent(name)) for doc, name in docs]
        return import_agents(self._engine, named, model_id=self.model_id)

    def import_agent(self, doc: AgentExport, *, name: str | None = None) -> ImportReport:
        return self.import_agents([(doc, name or doc.agent.name)])[0]

    # -- message requests (a client's retries answered once) ---------------------------------
    def claim_message_request(self, agent: str, key: str, *, fresh: bool) -> tuple[str, str | None]:
        """("claimed", None): run it and then `finish_message_request`; ("running", None): a run of
        the same request is going on; ("done", answer JSON): it was answered. `key` names the request
        (memvec.service.retries); a `fresh` one is a first attempt, run whatever came before."""
        return self._store.claim_request(key, validate_agent(agent), self._store.clock(), fresh=fresh)

    def finish_message_request(self, key: str, answer: str) -> None:
        self._store.finish_request(key, answer)

    def drop_message_request(self, key: str) -> None:
        """The claimed run gave no answer: a retry runs it."""
        self._store.drop_request(key)
