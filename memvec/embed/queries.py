"""Query-side helpers around any embedder: batch query embedding, an LRU cache of query vectors and
a micro-batcher that lets concurrent callers share one forward pass.

Both wrappers are embedders themselves (same ``model_id`` and ``dim`` as the one they wrap) and hold
exactly one inner embedder for life, so a cached or batched vector always comes from the model the
caller's index was built with; a model change makes new wrappers.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future

from memvec.embed.base import Embedder, Vectors, embed_queries


class _Delegate:
    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return embed_queries(self.inner, texts)

    def close(self) -> None:
        close_inner = getattr(self.inner, "close", None)
        if close_inner is not None:
            close_inner()


class QueryCache(_Delegate):
    """The last ``size`` query vectors, keyed by (model id, text); returned read-only so a caller
    cannot corrupt what the next caller gets."""

    def __init__(self, inner: Embedder, size: int = 1024) -> None:
        super().__init__(inner)
        self.size = size
        self.hits = self.misses = 0
        self._entries: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> Vectors:
        key = (self.inner.model_id, text)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        vector = self.inner.embed_query(text)
        vector.flags.writeable = False
        with self._lock:
            self._entries[key] = vector
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return vector


class MicroBatcher(_Delegate):
    """Concurrent ``embed_query`` calls share one forward pass.

    Callers queue their text and wait; one worker thread takes what is queued, waits up to
    ``max_wait_s`` for more (only when the previous batch had company, so a lone caller never
    waits), embeds the batch in one call and hands each caller its own row. Queries that arrive
    during a forward pass form the next batch.
    """

    def __init__(self, inner: Embedder, *, max_wait_s: float = 0.0015, max_batch: int = 64) -> None:
        super().__init__(inner)
        self.max_wait_s, self.max_batch = max_wait_s, max_batch
        self.batches = self.batched = 0
        self._pending: list[tuple[str, Future[Vectors]]] = []
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._last_size = 1

    def embed_query(self, text: str) -> Vectors:
        future: Future[Vectors] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the query batcher is closed")
            self._pending.append((text, future))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="memvec-query-batcher", daemon=True)
                self._worker.start()
            self._cond.notify_all()
        return future.result()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join()

    def _take_batch(self) -> list[tuple[str, Future[Vectors]]]:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._last_size > 1:
                deadline = time.monotonic() + self.max_wait_s
                while len(self._pending) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
            batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            self._last_size = max(len(batch), 1)
            return batch

    def _work(self) -> None:
        while batch := self._take_batch():
            try:
                vectors = embed_queries(self.inner, [text for text, _ in batch])
            except BaseException as exc:  # every waiter learns of the failure, nobody hangs
                for _, future in batch:
                    future.set_exception(exc)
            else:
                for row, (_, future) in enumerate(batch):
                    future.set_result(vectors[row].copy())
            self.batches, self.batched = self.batches + 1, self.batched + len(batch)
