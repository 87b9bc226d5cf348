"""Session-level scores: a record also scores as the mean of its session.

A turn or a chunk is often found through its neighbours: the session (or document) as a whole
matches a question even where the one turn that answers it shares little with it. Per session the
table keeps the sum of its records' vectors and their count, so the mean cosine of a session with
a query is (sum · q) / count, the session's centroid score, and its mean BM25 score is the sum of
its records' non-zero scores over the count. A record without a session is its own session: its
session score is its own score, so a tier that mixes both kinds does not favour either.
Derived like the other index files: built from the store, saved beside them.

Per query only the sessions of the candidates are scored, from the BM25 scores of the records
that hold a query term, so the cost follows the candidates and the posting lists, not the tier.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.index.idmap import IdMap

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]


class SessionTable:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._names: list[str] = []
        self._row_of_name: dict[str, int] = {}
        self._sums = np.zeros((16, dim), dtype=np.float32)
        self._counts = np.zeros(16, dtype=np.int64)
        self._row_of_id = IdMap()

    def __len__(self) -> int:
        """How many records belong to a session."""
        return len(self._row_of_id)

    def _row(self, session: str) -> int:
        row = self._row_of_name.get(session)
        if row is None:
            row = len(self._names)
            self._names.append(session)
            self._row_of_name[session] = row
            if row == len(self._counts):
                self._sums = np.concatenate([self._sums, np.zeros_like(self._sums)])
                self._counts = np.concatenate([self._counts, np.zeros_like(self._counts)])
        return row

    def add(self, ids: Ids, sessions: list[str | None], vectors: npt.NDArray[np.float32]) -> None:
        for record_id, session, vector in zip(ids.tolist(), sessions, vectors, strict=True):
            if session is None or record_id in self._row_of_id:
                continue
            row = self._row(session)
            self._sums[row] += vector
            self._counts[row] += 1
            self._row_of_id.set(record_id, row)

    def remove(self, ids: Ids, vectors: npt.NDArray[np.float32]) -> None:
        """Forget records; `vectors` are the ones they were added with."""
        for record_id, vector in zip(ids.tolist(), vectors, strict=True):
            row = self._row_of_id.pop(record_id)
            if row < 0:
                continue
            self._counts[row] -= 1
            self._sums[row] = self._sums[row] - vector if self._counts[row] else 0.0  # no rounding residue

    def rows_for(self, ids: Ids) -> Ids:
        """The session row of each id (-1: no session)."""
        return self._row_of_id.rows_for(np.asarray(ids, dtype=np.int64))

    def vector_means(self, query: npt.NDArray[np.float32], rows: Ids) -> Scores:
        """Mean cosine with `query` of the records of each session in `rows` (its centroid
        score); -1 rows get 0."""
        known = np.maximum(rows, 0)
        # einsum, not `@`: a BLAS call here wakes OpenBLAS's thread pool, whose spinning threads then
        # slow the FAISS search that follows (x2 at 100k records on 2 cores, measured)
        means = np.einsum("ij,j->i", self._sums[known], query) / np.maximum(self._counts[known], 1)
        return np.where(rows >= 0, means, 0.0).astype(np.float32)

    def row_of(self, record_id: int) -> int:
        """The session row of one record (-1: no session)."""
        return self._row_of_id.get(int(record_id))

    def score_means(self, scored_rows: Ids | npt.NDArray[np.int32], scores: Scores, rows: Ids) -> Scores:
        """Mean score of each session in `rows`, given the `scores` of records in sessions
        `scored_rows` (-1: none; records not given score 0); -1 rows get 0."""
        in_session = scored_rows >= 0
        if in_session.sum() > len(self._names):  # more scores than sessions: one pass over the sessions
            sums = np.bincount(scored_rows[in_session], weights=scores[in_session], minlength=len(self._names))
            groups = np.arange(len(sums))
        else:  # few scores: only the sessions they fall in
            groups, inverse = np.unique(scored_rows[in_session], return_inverse=True)
            sums = np.bincount(inverse, weights=scores[in_session], minlength=len(groups))
        out = np.zeros(len(rows), dtype=np.float64)
        if len(groups):
            at = np.minimum(np.searchsorted(groups, rows), len(groups) - 1)
            found = (rows >= 0) & (groups[at] == rows)
            out[found] = sums[at[found]] / np.maximum(self._counts[rows[found]], 1)
        return out.astype(np.float32)

    @staticmethod
    def spread(rows: Ids, session_scores: Scores, own: Scores) -> Scores:
        """Each record's session score, given its session row from :meth:`rows_for` and the score
        of that session (both per record); a record without a session (row -1) keeps its `own`."""
        return np.where(rows >= 0, session_scores, own).astype(np.float32)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        n = len(self._names)
        ids, rows = self._row_of_id.items()
        with open(path, "wb") as fh:
            np.savez(
                fh,
                dim=np.array([self.dim]),
                sums=self._sums[:n],
                counts=self._counts[:n],
                names=np.frombuffer(json.dumps(self._names).encode(), dtype=np.uint8),
                ids=ids,
                rows=rows,
            )

    @classmethod
    def load(cls, path: Path) -> SessionTable:
        with np.load(path, allow_pickle=False) as data:
            table = cls(int(data["dim"][0]))
            table._names = json.loads(data["names"].tobytes().decode())
            table._row_of_name = {name: row for row, name in enumerate(table._names)}
            n = max(len(table._names), 16)
            table._sums = np.zeros((n, table.dim), dtype=np.float32)
            table._counts = np.zeros(n, dtype=np.int64)
            table._sums[: len(table._names)] = data["sums"]
            table._counts[: len(table._names)] = data["counts"]
            table._row_of_id = IdMap.from_arrays(data["ids"].astype(np.int64), data["rows"].astype(np.int64))
        return table
