"""Okapi BM25 with incremental add and remove.

score(q, d) = sum over query tokens t of  idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))        (Lucene's form: never negative)

Postings are compact arrays per term (document slot, term frequency). Document length, N and
df are read at query time, so adding or removing a document never rewrites other postings;
removed slots are masked and compacted away once they make up a quarter of the index.
Statistics are per index, and memvec keeps one index per (agent, tier).

A document may have weighted fields (BM25F-style): a token of a field with weight w adds w to
the term frequency and to the document length, so context text can count less than the text.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.index.tokenize import tokenize

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]


def top_k(ids: Ids, scores: Scores, k: int) -> tuple[Ids, Scores]:
    """The k best (ids, scores), best first, ties broken by the smaller (older) id."""
    if len(ids) > k:
        keep = np.argpartition(-scores, k - 1)[:k]
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))
    return ids[order], scores[order]


class BM25Index:
    def __init__(self, *, k1: float = 0.9, b: float = 0.4,
                 tokenizer: Callable[[str], list[str]] = tokenize) -> None:
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._clear()

    def _clear(self) -> None:
        self._postings: dict[str, tuple[array[int], array[float]]] = {}
        self._slot_ids: array[int] = array("q")
        self._slot_lens: array[float] = array("f")
        self._slot_of: dict[int, int] = {}
        self._live_len_total = 0.0
        self._cache: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}

    # -- size -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, record_id: int) -> bool:
        return int(record_id) in self._slot_of

    def ids(self) -> Ids:
        return np.array(sorted(self._slot_of), dtype=np.int64)

    @property
    def avgdl(self) -> float:
        return self._live_len_total / len(self) if len(self) else 0.0

    # -- updates --------------------------------------------------------------------------
    def add(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        for record_id, text in zip(ids, texts, strict=True):
            self.add_tokens(int(record_id), self._tokenize(text))

    def add_tokens(self, record_id: int, tokens: Sequence[str]) -> None:
        self.add_fields(record_id, [(tokens, 1.0)])

    def add_fields(self, record_id: int, fields: Sequence[tuple[Sequence[str], float]]) -> None:
        """Add a document made of weighted token fields."""
        if record_id in self._slot_of:
            self.remove([record_id])
        counts: Counter[str] = Counter()
        length = 0.0
        for tokens, weight in fields:
            for token in tokens:
                counts[token] += weight  # type: ignore[assignment]
            length += weight * len(tokens)
        slot = len(self._slot_ids)
        self._slot_ids.append(record_id)
        self._slot_lens.append(length)
        self._slot_of[record_id] = slot
        self._live_len_total += length
        for term, tf in counts.items():
            slots, tfs = self._postings.setdefault(term, (array("q"), array("f")))
            slots.append(slot)
            tfs.append(tf)
            self._cache.pop(term, None)

    def remove(self, ids: Sequence[int]) -> None:
        for record_id in ids:
            slot = self._slot_of.pop(int(record_id), None)
            if slot is None:
                continue
            self._live_len_total -= self._slot_lens[slot]
            self._slot_ids[slot] = -1
        # Dead slots stay in the postings (masked at query time) until compaction.
        self._cache.clear()
        if len(self._slot_ids) > 64 and len(self) < 0.75 * len(self._slot_ids):
            self._compact()

    def _compact(self) -> None:
        slot_ids = np.frombuffer(self._slot_ids, dtype=np.int64)
        alive = slot_ids >= 0
        new_slot = np.cumsum(alive) - 1
        postings: dict[str, tuple[array[int], array[float]]] = {}
        for term, (slots, tfs) in self._postings.items():
            s = np.frombuffer(slots, dtype=np.int64)
            keep = alive[s]
            if keep.any():
                postings[term] = (array("q", new_slot[s[keep]].tobytes()),
                                  array("f", np.frombuffer(tfs, dtype=np.float32)[keep].tobytes()))
        lens = np.frombuffer(self._slot_lens, dtype=np.float32)[alive]
        self._postings = postings
        self._slot_ids = array("q", slot_ids[alive].tobytes())
        self._slot_lens = array("f", lens.tobytes())
        self._slot_of = {int(i): s for s, i in enumerate(self._slot_ids)}
        self._cache.clear()

    # -- scoring --------------------------------------------------------------------------
    def _term_arrays(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        cached = self._cache.get(term)
        if cached is None:
            slots, tfs = self._postings[term]
            s = np.frombuffer(slots, dtype=np.int64)
            live = np.frombuffer(self._slot_ids, dtype=np.int64)[s] >= 0
            cached = (s[live], np.frombuffer(tfs, dtype=np.float32)[live].copy())
            self._cache[term] = cached
        return cached

    def slot_scores(self, query: str) -> Scores:
        """BM25 score of every slot (dead slots score 0); index with :meth:`slot_ids`."""
        scores = np.zeros(len(self._slot_ids), dtype=np.float32)
        n = len(self)
        if n == 0:
            return scores
        lens = np.frombuffer(self._slot_lens, dtype=np.float32).copy()
        norm = self.k1 * (1.0 - self.b + self.b * lens / self.avgdl)
        for term in self._tokenize(query):
            if term not in self._postings:
                continue
            slots, tfs = self._term_arrays(term)
            if len(slots) == 0:
                continue
            idf = np.log1p((n - len(slots) + 0.5) / (len(slots) + 0.5))
            scores[slots] += idf * tfs * (self.k1 + 1.0) / (tfs + norm[slots])
        return scores

    def slot_ids(self) -> Ids:
        # A copy: a live view would stop the array from growing on the next add.
        return np.frombuffer(self._slot_ids, dtype=np.int64).copy()

    def scores_for(self, slot_scores: Scores, ids: Sequence[int]) -> Scores:
        """Pick the scores of `ids` out of a :meth:`slot_scores` result (0 for unknown ids)."""
        return np.array([slot_scores[self._slot_of[int(i)]] if int(i) in self._slot_of else 0.0
                         for i in ids], dtype=np.float32)

    def search(self, query: str, k: int, allowed: Ids | None = None) -> tuple[Ids, Scores]:
        """Top-k (ids, scores) with a positive score, best first; `allowed` restricts the ids."""
        return self.search_scored(self.slot_scores(query), k, allowed)

    def search_scored(self, slot_scores: Scores, k: int, allowed: Ids | None = None) -> tuple[Ids, Scores]:
        """Like :meth:`search`, over scores already computed by :meth:`slot_scores`."""
        slot_ids = self.slot_ids()
        candidates = (slot_ids >= 0) & (slot_scores > 0)
        if allowed is not None:
            candidates &= np.isin(slot_ids, allowed)
        return top_k(slot_ids[candidates], slot_scores[candidates], k)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write to `path` (an open-for-write .npz target chosen by the caller)."""
        self._compact()
        terms = list(self._postings)
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(self._postings[t][0]) for t in terms])
        slots = b"".join(self._postings[t][0].tobytes() for t in terms)
        tfs = b"".join(self._postings[t][1].tobytes() for t in terms)
        with open(path, "wb") as fh:
            np.savez(fh, params=np.array([self.k1, self.b]),
                     terms=np.frombuffer(json.dumps(terms).encode(), dtype=np.uint8),
                     offsets=offsets, slots=np.frombuffer(slots, dtype=np.int64),
                     tfs=np.frombuffer(tfs, dtype=np.float32),
                     slot_ids=np.frombuffer(self._slot_ids, dtype=np.int64),
                     slot_lens=np.frombuffer(self._slot_lens, dtype=np.float32))

    @classmethod
    def load(cls, path: Path, *, tokenizer: Callable[[str], list[str]] = tokenize) -> BM25Index:
        with np.load(path, allow_pickle=False) as data:
            k1, b = (float(x) for x in data["params"])
            index = cls(k1=k1, b=b, tokenizer=tokenizer)
            terms = json.loads(data["terms"].tobytes().decode())
            offsets, slots, tfs = data["offsets"], data["slots"], data["tfs"]
            for i, term in enumerate(terms):
                lo, hi = int(offsets[i]), int(offsets[i + 1])
                index._postings[term] = (array("q", slots[lo:hi].tobytes()),
                                         array("f", tfs[lo:hi].astype(np.float32).tobytes()))
            index._slot_ids = array("q", data["slot_ids"].tobytes())
            index._slot_lens = array("f", data["slot_lens"].astype(np.float32).tobytes())
        index._slot_of = {int(i): s for s, i in enumerate(index._slot_ids) if i >= 0}
        index._live_len_total = float(sum(index._slot_lens[s] for s in index._slot_of.values()))
        return index
