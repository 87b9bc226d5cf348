"""Record id -> row number, for millions of ids without a Python object per id.

A dict of ints costs ~100 bytes per entry (the table plus two int objects); at a million records
per tier that alone would be a tenth of the memory budget. Here most entries live in two sorted
int64 arrays (16 bytes per entry) looked up with ``searchsorted``; new entries go to a small dict
that is merged into the arrays once it grows past a sixteenth of them, so a merge (a sort) is
amortized over many inserts. Removed entries are marked in place and dropped at the next merge.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
_ABSENT = -1


class IdMap:
    def __init__(self, *, recent_limit: int = 1024) -> None:
        """`recent_limit`: entries the dict may hold (or a sixteenth of the arrays, if more)."""
        self._recent_limit = recent_limit
        self._keys: Ids = np.zeros(0, dtype=np.int64)
        self._rows: Ids = np.zeros(0, dtype=np.int64)
        self._removed = 0  # entries of the arrays marked _ABSENT
        self._recent: dict[int, int] = {}
        self._recent_sorted: tuple[Ids, Ids] | None = None  # the dict as sorted arrays, built on lookup

    @classmethod
    def from_arrays(cls, keys: Ids, rows: Ids) -> IdMap:
        mapping = cls()
        order = np.argsort(keys, kind="stable")
        mapping._keys = np.ascontiguousarray(keys[order], dtype=np.int64)
        mapping._rows = np.ascontiguousarray(rows[order], dtype=np.int64)
        if len(keys) and (np.diff(mapping._keys) == 0).any():
            raise ValueError("duplicate record ids")
        return mapping

    def __len__(self) -> int:
        return len(self._keys) - self._removed + len(self._recent)

    def __contains__(self, key: int) -> bool:
        return self.get(key) != _ABSENT

    def _position(self, key: int) -> int:
        """Position of a live `key` in the sorted arrays, or -1."""
        at = int(np.searchsorted(self._keys, key))
        if at < len(self._keys) and self._keys[at] == key and self._rows[at] != _ABSENT:
            return at
        return -1

    def get(self, key: int) -> int:
        """The row of `key`, or -1."""
        row = self._recent.get(key)
        if row is not None:
            return row
        at = self._position(key)
        return int(self._rows[at]) if at >= 0 else _ABSENT

    def set(self, key: int, row: int) -> None:
        at = self._position(key)
        if at >= 0:
            self._rows[at] = row
            return
        self._recent[key] = row
        self._recent_sorted = None
        if len(self._recent) > max(self._recent_limit, len(self._keys) // 16):
            self._merge()

    def pop(self, key: int) -> int:
        """Forget `key`; returns its row, or -1 when it was not there."""
        row = self._recent.pop(key, None)
        if row is not None:
            self._recent_sorted = None
            return row
        at = self._position(key)
        if at < 0:
            return _ABSENT
        row = int(self._rows[at])
        self._rows[at] = _ABSENT
        self._removed += 1
        if self._removed > len(self._keys) // 4:
            self._merge()
        return row

    def rows_for(self, keys: Ids) -> Ids:
        """The row of each key (-1 where absent), vectorized."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.full(len(keys), _ABSENT, dtype=np.int64)
        if len(self._keys):
            at = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            found = self._keys[at] == keys
            out[found] = self._rows[at[found]]
        if self._recent:
            # keys absent from the arrays are common (a record without a session, a neighbour in
            # another tier), so the dict is looked up as arrays too, not key by key
            recent_keys, recent_rows = self._recent_arrays()
            at = np.minimum(np.searchsorted(recent_keys, keys), len(recent_keys) - 1)
            found = (out == _ABSENT) & (recent_keys[at] == keys)
            out[found] = recent_rows[at[found]]
        return out

    def _recent_arrays(self) -> tuple[Ids, Ids]:
        if self._recent_sorted is None:
            keys = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
            rows = np.fromiter(self._recent.values(), dtype=np.int64, count=len(self._recent))
            order = np.argsort(keys)
            self._recent_sorted = (keys[order], rows[order])
        return self._recent_sorted

    def items(self) -> tuple[Ids, Ids]:
        """(keys in ascending order, their rows)."""
        self._merge()
        return self._keys.copy(), self._rows.copy()

    def _merge(self) -> None:
        live = self._rows != _ABSENT
        recent_keys, recent_rows = self._recent_arrays()
        keys = np.concatenate([self._keys[live], recent_keys])
        rows = np.concatenate([self._rows[live], recent_rows])
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], rows[order]
        self._removed = 0
        self._recent = {}
        self._recent_sorted = None
