"""FAISS vector index: inner product over L2-normalized vectors (= cosine), ids = store row ids.

``flat`` (default) is exact brute force; ``hnsw`` is approximate and meant for large tiers. The
``-fp16`` kinds store each vector as 16-bit floats (half the memory; scores differ from float32 in
the fourth decimal); the ``-sq8`` kinds as one byte per dimension (a quarter), scaled per dimension
between bounds learned from the vectors the index is built with (widened by a tenth each side, so
later vectors rarely clip; a rebuild learns them again). All sit in an ``IndexIDMap2`` so results
carry store ids and vectors can be read back by id. HNSW cannot delete in place, so removed ids
become tombstones that searches exclude; the index is rebuilt from the store when tombstones pass
a quarter of it. Filtered searches (an allowed-id set) are brute force over the allowed vectors
(exact for float32, as stored for the compact kinds), so filters never cost HNSW recall.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import faiss as _faiss
import numpy as np
import numpy.typing as npt

from memvec.embed.threads import thread_count
from memvec.errors import IndexFileError
from memvec.index.lexical import top_k
from memvec.types import IndexKind

faiss: Any = _faiss  # its SWIG stubs miss most of the API
faiss.omp_set_num_threads(thread_count())  # MEMVEC_THREADS, like the model (memvec.embed.threads)
_search_thread = threading.local()


def _one_omp_thread_here() -> None:
    """A one-query search runs on the calling thread only: waking OpenMP workers for it cost more than
    they saved (flat search at 10k records 4.3 -> 2.8 ms on 2 cores); concurrent requests use the cores.
    OpenMP's thread count is per calling thread, so index builds elsewhere keep every core."""
    if not getattr(_search_thread, "single", False):
        faiss.omp_set_num_threads(1)
        _search_thread.single = True


Ids = npt.NDArray[np.int64]
Vectors = npt.NDArray[np.float32]
INDEX_KINDS: tuple[str, ...] = get_args(IndexKind)
_SQ_TYPES = {"fp16": "QT_fp16", "sq8": "QT_8bit"}
_FEW_TO_LEARN_FROM = 1_000  # below this, per-dimension bounds from the data would be too narrow


@dataclass(frozen=True)
class HnswParams:
    # M=16 / efConstruction=100 / efSearch=256 rather than 32 / 200 / 128: 128 bytes less per vector
    # and a third of the build time; at 100k clustered vectors the same recall@10 (0.96 with sq8,
    # quantization-bound), on uniform random vectors (the hard case) 0.986 vs 0.990 in float32
    m: int = 16
    ef_construction: int = 100
    ef_search: int = 256


class VectorIndex:
    def __init__(self, dim: int, *, kind: IndexKind = "flat", hnsw: HnswParams | None = None) -> None:
        self.dim = dim
        self.kind = kind
        self.hnsw = hnsw or HnswParams()
        self._index: Any = faiss.IndexIDMap2(self._make_base())
        self._tombstones: set[int] = set()

    @property
    def is_hnsw(self) -> bool:
        return self.kind.startswith("hnsw")

    @property
    def quantizer(self) -> str | None:
        """'fp16', 'sq8', or None for float32."""
        suffix = self.kind.rpartition("-")[2]
        return suffix if suffix in _SQ_TYPES else None

    @property
    def tolerance(self) -> float:
        """How far a stored vector's components may be from the float32 ones it was given."""
        return {None: 1e-5, "fp16": 1e-3, "sq8": 2e-2}[self.quantizer]

    def _make_base(self) -> Any:
        metric = faiss.METRIC_INNER_PRODUCT
        sq_type = getattr(faiss.ScalarQuantizer, _SQ_TYPES[self.quantizer]) if self.quantizer else None
        if not self.is_hnsw:
            return (
                faiss.IndexScalarQuantizer(self.dim, sq_type, metric)
                if sq_type is not None
                else faiss.IndexFlatIP(self.dim)
            )
        if sq_type is not None:
            base = faiss.IndexHNSWSQ(self.dim, sq_type, self.hnsw.m, metric)
        else:
            base = faiss.IndexHNSWFlat(self.dim, self.hnsw.m, metric)
        base.hnsw.efConstruction = self.hnsw.ef_construction
        base.hnsw.efSearch = self.hnsw.ef_search
        return base

    # -- size -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self._index.ntotal) - len(self._tombstones)

    def _stored_ids(self) -> Ids:
        ids: npt.NDArray[np.int64] = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        return ids

    def ids(self) -> Ids:
        stored = self._stored_ids()
        if self._tombstones:
            stored = stored[~np.isin(stored, np.fromiter(self._tombstones, dtype=np.int64))]
        return np.sort(stored)

    @property
    def tombstone_fraction(self) -> float:
        total = int(self._index.ntotal)
        return len(self._tombstones) / total if total else 0.0

    # -- updates --------------------------------------------------------------------------
    def add(self, ids: Ids, vectors: Vectors) -> None:
        if len(ids) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected vectors of shape ({len(ids)}, {self.dim}), got {vectors.shape}")
        if not self._index.is_trained:
            self._learn_bounds(vectors)
        self._index.add_with_ids(vectors, np.ascontiguousarray(ids, dtype=np.int64))

    def _learn_bounds(self, vectors: Vectors) -> None:
        """Per-dimension bounds of the 8-bit scale, from the first vectors added (all of them when
        the index is built from the store). From few vectors, every dimension gets the widest range
        seen in any, symmetric around zero: bounds from one vector would clip all later ones."""
        base = faiss.downcast_index(self._index.index)
        quantizer = base.sq if not self.is_hnsw else faiss.downcast_index(base.storage).sq
        quantizer.rangestat_arg = 0.1  # RS_minmax widened by a tenth of the range each side
        sample = vectors
        if len(vectors) < _FEW_TO_LEARN_FROM:
            bound = float(np.abs(vectors).max()) or 1.0
            sample = np.stack([np.full(self.dim, -bound), np.full(self.dim, bound)]).astype(np.float32)
        self._index.train(sample)

    def remove(self, ids: Ids) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return
        if not self.is_hnsw:
            self._index.remove_ids(ids)
            return
        present = np.isin(ids, self._stored_ids())
        self._tombstones.update(int(i) for i in ids[present])

    # -- reading --------------------------------------------------------------------------
    def _storage(self) -> Vectors:
        """Every stored vector in insertion order: a view for float32, decoded for the others."""
        base = faiss.downcast_index(self._index.index)
        flat = faiss.downcast_index(base.storage) if self.is_hnsw else base
        n = int(flat.ntotal)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.quantizer:
            vectors: npt.NDArray[np.float32] = flat.reconstruct_n(0, n)
            return vectors
        shared: npt.NDArray[np.float32] = faiss.rev_swig_ptr(flat.get_xb(), n * self.dim).reshape(n, self.dim)
        return shared

    def vectors_for(self, ids: Ids) -> Vectors:
        """Stored vectors of `ids` (rows of zeros for ids not in the index)."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        if len(ids) == 0:
            return out
        try:  # IndexIDMap2 keeps a hash map from id to position; the batch loops in C++
            out[:] = self._index.reconstruct_batch(ids)
        except RuntimeError:  # an id it does not hold: one at a time, skipping those
            for row, record_id in enumerate(ids.tolist()):
                try:
                    out[row] = self._index.reconstruct(record_id)
                except RuntimeError:
                    continue
        if self._tombstones:
            out[np.isin(ids, np.fromiter(self._tombstones, dtype=np.int64))] = 0.0
        return out

    def search(
        self, query: Vectors, k: int, allowed: Ids | None = None, excluded: Ids | None = None
    ) -> tuple[Ids, Vectors]:
        """Top-k (ids, cosine scores), best first: among `allowed` when given, never `excluded`."""
        if len(self) == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if allowed is not None:
            if excluded is not None:
                allowed = np.setdiff1d(allowed, excluded)
            return self._exact_subset(query, k, np.asarray(allowed, dtype=np.int64))
        ids, scores = self.search_many(query.reshape(1, -1), k, excluded)
        found = ids[0] >= 0
        return ids[0][found].astype(np.int64), scores[0][found]

    def search_many(self, queries: Vectors, k: int, excluded: Ids | None = None) -> tuple[Ids, Vectors]:
        """Top-k of each query row in one call (a matrix product on a flat index): (ids, scores), each
        (rows, k), -1 ids where fewer than k records qualify."""
        _one_omp_thread_here()
        params = None
        skipped = np.fromiter(self._tombstones, dtype=np.int64, count=len(self._tombstones))
        if excluded is not None and len(excluded):
            skipped = np.union1d(skipped, excluded).astype(np.int64)
        if len(skipped):
            dead = faiss.IDSelectorBatch(skipped)
            params = self._params(faiss.IDSelectorNot(dead))
            params._keep = dead  # noqa: SLF001 - the SWIG wrapper does not own `dead`; keep it alive
        scores, ids = self._index.search(
            np.ascontiguousarray(queries, dtype=np.float32), max(1, min(k, len(self))), params=params
        )
        return ids.astype(np.int64), scores

    def _params(self, selector: Any) -> Any:
        if self.is_hnsw:
            return faiss.SearchParametersHNSW(sel=selector, efSearch=self.hnsw.ef_search)
        return faiss.SearchParameters(sel=selector)

    def _exact_subset(self, query: Vectors, k: int, allowed: Ids) -> tuple[Ids, Vectors]:
        """Exact top-k among `allowed`: every allowed stored vector scored by FAISS itself, by brute
        force over the stored codes (an HNSW graph walk would skip some), no vector copied or
        decoded into Python (decoding every compact vector cost 12 ms a search at 100k records)."""
        _one_omp_thread_here()
        if self._tombstones:
            allowed = np.setdiff1d(allowed, np.fromiter(self._tombstones, dtype=np.int64))
        if len(allowed) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        base = faiss.downcast_index(self._index.index)
        codes = faiss.downcast_index(base.storage) if self.is_hnsw else base
        members = faiss.IDSelectorBatch(allowed)
        chosen = faiss.IDSelectorTranslated(self._index.id_map, members)  # stored position -> record id
        scores, positions = codes.search(
            np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32),
            min(k, len(allowed)),
            params=faiss.SearchParameters(sel=chosen),
        )
        found = positions[0] >= 0
        return top_k(self._stored_ids()[positions[0][found]], scores[0][found], k)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        blob = faiss.serialize_index(self._index)
        with open(path, "wb") as fh:
            np.savez(
                fh,
                faiss=blob,
                tombstones=np.fromiter(sorted(self._tombstones), dtype=np.int64),
                meta=np.array([self.dim, self.hnsw.m, self.hnsw.ef_construction, self.hnsw.ef_search]),
                kind=np.frombuffer(self.kind.encode(), dtype=np.uint8),
            )

    @classmethod
    def load(cls, path: Path) -> VectorIndex:
        try:
            with np.load(path, allow_pickle=False) as data:
                dim, m, efc, efs = (int(x) for x in data["meta"])
                kind = data["kind"].tobytes().decode()
                if kind not in INDEX_KINDS:
                    raise ValueError(f"unknown index kind {kind!r}")
                index = cls(dim, kind=kind, hnsw=HnswParams(m, efc, efs))
                index._index = faiss.deserialize_index(data["faiss"])
                index._tombstones = {int(i) for i in data["tombstones"]}
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise IndexFileError(f"cannot read vector index {path}: {exc}") from exc
        if int(index._index.d) != dim:
            raise IndexFileError(f"vector index {path} has dim {index._index.d}, manifest says {dim}")
        if index.is_hnsw:
            faiss.downcast_index(index._index.index).hnsw.efSearch = efs
        return index
