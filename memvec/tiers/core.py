"""Core memory: labelled blocks with a character limit, always rendered into the prompt.

Edits are compare-and-set against the store, so two editors never silently overwrite each other;
an edit that would pass the limit, touch a read-only block or miss its target is refused with a
message the agent can act on.
"""

from __future__ import annotations

from collections.abc import Callable

from memvec.errors import CoreMemoryError, NotFoundError
from memvec.store.base import Store
from memvec.types import CoreBlock

DEFAULT_BLOCKS = (
    CoreBlock(label="persona", description="Who the agent is and how it speaks."),
    CoreBlock(label="human", description="What the agent knows about the person it talks to."),
)


class CoreMemory:
    def __init__(self, store: Store, agent: str) -> None:
        self._store = store
        self.agent = agent

    def blocks(self) -> list[CoreBlock]:
        return self._store.blocks(self.agent)

    def get(self, label: str) -> CoreBlock:
        for block in self.blocks():
            if block.label == label:
                return block
        known = ", ".join(b.label for b in self.blocks()) or "none"
        raise NotFoundError(f"agent {self.agent!r} has no core memory block {label!r} (blocks: {known})")

    def put(self, block: CoreBlock) -> CoreBlock:
        """Create a block or replace one whole (value, limit, flags)."""
        self._store.put_block(self.agent, block)
        return block

    def ensure_defaults(self) -> None:
        existing = {b.label for b in self.blocks()}
        for block in DEFAULT_BLOCKS:
            if block.label not in existing:
                self.put(block)

    def append(self, label: str, content: str) -> CoreBlock:
        return self._edit(label, lambda value: f"{value}\n{content}" if value else content)

    def replace(self, label: str, old_content: str, new_content: str) -> CoreBlock:
        def apply(value: str) -> str:
            if not old_content:
                raise CoreMemoryError("old_content must not be empty")
            if old_content not in value:
                raise CoreMemoryError(f"{old_content!r} does not occur in block {label!r}")
            return value.replace(old_content, new_content)

        return self._edit(label, apply)

    def rewrite(self, label: str, value: str) -> CoreBlock:
        """Replace a block's whole value (its limit, description and flags kept)."""
        return self._edit(label, lambda _: value)

    def _edit(self, label: str, change: Callable[[str], str]) -> CoreBlock:
        for _ in range(10):
            block = self.get(label)
            if block.read_only:
                raise CoreMemoryError(f"block {label!r} is read-only")
            value = change(block.value)
            if len(value) > block.limit:
                raise CoreMemoryError(
                    f"block {label!r} would hold {len(value)} characters; its limit is {block.limit} "
                    f"({block.limit - len(block.value)} left). Shorten or replace existing content first.")
            if self._store.compare_and_set_block(self.agent, label, block.value, value):
                return block.model_copy(update={"value": value})
        raise CoreMemoryError(f"block {label!r} kept changing under concurrent edits; try again")

    def render(self) -> str:
        """The blocks as they go into a prompt, each with its fill level."""
        parts = []
        for block in self.blocks():
            parts.append(f'<{block.label} characters="{len(block.value)}/{block.limit}">\n'
                         f"{block.value}\n</{block.label}>")
        return "\n".join(parts)
