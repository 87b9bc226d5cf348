"""Query-side sharing: the LRU cache of query vectors and the micro-batcher under many threads."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvec import Memory
from memvec.embed import Embedder, HashingEmbedder
from memvec.embed.base import Vectors, embed_queries
from memvec.embed.queries import MicroBatcher, QueryCache


class SlowBatchEmbedder(HashingEmbedder):
    """A real hashing embedder whose batch call takes a few ms, as a forward pass does, and which
    records the batches it was given."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.calls: list[int] = []

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        time.sleep(0.003)
        return self.embed_documents(texts)


def run_concurrently(batcher: Embedder, texts: list[str], threads: int = 16) -> list[Vectors]:
    barrier = threading.Barrier(min(threads, len(texts)))

    def call(text: str) -> Vectors:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=1)
        return batcher.embed_query(text)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(call, texts))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=2, max_size=60, unique=True))
@pytest.mark.slow
def test_the_batcher_returns_each_caller_its_own_vector(texts: list[str]) -> None:
    inner = SlowBatchEmbedder(32)
    batcher = MicroBatcher(inner)
    try:
        results = run_concurrently(batcher, texts)
    finally:
        batcher.close()
    for text, vector in zip(texts, results, strict=True):
        assert np.array_equal(vector, inner.embed_query(text))
    assert sum(inner.calls) == len(texts)


def test_concurrent_callers_share_forward_passes() -> None:
    inner = SlowBatchEmbedder(32)
    batcher = MicroBatcher(inner)
    try:
        run_concurrently(batcher, [f"query {i}" for i in range(64)])
    finally:
        batcher.close()
    assert len(inner.calls) < 16 and max(inner.calls) > 1


def test_a_lone_caller_does_not_wait() -> None:
    """With a 10-minute batching window, five calls one after another still return at once: a lone
    caller is never held back for company (one that waited would outlast the liveness bound)."""
    inner = SlowBatchEmbedder(32)
    batcher = MicroBatcher(inner, max_wait_s=600)
    calls = threading.Thread(target=lambda: [batcher.embed_query(f"alone {i}") for i in range(5)], daemon=True)
    try:
        calls.start()
        calls.join(timeout=60)
        assert not calls.is_alive(), "a lone caller waited for the batching window"
    finally:
        batcher.close()
    assert inner.calls == [1] * 5


def test_batchers_of_two_models_never_mix() -> None:
    small, large = MicroBatcher(SlowBatchEmbedder(16)), MicroBatcher(SlowBatchEmbedder(48))
    texts = [f"text {i}" for i in range(40)]
    try:
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda i: (i, (small if i % 2 else large).embed_query(texts[i])), range(40)))
    finally:
        small.close()
        large.close()
    for i, vector in results:
        assert np.array_equal(vector, HashingEmbedder(16 if i % 2 else 48).embed_query(texts[i]))


def test_a_failing_forward_pass_reaches_every_waiter() -> None:
    class Failing(SlowBatchEmbedder):
        def embed_queries(self, texts: Sequence[str]) -> Vectors:
            time.sleep(0.002)
            raise RuntimeError("model crashed")

    batcher = MicroBatcher(Failing(8))
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            batcher.embed_query(f"q{i}")
        except RuntimeError as exc:
            errors.append(exc)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(call, range(8)))
    batcher.close()
    assert len(errors) == 8


def test_the_cache_returns_a_read_only_vector_once_computed() -> None:
    inner = SlowBatchEmbedder(16)
    cache = QueryCache(inner, size=2)
    first = cache.embed_query("a")
    assert cache.embed_query("a") is first and (cache.hits, cache.misses) == (1, 1)
    with pytest.raises(ValueError):
        first[0] = 1.0
    cache.embed_query("b")
    cache.embed_query("c")  # evicts "a", the least recently used
    cache.embed_query("a")
    assert cache.misses == 4


QUESTIONS = [
    f"What did Caroline do in week {i} of the {season}?" for i in range(12) for season in ("spring", "summer", "autumn")
]


def test_real_int8_vectors_depend_on_their_batch(minilm_int8: Embedder) -> None:
    """Why int8 queries are never batched: its activations are quantized with one scale per batch."""
    alone = np.stack([minilm_int8.embed_documents([t])[0] for t in QUESTIONS])
    together = minilm_int8.embed_documents(QUESTIONS)
    cosine = np.sum(alone * together, axis=1)
    assert not np.array_equal(alone, together) and cosine.min() > 0.97


def test_real_int8_queries_get_the_same_vector_under_concurrency_and_in_a_batch_call(minilm_int8: Embedder) -> None:
    alone = np.stack([minilm_int8.embed_query(t) for t in QUESTIONS])
    batcher = MicroBatcher(minilm_int8)
    try:
        np.testing.assert_array_equal(np.stack(run_concurrently(batcher, QUESTIONS)), alone)
    finally:
        batcher.close()
    assert batcher.batches == 0
    np.testing.assert_array_equal(embed_queries(minilm_int8, QUESTIONS), alone)  # `memvec search --queries`


def test_concurrent_searches_find_what_each_finds_alone_on_the_real_model(home: Path, minilm_int8: Embedder) -> None:
    """`memvec serve` batches queries across requests: with the default int8 model that must not
    change anyone's hits or scores."""
    with Memory.open(home, embedder=minilm_int8, query_batching=True, query_cache_size=0) as mem:
        archival = mem.archival("ana")
        for i in range(30):
            archival.insert(f"In week {i} Caroline went {('hiking', 'to a concert', 'painting')[i % 3]}")

        def hits(query: str) -> list[tuple[int, float, float | None]]:
            # the cosine too: the ranker's score moves in steps, and a small change may not show in it
            return [(hit.id, hit.score, hit.scores.vector) for hit in archival.search(query, k=5)]

        alone = [hits(q) for q in QUESTIONS]
        barrier = threading.Barrier(len(QUESTIONS))

        def together(query: str) -> list[tuple[int, float, float | None]]:
            barrier.wait(timeout=30)  # every search at once, as under load
            return hits(query)

        with ThreadPoolExecutor(len(QUESTIONS)) as pool:
            assert list(pool.map(together, QUESTIONS)) == alone


def test_memory_serves_queries_from_the_cache(home: object) -> None:
    inner = SlowBatchEmbedder(32)
    with Memory.open(str(home), embedder=inner, query_batching=True) as mem:
        mem.archival("a").insert("the lighthouse keeper logs the storm")
        first = mem.archival("a").search("storm log", k=1)
        again = mem.archival("a").search("storm log", k=1)
        assert first == again and inner.calls == [1]


def test_concurrent_small_inserts_share_passes_and_get_their_own_rows() -> None:
    class Recording(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__(24)
            self.sizes: list[int] = []

        def embed_documents(self, texts: Sequence[str]) -> Vectors:
            self.sizes.append(len(texts))
            time.sleep(0.003)
            return super().embed_documents(texts)

    inner = Recording()
    batcher = MicroBatcher(inner)
    groups = [[f"note {i}", f"context {i}\nnote {i}"] for i in range(40)]
    try:
        with ThreadPoolExecutor(12) as pool:
            results = list(pool.map(batcher.embed_documents, groups))
        bulk = [f"bulk {i}" for i in range(100)]
        assert np.array_equal(batcher.embed_documents(bulk), HashingEmbedder(24).embed_documents(bulk))
    finally:
        batcher.close()
    for texts, vectors in zip(groups, results, strict=True):
        assert np.array_equal(vectors, HashingEmbedder(24).embed_documents(texts))
    assert len(inner.sizes) < 40 and 100 in inner.sizes  # small calls shared passes; the bulk call went alone


def test_the_cache_never_answers_for_another_model() -> None:
    class Swappable:
        """An embedder whose model can be replaced under a long-lived cache (e.g. a reload)."""

        def __init__(self) -> None:
            self.current = HashingEmbedder(16)

        @property
        def model_id(self) -> str:
            return self.current.model_id

        @property
        def dim(self) -> int:
            return self.current.dim

        def embed_documents(self, texts: Sequence[str]) -> Vectors:
            return self.current.embed_documents(texts)

        def embed_query(self, text: str) -> Vectors:
            return self.current.embed_query(text)

    inner = Swappable()
    cache = QueryCache(inner)
    assert cache.embed_query("tide tables").shape == (16,)
    inner.current = HashingEmbedder(32)
    assert np.array_equal(cache.embed_query("tide tables"), HashingEmbedder(32).embed_query("tide tables"))
