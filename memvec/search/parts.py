"""What a search reads of one (agent, tier): its indexes and the records behind them.

`memvec.engine.partition_index.PartitionIndex` provides it, reading the store; the search functions only see this
interface, so `search/` never touches the store itself."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from memvec.embed.base import Embedder
from memvec.index.facts import RecordFacts
from memvec.index.lexical import BM25Index
from memvec.index.sessions import SessionTable
from memvec.index.vector import VectorIndex
from memvec.types import Record, SearchFilters


class SearchableTier(Protocol):
    vector: VectorIndex
    lexical: BM25Index
    sessions: SessionTable
    facts: RecordFacts  # what the ranker reads of each record
    embedder: Embedder

    def exact_vectors(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The float32 vectors of `ids` as stored (the index may hold them quantized)."""
        ...

    def texts(self, filters: SearchFilters) -> Iterable[tuple[int, str]]:
        """(id, text) of every record that passes `filters` (the token baseline scans them)."""
        ...

    def records(self, ids: Sequence[int]) -> list[Record]:
        """The records of `ids` that still exist, in that order."""
        ...
