"""Versions of a passage in the SQL stores: the chain of versions, and which are not current."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memvec.store.base import Ids
from memvec.store.rows import CURRENT, format_time, parse_time
from memvec.types import Record, Tier


class _SQL(Protocol):
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def get(self, agent: str, ids: Sequence[int]) -> list[Record]: ...


class VersionStore:
    """The version-reading methods of `SQLStore` (a mixin over its plumbing)."""

    def versions(self: _SQL, agent: str, record_id: int) -> list[Record]:
        """Every version of the passage `record_id` belongs to, oldest first (empty: no such record)."""
        chain = self.get(agent, [record_id])
        while chain and chain[0].supersedes is not None and (before := self.get(agent, [chain[0].supersedes])):
            chain.insert(0, before[0])
        while chain and chain[-1].superseded_by is not None and (after := self.get(agent, [chain[-1].superseded_by])):
            chain.append(after[0])
        return chain

    def next_end(self: _SQL, agent: str, tier: Tier, now: datetime) -> datetime | None:
        """The earliest `valid_to` still ahead of `now` (when the set of current versions next changes)."""
        rows = self._query(
            "SELECT MIN(valid_to) AS at FROM records WHERE agent = ? AND tier = ? AND valid_to > ?",
            (agent, tier.value, format_time(now)),
        )
        return parse_time(rows[0]["at"]) if rows and rows[0]["at"] else None

    def closed_ids(self: _SQL, agent: str, tier: Tier, now: datetime) -> Ids:
        """Versions that are not current at `now` (superseded or ended): what a plain search leaves out."""
        rows = self._query(
            f"SELECT id FROM records WHERE agent = ? AND tier = ? AND valid_to IS NOT NULL AND NOT {CURRENT}",
            (agent, tier.value, format_time(now)),
        )
        return np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
