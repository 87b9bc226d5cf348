"""Shared plumbing: timing/caching embedder wrappers and loading a task into a memory home."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.datasets import Task
from memvec import Memory, NewRecord
from memvec.embed import Embedder
from memvec.embed.base import ForwardsTokenizer, Vectors, l2_normalize


class MeasuredEmbedder(ForwardsTokenizer):
    """Wraps an embedder: counts seconds spent embedding and caches query vectors on demand."""

    def __init__(self, inner: Embedder, *, cache_queries: bool = True, cache_documents: bool = False) -> None:
        self.inner = inner
        self.cache_queries = cache_queries
        self.cache_documents = cache_documents
        self.seconds = 0.0
        self._queries: dict[str, Vectors] = {}
        self._documents: dict[str, Vectors] = {}

    def wrapped_embedder(self) -> Embedder:
        return self.inner

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.cache_documents:
            missing = list(dict.fromkeys(t for t in texts if t not in self._documents))
            if missing:
                self._documents.update(zip(missing, self._embed(missing), strict=True))
            return np.stack([self._documents[t] for t in texts]) if texts else self._embed([])
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> Vectors:
        if self.cache_queries and text in self._queries:
            return self._queries[text]
        started = time.perf_counter()
        vector = self.inner.embed_query(text)
        self.seconds += time.perf_counter() - started
        if self.cache_queries:
            self._queries[text] = vector
        return vector


class RandomEmbedder:
    """Synthetic unit vectors with cluster structure, seeded by the text: measures index cost without
    model cost. Uniformly random vectors in 384 dimensions have no near neighbours at all (every pair
    is almost orthogonal), which makes any ANN index look broken; real embeddings cluster by topic, so
    each vector here is a random cluster centre plus noise."""

    def __init__(self, dim: int = 384, clusters: int = 1024, noise: float = 0.6) -> None:
        self._dim = dim
        self._noise = noise
        self._centres = l2_normalize(np.random.default_rng(0).standard_normal((clusters, dim)))

    @property
    def model_id(self) -> str:
        return f"random:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        seed = int.from_bytes(hashlib.blake2b(texts[0].encode(), digest_size=8).digest(), "little")
        rng = np.random.default_rng(seed)
        centres = self._centres[rng.integers(0, len(self._centres), len(texts))]
        noise = rng.standard_normal((len(texts), self._dim)) / np.sqrt(self._dim)
        return l2_normalize(centres + self._noise * noise)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed_documents([text])[0]
        return vector


def records_for(task: Task, agent: str) -> list[NewRecord]:
    return [
        NewRecord.model_validate(
            {
                "agent": agent,
                "tier": task.tier,
                "text": doc.text,
                "role": doc.role,
                "created_at": doc.created_at,
                "citation": {"session_id": doc.session, "turn_id": doc.key},
            }
        )
        for doc in task.docs
    ]


def load_task(home: Path, embedder: Embedder, task: Task, agent: str, batch: int = 256, **settings: Any) -> Memory:
    mem = Memory.open(home, embedder=embedder, **settings)
    records = records_for(task, agent)
    for start in range(0, len(records), batch):
        mem.insert(records[start : start + batch])
    return mem
