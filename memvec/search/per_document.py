"""Hits grouped by document: the best chunk of each file, for an app that shows documents, not chunks."""

from __future__ import annotations

from collections.abc import Sequence

from memvec.types import MAX_K, Hit, SearchRequest

POOL_FACTOR = 5  # chunks searched per document asked for
MIN_POOL = 100  # so the first documents are the same whatever k is asked, up to k = MIN_POOL / POOL_FACTOR


def widened(request: SearchRequest) -> SearchRequest:
    """The chunk search behind a per-document one: a fixed pool, grown only for a large k."""
    return request.model_copy(update={"k": min(MAX_K, max(MIN_POOL, request.k * POOL_FACTOR)), "per_document": False})


def best_per_document(hits: Sequence[Hit], k: int) -> list[Hit]:
    """The first (best) hit of each document in rank order, at most `k`; a record that is no
    document's chunk is its own group."""
    seen: set[int] = set()
    out: list[Hit] = []
    for hit in hits:
        cited = hit.citation.document
        if cited is not None:
            if cited.document_id in seen:
                continue
            seen.add(cited.document_id)
        out.append(hit)
        if len(out) == k:
            break
    return out
