"""Shared core blocks: a block made once and attached to several agents (Letta's `/v1/blocks`), so a
team of agents shares what one of them writes. Every holder renders the same block; an edit through
any holder (a tool call, the API) changes it for all, and its history and undo are the block's own."""

from __future__ import annotations

import re
import uuid
from typing import Any

from pydantic import Field

from memvec.errors import InvalidInputError, NotFoundError
from memvec.store.base import Store
from memvec.store.blocks import SHARED_OWNER_PREFIX
from memvec.types import SHARED_BLOCK_ID_PATTERN, CoreBlock

_SHARED_ID = re.compile(SHARED_BLOCK_ID_PATTERN)


class SharedBlock(CoreBlock):
    """A shared block with its id and the agents it is attached to."""

    id: str
    agents: list[str] = Field(default_factory=list)


def owner_of(block_id: str) -> str:
    if not _SHARED_ID.fullmatch(block_id):
        raise NotFoundError(f"no shared block {block_id!r} (shared block ids look like block-<32 hex digits>)")
    return SHARED_OWNER_PREFIX + block_id


class SharedBlocks:
    """The home's shared blocks; `actor` is recorded with every change made through this object."""

    def __init__(self, store: Store, *, actor: str = "python") -> None:
        self._store = store
        self.actor = actor

    def create(self, block: CoreBlock) -> SharedBlock:
        block_id = f"block-{uuid.uuid4().hex}"
        self._store.put_block(owner_of(block_id), block, actor=self.actor)
        return SharedBlock(**block.model_dump(), id=block_id)

    def list(self, *, label: str | None = None) -> list[SharedBlock]:
        """Every shared block (of one label), oldest first, with its holders."""
        return [
            self._shared(owner, block)
            for owner, block in self._store.shared_blocks()
            if label is None or block.label == label
        ]

    def get(self, block_id: str) -> SharedBlock:
        owner = owner_of(block_id)
        for block in self._store.blocks(owner):  # its owner's one row
            return self._shared(owner, block)
        raise NotFoundError(f"no shared block {block_id!r}")

    def modify(self, block_id: str, changes: dict[str, Any]) -> SharedBlock:
        """Change a shared block's value, limit, description, flags or metadata (not its label:
        its holders address it by that label)."""
        current = self.get(block_id)
        if changes.get("label", current.label) != current.label:
            raise InvalidInputError(
                "a shared block keeps its label (its holders address it by it): renaming is not supported"
            )
        block = CoreBlock.model_validate({**current.model_dump(exclude={"id", "agents"}), **changes})
        self._store.put_block(owner_of(block_id), block, actor=self.actor, op="put")
        return SharedBlock(**block.model_dump(), id=block_id, agents=current.agents)

    def delete(self, block_id: str) -> None:
        """Delete the block, its history, and its attachment to every agent."""
        self.get(block_id)
        self._store.delete_shared_block(owner_of(block_id))

    def attach(self, agent: str, block_id: str) -> bool:
        """Attach the block to `agent` (False: it was already). CoreMemoryError when the agent has a
        block of that label; NotFoundError for an agent that does not exist."""
        if not self._store.has_agent(agent):
            raise NotFoundError(f"agent {agent!r} not found")
        return self._store.attach_block(agent, owner_of(block_id))

    def detach(self, agent: str, block_id: str) -> bool:
        self.get(block_id)
        return self._store.detach_block(agent, owner_of(block_id))

    def _shared(self, owner: str, block: CoreBlock) -> SharedBlock:
        return SharedBlock(
            **block.model_dump(), id=owner.removeprefix(SHARED_OWNER_PREFIX), agents=self._store.block_holders(owner)
        )
