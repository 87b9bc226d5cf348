"""Core memory: labelled blocks with a character limit, always rendered into the prompt.

Edits are compare-and-set against the store, so two editors never silently overwrite each other;
an edit that would pass the limit, touch a read-only block or miss its target is refused with a
message the agent can act on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memvec.errors import CoreMemoryError, InvalidInputError, NameTakenError, NotFoundError
from memvec.store.base import Store
from memvec.store.blocks import SHARED_OWNER_PREFIX
from memvec.types import BlockChange, CoreBlock

DEFAULT_PROMPT_BLOCK_LIMIT = 2_000  # the persona and human blocks a new agent gets
DEFAULT_BLOCKS = (
    # small on purpose: both are in every prompt; MemGPT's agent edits them to fit
    CoreBlock(label="persona", description="Who the agent is and how it speaks.", limit=DEFAULT_PROMPT_BLOCK_LIMIT),
    CoreBlock(
        label="human",
        description="What the agent knows about the person it talks to.",
        limit=DEFAULT_PROMPT_BLOCK_LIMIT,
    ),
)


class CoreMemory:
    """One agent's blocks: its own, then the shared blocks attached to it (an edit of a shared block
    is made to the one block every holder sees). Every change is recorded in the block's history with
    `actor`: who or what made it (``tool:NAME``, ``http:KEY-ID``, ``cli``, ``import``, ``python``;
    ``... via AGENT`` on a shared block)."""

    def __init__(self, store: Store, agent: str, *, actor: str = "python") -> None:
        self._store = store
        self.agent = agent
        self.actor = actor

    def blocks(self) -> list[CoreBlock]:
        return self._store.blocks(self.agent)

    def shared_ids(self) -> dict[str, str]:
        """The labels of the agent's blocks that are shared blocks, with their ids."""
        return {
            label: owner.removeprefix(SHARED_OWNER_PREFIX)
            for label, owner in self._store.attachments(self.agent).items()
        }

    def get(self, label: str) -> CoreBlock:
        for block in self.blocks():
            if block.label == label:
                return block
        known = ", ".join(b.label for b in self.blocks()) or "none"
        raise NotFoundError(f"agent {self.agent!r} has no core memory block {label!r} (blocks: {known})")

    def _owner(self, label: str) -> str:
        """Whose row the block is: a shared block's owner, else this agent."""
        return self._store.block_owner(self.agent, label)

    def _actor(self, owner: str) -> str:
        return self.actor if owner == self.agent else f"{self.actor} via {self.agent}"

    def put(self, block: CoreBlock) -> CoreBlock:
        """Create a block or replace one whole (value, limit, flags)."""
        owner = self._owner(block.label)
        self._store.put_block(owner, block, actor=self._actor(owner))
        return block

    def change(self, label: str, changes: dict[str, Any]) -> CoreBlock:
        """Change some of the block's fields; a new `label` renames the agent's own block (in its
        history as the old label deleted and the new one created, so each can be undone)."""
        block = CoreBlock.model_validate({**self.get(label).model_dump(), **changes})
        if block.label == label:
            return self.put(block)
        if self._owner(label) != self.agent:
            raise InvalidInputError(
                "a shared block keeps its label (its holders address it by it): renaming is not supported"
            )
        with self._store.transaction():  # the label checked free and taken in one step
            if any(b.label == block.label for b in self.blocks()):
                raise NameTakenError(f"agent {self.agent!r} has a block labelled {block.label!r} already")
            self._store.delete_block(self.agent, label, actor=self.actor)
            self._store.put_block(self.agent, block, actor=self.actor)
        return block

    def delete(self, label: str) -> None:
        """Delete the agent's own block; a shared block is only detached from this agent."""
        self.get(label)
        owner = self._owner(label)
        if owner != self.agent:
            self._store.detach_block(self.agent, owner)
            return
        self._store.delete_block(self.agent, label, actor=self.actor)

    def history(self, label: str | None = None) -> list[BlockChange]:
        """Every change of this agent's blocks (or of one), oldest first, with the block before and
        after; a shared block's history is every holder's changes of it."""
        if label is not None:
            return self._store.block_history(self._owner(label), label)
        changes = self._store.block_history(self.agent)
        for owner in self._store.attachments(self.agent).values():
            changes += self._store.block_history(owner)
        return sorted(changes, key=lambda change: change.seq)

    def forget_history(self, label: str | None = None) -> int:
        """Delete the history of one block (or of all the agent's own blocks; a shared block's only
        when named): the old values go from the store's files too (SQLite's WAL is checkpointed), the
        blocks keep what they hold now, and there is nothing left to undo. Returns how many changes
        were deleted."""
        deleted = self._store.forget_block_history(self._owner(label) if label else self.agent, label)
        self._store.checkpoint()
        return deleted

    def undo(self, label: str) -> CoreBlock | None:
        """Revert the block's latest change not yet undone (repeat to go further back); returns the
        block as it is now (None: the undone change had created it). CoreMemoryError when the block
        was changed since in a way that is not in its history."""
        owner = self._owner(label)
        return self._store.undo_block(owner, label, actor=self._actor(owner))

    def ensure_defaults(self) -> None:
        existing = {b.label for b in self.blocks()}
        for block in DEFAULT_BLOCKS:
            if block.label not in existing:
                self.put(block)

    def append(self, label: str, content: str) -> CoreBlock:
        return self._edit(label, lambda value: f"{value}\n{content}" if value else content, op="append")

    def insert(self, label: str, text: str, *, line: int = -1) -> CoreBlock:
        """Insert `text` as a line before line `line` (0-based; -1: at the end), as Letta's memory_insert."""

        def apply(value: str) -> str:
            lines = value.split("\n") if value else []
            if not -1 <= line <= len(lines):
                raise CoreMemoryError(f"line {line} is outside block {label!r} (0..{len(lines)}, or -1 for the end)")
            lines.insert(len(lines) if line == -1 else line, text)
            return "\n".join(lines)

        return self._edit(label, apply, op="insert")

    def replace(self, label: str, old_content: str, new_content: str) -> CoreBlock:
        def apply(value: str) -> str:
            if not old_content:
                raise CoreMemoryError("old_content must not be empty")
            if old_content not in value:
                raise CoreMemoryError(f"{old_content!r} does not occur in block {label!r}")
            return value.replace(old_content, new_content)

        return self._edit(label, apply, op="replace")

    def rewrite(self, label: str, value: str) -> CoreBlock:
        """Replace a block's whole value (its limit, description and flags kept)."""
        return self._edit(label, lambda _: value, op="rewrite")

    def _edit(self, label: str, change: Callable[[str], str], *, op: str) -> CoreBlock:
        for _ in range(10):
            block = self.get(label)
            if block.read_only:
                raise CoreMemoryError(f"block {label!r} is read-only")
            value = change(block.value)
            if len(value) > block.limit:
                raise CoreMemoryError(
                    f"block {label!r} would hold {len(value)} characters; its limit is {block.limit} "
                    f"({block.limit - len(block.value)} left). Shorten or replace existing content first."
                )
            owner = self._owner(label)
            if self._store.compare_and_set_block(owner, label, block.value, value, actor=self._actor(owner), op=op):
                return block.model_copy(update={"value": value})
        raise CoreMemoryError(f"block {label!r} kept changing under concurrent edits; try again")

    def render(self) -> str:
        """The blocks as they go into a prompt, each with its fill level."""
        parts = []
        for block in self.blocks():
            parts.append(
                f'<{block.label} characters="{len(block.value)}/{block.limit}">\n{block.value}\n</{block.label}>'
            )
        return "\n".join(parts)
