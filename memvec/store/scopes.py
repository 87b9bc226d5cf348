"""Which records a read may see in the SQL stores: ids by filter, by expiry, by near key, and the
span of record times (what a period in a query can narrow)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memvec.store.base import Ids
from memvec.store.rows import CURRENT, filter_sql, format_time, parse_time
from memvec.types import Clock, SearchFilters, Tier

CHUNK = 500  # ids per IN list: well under SQLite's variable limit


def marks(n: int) -> str:
    return ",".join("?" * n)


class _SQL(Protocol):
    clock: Clock

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def _query_values(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def filter_ids(self, agent: str, tier: Tier, filters: SearchFilters, *, all_versions: bool = False) -> Ids: ...


class ScopeStore:
    """The scope-reading methods of `SQLStore` (a mixin over its plumbing)."""

    def expired_ids(
        self: _SQL, agent: str, tier: Tier, now: datetime, created_before: datetime | None = None
    ) -> list[int]:
        """Records past their expires_at at `now`, or (a tier's retention) created before `created_before`."""
        rows = self._query(
            "SELECT id FROM records WHERE agent = ? AND tier = ? AND expires_at <= ?",
            (agent, tier.value, format_time(now)),
        )
        if created_before is not None:
            rows += self._query(
                "SELECT id FROM records WHERE agent = ? AND tier = ? AND created_at < ?",
                (agent, tier.value, format_time(created_before)),
            )
        return sorted({int(r["id"]) for r in rows})

    def filter_ids(self: _SQL, agent: str, tier: Tier, filters: SearchFilters, *, all_versions: bool = False) -> Ids:
        """Ids passing `filters`: of the versions valid now (or at `filters.as_of`), or of all of them."""
        where, params = filter_sql(filters, now=None if all_versions else self.clock())
        ids = self._query_values(
            f"SELECT id FROM records WHERE agent = ? AND tier = ?{where}", [agent, tier.value, *params]
        )
        return np.array(ids, dtype=np.int64)

    def ids(self: _SQL, agent: str, tier: Tier) -> Ids:
        return self.filter_ids(agent, tier, SearchFilters(), all_versions=True)

    def near_key_ids(self: _SQL, agent: str, tier: Tier, keys: Sequence[str], now: datetime) -> dict[str, int]:
        found: dict[str, int] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), CHUNK):
            chunk = unique[start : start + CHUNK]
            rows = self._query(
                f"SELECT near_key, MIN(id) AS id FROM records WHERE agent = ? AND tier = ? "
                f"AND near_key IN ({marks(len(chunk))}) AND {CURRENT} GROUP BY near_key",
                [agent, tier.value, *chunk, format_time(now)],
            )
            found.update({r["near_key"]: int(r["id"]) for r in rows})
        return found

    def count(self: _SQL, agent: str, tier: Tier) -> int:
        rows = self._query("SELECT COUNT(*) AS n FROM records WHERE agent = ? AND tier = ?", (agent, tier.value))
        return int(rows[0]["n"])

    def texts(self: _SQL, agent: str, tier: Tier, filters: SearchFilters | None = None) -> Iterator[tuple[int, str]]:
        where, params = filter_sql(filters, now=self.clock())
        # a fixed order whichever index the planner picks (the token baseline's ties at its cut depend on
        # it): session then id, what records_by_session gave before another index could serve this query
        rows = self._query(
            f"SELECT id, text FROM records WHERE agent = ? AND tier = ?{where} ORDER BY session_id, id",
            [agent, tier.value, *params],
        )
        return ((int(r["id"]), str(r["text"])) for r in rows)

    def time_span(self: _SQL, agent: str, tier: Tier) -> tuple[datetime, datetime] | None:
        """The earliest and latest `created_at` of the tier's records, every version (None: no record);
        two reads of records_by_time_and_validity's ends."""
        # two subqueries: SQLite reads an index's end for a lone MIN or MAX, and scans for both at once
        one = "FROM records WHERE agent = ? AND tier = ?"
        rows = self._query(
            f"SELECT (SELECT MIN(created_at) {one}) AS first, (SELECT MAX(created_at) {one}) AS last",
            (agent, tier.value, agent, tier.value),
        )
        if not rows or rows[0]["first"] is None:
            return None
        return parse_time(rows[0]["first"]), parse_time(rows[0]["last"])
