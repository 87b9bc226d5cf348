"""Okapi BM25 with incremental add and remove, at a cost per query that follows its posting lists.

score(q, d) = sum over query tokens t of  idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))        (Lucene's form: never negative)

A query reads only the postings of its terms (term at a time) and returns sparse scores: the
documents that contain a query term, nothing per document of the index. Document length, N and df
are read at query time, so adding or removing a document never rewrites other postings.

Layout, chosen for millions of documents: terms are 64-bit hashes of the token (a Python string
and dict entry per distinct term would cost ~130 bytes each, and real text has many rare terms);
postings sit in one sorted "base" segment of flat arrays (term hashes, offsets, int32 document
slots, float32 term frequencies) plus a small "recent" segment of per-term arrays that is merged
into the base once it grows past an eighth of it. Removed slots are masked and compacted away
once they make up a quarter of the index. Statistics are per index (memvec keeps one per tier).

A document may have weighted fields (BM25F-style): a token of a field with weight w adds w to
the term frequency and to the document length, so context text can count less than the text.
It may also belong to a group (memvec: its session's row), returned with its score, so that
per-group sums cost what the scores cost and need no lookup per document.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memvec.errors import OldIndexFormatError
from memvec.index.idmap import IdMap
from memvec.index.tokenize import tokenize

Ids = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float32]
Slots = npt.NDArray[np.int32]
FORMAT = 3  # 1: terms as JSON strings, one int64 slot per posting; 2: no groups


def top_k(ids: Ids, scores: Scores, k: int) -> tuple[Ids, Scores]:
    """The k best (ids, scores), best first, ties broken by the smaller (older) id."""
    if len(ids) > k:
        # every score tied with the k-th best stays in, so the tie is broken by id and not by
        # where argpartition happened to cut (the top 10 of a search must be the top 10 of its top 100)
        kth = np.partition(-scores, k - 1)[k - 1]
        keep = np.flatnonzero(-scores <= kth)
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def term_hash(term: str) -> int:
    """A stable 64-bit id of a token (Python's hash() changes per process). Two distinct tokens
    share one with probability ~n²/2^65: below one in a million up to ~6 million distinct terms."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little", signed=True)


@dataclass(frozen=True)
class QueryScores:
    """BM25 scores of one query, sparse: the documents with a positive score, by ascending slot,
    with the group of each (-1: none)."""

    slots: Slots
    ids: Ids
    scores: Scores
    groups: Slots
    # The most any record could score for these tokens (each at the limit tf -> infinity, a token
    # the index lacks at its largest idf): a record's score over it says how much of the query it
    # covers, on a scale that does not depend on the other records' scores.
    ceiling: float = 0.0
    unseen: float = 0.0  # the part of the ceiling from tokens no record holds: words this memory never saw

    def __len__(self) -> int:
        return len(self.ids)


class BM25Index:
    def __init__(
        self,
        *,
        k1: float = 0.9,
        b: float = 0.4,
        tokenizer: Callable[[str], list[str]] = tokenize,
        recent_postings: int = 50_000,
    ) -> None:
        """`recent_postings`: postings the recent segment may hold (or an eighth of the base, if
        more) before it is merged into the base."""
        self.k1 = k1
        self.b = b
        self._tokenize = tokenizer
        self._recent_limit = recent_postings
        self._clear()

    def _clear(self) -> None:
        self._base_terms: Ids = np.zeros(0, dtype=np.int64)  # sorted term hashes
        self._base_offsets: Ids = np.zeros(1, dtype=np.int64)
        self._base_slots: Slots = np.zeros(0, dtype=np.int32)
        self._base_tfs: Scores = np.zeros(0, dtype=np.float32)
        self._recent: dict[int, tuple[array[int], array[float]]] = {}
        self._recent_postings = 0
        self._slot_ids: array[int] = array("q")  # record id per slot, -1 once removed
        self._slot_lens: array[float] = array("f")
        self._slot_groups: array[int] = array("i")
        self._slot_of = IdMap()
        self._live_len_total = 0.0

    # -- size -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, record_id: int) -> bool:
        return int(record_id) in self._slot_of

    def ids(self) -> Ids:
        return self._slot_of.items()[0]

    @property
    def avgdl(self) -> float:
        return self._live_len_total / len(self) if len(self) else 0.0

    # -- updates --------------------------------------------------------------------------
    def add(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        for record_id, text in zip(ids, texts, strict=True):
            self.add_tokens(int(record_id), self._tokenize(text))

    def add_tokens(self, record_id: int, tokens: Sequence[str]) -> None:
        self.add_fields(record_id, [(tokens, 1.0)])

    def add_fields(self, record_id: int, fields: Sequence[tuple[Sequence[str], float]], *, group: int = -1) -> None:
        """Add a document made of weighted token fields, in `group` (-1: none)."""
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
        self._slot_groups.append(group)
        self._slot_of.set(record_id, slot)
        self._live_len_total += length
        for term, tf in counts.items():
            slots, tfs = self._recent.setdefault(term_hash(term), (array("i"), array("f")))
            slots.append(slot)
            tfs.append(tf)
        self._recent_postings += len(counts)
        if self._recent_postings > max(self._recent_limit, len(self._base_slots) // 8):
            self._merge_recent()

    def remove(self, ids: Sequence[int]) -> None:
        for record_id in ids:
            slot = self._slot_of.pop(int(record_id))
            if slot < 0:
                continue
            self._live_len_total -= self._slot_lens[slot]
            self._slot_ids[slot] = -1
        # Dead slots stay in the postings (masked at query time) until compaction.
        if len(self._slot_ids) > 64 and len(self) < 0.75 * len(self._slot_ids):
            self._compact()

    def _merge_recent(self) -> None:
        """Fold the recent postings into the base segment: both are sorted by term, so this is a
        linear merge; recent slots are newer, so each posting list stays in slot order."""
        if not self._recent:
            return
        terms = np.fromiter(self._recent, dtype=np.int64, count=len(self._recent))
        order = np.argsort(terms)
        lists = list(self._recent.values())
        lengths = np.array([len(lists[i][0]) for i in order], dtype=np.int64)
        slots = np.frombuffer(b"".join(lists[i][0].tobytes() for i in order), dtype=np.int32)
        tfs = np.frombuffer(b"".join(lists[i][1].tobytes() for i in order), dtype=np.float32)
        recent_terms = np.repeat(terms[order], lengths)
        base_terms = self._expanded_terms()
        total = len(base_terms) + len(recent_terms)
        into = np.searchsorted(base_terms, recent_terms, side="right") + np.arange(len(recent_terms))
        from_base = np.ones(total, dtype=bool)
        from_base[into] = False
        merged_terms = np.empty(total, dtype=np.int64)
        merged_slots = np.empty(total, dtype=np.int32)
        merged_tfs = np.empty(total, dtype=np.float32)
        for merged, old, new in (
            (merged_terms, base_terms, recent_terms),
            (merged_slots, self._base_slots, slots),
            (merged_tfs, self._base_tfs, tfs),
        ):
            merged[from_base], merged[into] = old, new
        self._set_base(merged_terms, merged_slots, merged_tfs)
        self._recent, self._recent_postings = {}, 0

    def _expanded_terms(self) -> Ids:
        """The term of every base posting (the base is sorted by term)."""
        return np.repeat(self._base_terms, np.diff(self._base_offsets))

    def _set_base(self, posting_terms: Ids, slots: Slots, tfs: Scores) -> None:
        """Install postings already sorted by term (and by slot within a term)."""
        starts = np.flatnonzero(np.concatenate([[True], posting_terms[1:] != posting_terms[:-1]]))
        starts = starts[: len(posting_terms)]  # no postings: no term starts
        self._base_terms = posting_terms[starts]
        self._base_offsets = np.append(starts, len(posting_terms)).astype(np.int64)
        self._base_slots = np.ascontiguousarray(slots, dtype=np.int32)
        self._base_tfs = np.ascontiguousarray(tfs, dtype=np.float32)

    def _compact(self) -> None:
        self._merge_recent()
        slot_ids = np.frombuffer(self._slot_ids, dtype=np.int64)
        alive = slot_ids >= 0
        if alive.all():
            return
        new_slot = (np.cumsum(alive) - 1).astype(np.int32)
        keep = alive[self._base_slots]
        self._set_base(self._expanded_terms()[keep], new_slot[self._base_slots[keep]], self._base_tfs[keep])
        live_ids = slot_ids[alive]
        self._slot_lens = array("f", np.frombuffer(self._slot_lens, dtype=np.float32)[alive].tobytes())
        self._slot_groups = array("i", np.frombuffer(self._slot_groups, dtype=np.int32)[alive].tobytes())
        self._slot_ids = array("q", live_ids.tobytes())
        self._slot_of = IdMap.from_arrays(live_ids, np.arange(len(live_ids), dtype=np.int64))

    # -- scoring --------------------------------------------------------------------------
    def _postings(self, term: int) -> tuple[Slots, Scores]:
        """Every posting of a term (dead slots included), by ascending slot."""
        at = int(np.searchsorted(self._base_terms, term))
        if at < len(self._base_terms) and self._base_terms[at] == term:
            lo, hi = int(self._base_offsets[at]), int(self._base_offsets[at + 1])
            slots, tfs = self._base_slots[lo:hi], self._base_tfs[lo:hi]
        else:
            slots, tfs = self._base_slots[:0], self._base_tfs[:0]
        recent = self._recent.get(term)
        if recent is not None:
            slots = np.concatenate([slots, np.frombuffer(recent[0], dtype=np.int32)])
            tfs = np.concatenate([tfs, np.frombuffer(recent[1], dtype=np.float32)])
        return slots, tfs

    def query_scores(self, query: str) -> QueryScores:
        """BM25 scores of the documents that contain a query token (a token repeated in the query
        counts again, as in the formula); the cost is the length of those posting lists."""
        n = len(self)
        tokens = self._tokenize(query)
        parts, ceiling, unseen = self._term_scores(tokens, n) if n else ([], 0.0, 0.0)
        slots = np.zeros(0, dtype=np.int32)
        scores = np.zeros(0, dtype=np.float32)
        if len(parts) == 1:
            slots, scores = parts[0][0], parts[0][1].astype(np.float32)
        elif parts and 8 * sum(len(s) for s, _ in parts) > len(self._slot_ids):
            # The lists cover a good part of the index: one dense pass is cheaper than merging them.
            dense = np.zeros(len(self._slot_ids), dtype=np.float32)
            for term_slots, contribution in parts:
                dense[term_slots] += contribution
            slots = np.flatnonzero(dense).astype(np.int32)
            scores = dense[slots]
        elif parts:
            slots = np.unique(np.concatenate([s for s, _ in parts]))
            # Summed term by term in float32, as in a dense score array: the same scores to the
            # last bit whichever way is taken, so near-ties rank as they always have.
            scores = np.zeros(len(slots), dtype=np.float32)
            for term_slots, contribution in parts:
                scores[np.searchsorted(slots, term_slots)] += contribution
        return self._scored(slots, scores, ceiling, unseen)

    def _term_scores(
        self, tokens: list[str], n: int
    ) -> tuple[list[tuple[Slots, npt.NDArray[np.float64]]], float, float]:
        """(live slots, score contribution) for each query token found in the index; and the
        query's ceiling: each token's idf times (k1 + 1), summed, what a record holding every
        token infinitely often would score (a token no record holds at the largest idf); and the
        part of it from tokens no record holds."""
        slot_ids = np.frombuffer(self._slot_ids, dtype=np.int64)
        lens = np.frombuffer(self._slot_lens, dtype=np.float32)
        any_dead = len(slot_ids) > n
        parts, ceiling, unseen = [], 0.0, 0.0
        for token in tokens:
            slots, tfs = self._postings(term_hash(token))
            if any_dead:
                live = slot_ids[slots] >= 0
                slots, tfs = slots[live], tfs[live]
            idf = np.log1p((n - len(slots) + 0.5) / (len(slots) + 0.5))  # float64: scores as always
            ceiling += float(idf) * (self.k1 + 1.0)
            if len(slots) == 0:
                unseen += float(idf) * (self.k1 + 1.0)
                continue
            norm = self.k1 * (1.0 - self.b + self.b * lens[slots] / self.avgdl)
            parts.append((slots, idf * tfs * (self.k1 + 1.0) / (tfs + norm)))
        return parts, ceiling, unseen

    def _scored(self, slots: Slots, scores: Scores, ceiling: float, unseen: float) -> QueryScores:
        positive = scores > 0
        slots = slots[positive].astype(np.int32)
        ids = np.frombuffer(self._slot_ids, dtype=np.int64)[slots].copy()
        groups = np.frombuffer(self._slot_groups, dtype=np.int32)[slots].copy()
        return QueryScores(slots, ids, scores[positive].astype(np.float32), groups, ceiling, unseen)

    def scores_for(self, scored: QueryScores, ids: Sequence[int] | Ids) -> Scores:
        """The scores of `ids` in a :meth:`query_scores` result (0 for ids it does not hold)."""
        slots = self._slot_of.rows_for(np.asarray(ids, dtype=np.int64))
        out = np.zeros(len(slots), dtype=np.float32)
        if len(scored) == 0:
            return out
        at = np.minimum(np.searchsorted(scored.slots, slots), len(scored) - 1)
        found = (slots >= 0) & (scored.slots[at] == slots)
        out[found] = scored.scores[at[found]]
        return out

    def lengths_for(self, ids: Sequence[int] | Ids) -> Scores:
        """The indexed length (weighted tokens) of each of `ids` (0 for ids it does not hold)."""
        slots = self._slot_of.rows_for(np.asarray(ids, dtype=np.int64))
        out = np.zeros(len(slots), dtype=np.float32)
        held = slots >= 0
        out[held] = np.frombuffer(self._slot_lens, dtype=np.float32)[slots[held]]
        return out

    def search(self, query: str, k: int, allowed: Ids | None = None, excluded: Ids | None = None) -> tuple[Ids, Scores]:
        """Top-k (ids, scores) with a positive score, best first: among `allowed` when given, never `excluded`."""
        return self.search_scored(self.query_scores(query), k, allowed, excluded)

    def search_scored(
        self, scored: QueryScores, k: int, allowed: Ids | None = None, excluded: Ids | None = None
    ) -> tuple[Ids, Scores]:
        """Like :meth:`search`, over scores already computed by :meth:`query_scores`."""
        ids, scores = scored.ids, scored.scores
        if allowed is not None:
            keep = np.isin(ids, allowed)
            ids, scores = ids[keep], scores[keep]
        if excluded is not None and len(excluded):
            keep = ~np.isin(ids, excluded)
            ids, scores = ids[keep], scores[keep]
        return top_k(ids, scores, k)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write to `path` (an open-for-write .npz target chosen by the caller)."""
        self._compact()
        with open(path, "wb") as fh:
            np.savez(
                fh,
                format=np.array([FORMAT]),
                params=np.array([self.k1, self.b]),
                terms=self._base_terms,
                offsets=self._base_offsets,
                slots=self._base_slots,
                tfs=self._base_tfs,
                slot_ids=np.frombuffer(self._slot_ids, dtype=np.int64),
                slot_lens=np.frombuffer(self._slot_lens, dtype=np.float32),
                slot_groups=np.frombuffer(self._slot_groups, dtype=np.int32),
            )

    @classmethod
    def load(cls, path: Path, *, tokenizer: Callable[[str], list[str]] = tokenize) -> BM25Index:
        with np.load(path, allow_pickle=False) as data:
            written = int(data["format"][0]) if "format" in data.files else 0  # older files lack the field
            if written < FORMAT:
                raise OldIndexFormatError(f"BM25 file format {written} (this memvec writes {FORMAT})")
            if written != FORMAT:
                raise ValueError(f"BM25 file format {written}, expected {FORMAT}")
            k1, b = (float(x) for x in data["params"])
            index = cls(k1=k1, b=b, tokenizer=tokenizer)
            index._base_terms = data["terms"].astype(np.int64)
            index._base_offsets = data["offsets"].astype(np.int64)
            index._base_slots = data["slots"].astype(np.int32)
            index._base_tfs = data["tfs"].astype(np.float32)
            slot_ids = data["slot_ids"].astype(np.int64)
            index._slot_ids = array("q", slot_ids.tobytes())
            index._slot_lens = array("f", data["slot_lens"].astype(np.float32).tobytes())
            index._slot_groups = array("i", data["slot_groups"].astype(np.int32).tobytes())
        live = np.flatnonzero(slot_ids >= 0)
        index._slot_of = IdMap.from_arrays(slot_ids[live], live.astype(np.int64))
        index._live_len_total = float(np.frombuffer(index._slot_lens, dtype=np.float32)[live].sum(dtype=np.float64))
        return index
