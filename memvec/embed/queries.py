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

import numpy as np

from memvec.embed.base import Embedder, ForwardsTokenizer, Vectors, batch_invariant, embed_queries


class _Delegate(ForwardsTokenizer):
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

    @property
    def batch_invariant(self) -> bool:
        return batch_invariant(self.inner)

    def wrapped_embedder(self) -> Embedder:
        return self.inner

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
    """Concurrent callers share one forward pass: searches (``embed_query``) and small inserts
    (``embed_documents`` of a few texts; a bulk call goes straight to the model, it fills a pass
    by itself). Searches only where the model's vectors do not depend on their batch (not int8
    ONNX, the default: there each query has its own pass, so the same query always finds the same
    hits; a document's vector is stored once, so its batch does not matter later).

    Callers queue their texts and wait; one worker thread takes what is queued (queries and
    documents in separate passes, since a model may prompt them differently), waits up to
    ``max_wait_s`` for more (only when the previous batch had company, so a lone caller never
    waits), embeds the batch in one call and hands each caller its own rows. Texts that arrive
    during a forward pass form the next batch.
    """

    def __init__(self, inner: Embedder, *, max_wait_s: float = 0.0015, max_batch: int = 64) -> None:
        super().__init__(inner)
        self.max_wait_s, self.max_batch = max_wait_s, max_batch
        self.batches = self.batched = 0
        self._pending: list[tuple[str, str, Future[Vectors]]] = []  # (kind, text, future)
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._last_size = 1

    def embed_query(self, text: str) -> Vectors:
        if not batch_invariant(self.inner):  # a search's hits must not depend on what else is being searched
            return self.inner.embed_query(text)
        return self._submit("query", [text])[0].result()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if len(texts) > self.max_batch // 4 or not texts:
            return self.inner.embed_documents(texts)
        return np.stack([future.result() for future in self._submit("document", texts)])

    def _submit(self, kind: str, texts: Sequence[str]) -> list[Future[Vectors]]:
        futures: list[Future[Vectors]] = [Future() for _ in texts]
        with self._cond:
            if self._closed:
                raise RuntimeError("the embedding batcher is closed")
            self._pending += [(kind, text, future) for text, future in zip(texts, futures, strict=True)]
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="memvec-embed-batcher", daemon=True)
                self._worker.start()
            self._cond.notify_all()
        return futures

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join()

    def _take_batch(self) -> list[tuple[str, str, Future[Vectors]]]:
        with self._cond:
            while not self._pending and not self._closed:
                self._cond.wait()
            if self._last_size > 1:
                deadline = time.monotonic() + self.max_wait_s
                while len(self._pending) < self.max_batch and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
            kind = self._pending[0][0] if self._pending else ""
            batch = [item for item in self._pending if item[0] == kind][: self.max_batch]
            taken = {id(item) for item in batch}
            self._pending = [item for item in self._pending if id(item) not in taken]
            self._last_size = max(len(batch), 1)
            return batch

    def _work(self) -> None:
        while batch := self._take_batch():
            texts = [text for _, text, _ in batch]
            try:
                vectors = (
                    embed_queries(self.inner, texts) if batch[0][0] == "query" else self.inner.embed_documents(texts)
                )
            except BaseException as exc:  # every waiter learns of the failure, nobody hangs
                for _, _, future in batch:
                    future.set_exception(exc)
            else:
                for row, (_, _, future) in enumerate(batch):
                    future.set_result(vectors[row].copy())
            self.batches, self.batched = self.batches + 1, self.batched + len(batch)
