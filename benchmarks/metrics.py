"""Retrieval metrics over ranked lists of document keys (e.g. LoCoMo dia_ids).

A query is answered by any of its evidence keys; several hits may share a key (e.g. several
facts citing one turn), so ranks are taken over the de-duplicated key list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import mean


def unique_in_order(keys: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def first_relevant_rank(ranked: Sequence[str], relevant: set[str]) -> int | None:
    """1-based rank of the first relevant key, or None."""
    for rank, key in enumerate(unique_in_order(ranked), start=1):
        if key in relevant:
            return rank
    return None


def hit_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    rank = first_relevant_rank(ranked, relevant)
    return 1.0 if rank is not None and rank <= k else 0.0


def reciprocal_rank_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    rank = first_relevant_rank(ranked, relevant)
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def all_evidence_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1 when every relevant key is within the top k (multi-hop questions need them all)."""
    return 1.0 if relevant and relevant <= set(unique_in_order(ranked)[:k]) else 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """nDCG@k with a gain of 1 for each relevant key (BEIR's SciFact judgements are all 1; LongMemEval
    marks evidence turns without grades): the ideal puts every relevant key first."""
    gains = sum(
        1.0 / math.log2(rank + 1) for rank, key in enumerate(unique_in_order(ranked)[:k], start=1) if key in relevant
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return gains / ideal if ideal else 0.0


def share_found_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """The share of the relevant keys within the top k (BEIR's recall@k; a query with one relevant
    key scores as hit_at_k)."""
    return len(relevant & set(unique_in_order(ranked)[:k])) / len(relevant) if relevant else 0.0


def summarize(results: Sequence[tuple[Sequence[str], set[str]]], ks: Sequence[int] = (1, 5, 10)) -> dict[str, float]:
    """recall@k for each k, MRR@10 and all-evidence recall@10 over (ranked, relevant) pairs."""
    if not results:
        return {**{f"recall@{k}": 0.0 for k in ks}, "mrr@10": 0.0, "all@10": 0.0, "n": 0}
    summary = {f"recall@{k}": mean(hit_at_k(r, rel, k) for r, rel in results) for k in ks}
    summary["mrr@10"] = mean(reciprocal_rank_at_k(r, rel, 10) for r, rel in results)
    summary["all@10"] = mean(all_evidence_at_k(r, rel, 10) for r, rel in results)
    summary["n"] = len(results)
    return summary


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
