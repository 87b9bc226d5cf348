"""The benchmark's metric code on hand-made cases with known answers."""

from __future__ import annotations

import math

import pytest

from benchmarks.metrics import (
    all_evidence_at_k,
    first_relevant_rank,
    hit_at_k,
    ndcg_at_k,
    percentile,
    reciprocal_rank_at_k,
    share_found_at_k,
    summarize,
)

RANKED = ["D1:1", "D1:1", "D2:4", "D3:9", "D5:2"]  # a duplicate key counts once


def test_first_relevant_rank_skips_duplicates() -> None:
    assert first_relevant_rank(RANKED, {"D3:9"}) == 3
    assert first_relevant_rank(RANKED, {"D9:9"}) is None


@pytest.mark.parametrize(
    "relevant, k, expected",
    [
        ({"D1:1"}, 1, 1.0),
        ({"D2:4"}, 1, 0.0),
        ({"D2:4"}, 2, 1.0),
        ({"D5:2", "D2:4"}, 2, 1.0),
        ({"X"}, 10, 0.0),
    ],
)
def test_hit_at_k(relevant: set[str], k: int, expected: float) -> None:
    assert hit_at_k(RANKED, relevant, k) == expected


def test_reciprocal_rank() -> None:
    assert reciprocal_rank_at_k(RANKED, {"D3:9"}, 10) == pytest.approx(1 / 3)
    assert reciprocal_rank_at_k(RANKED, {"D3:9"}, 2) == 0.0


def test_all_evidence_needs_every_key() -> None:
    assert all_evidence_at_k(RANKED, {"D1:1", "D5:2"}, 4) == 1.0
    assert all_evidence_at_k(RANKED, {"D1:1", "D5:2"}, 3) == 0.0
    assert all_evidence_at_k(RANKED, set(), 10) == 0.0


def test_summarize_averages_over_queries() -> None:
    results = [(["a", "b", "c"], {"a"}), (["a", "b", "c"], {"c"}), (["a", "b", "c"], {"z"}), (["b", "a"], {"a", "b"})]
    summary = summarize(results, ks=(1, 3))
    assert summary["recall@1"] == pytest.approx(2 / 4)
    assert summary["recall@3"] == pytest.approx(3 / 4)
    assert summary["mrr@10"] == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)
    assert summary["all@10"] == pytest.approx(3 / 4)
    assert summary["n"] == 4


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 99)) == (50, 95, 99)
    assert percentile([7.0], 99) == 7.0


def test_ndcg_gains_by_rank_over_the_ideal() -> None:
    # relevant at ranks 2 and 4 of the de-duplicated list (D1:1, D2:4, D3:9, D5:2); the ideal has them at 1 and 2
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RANKED, {"D2:4", "D5:2"}, 10) == pytest.approx(expected)
    assert ndcg_at_k(RANKED, {"D1:1"}, 10) == 1.0
    assert ndcg_at_k(RANKED, {"D5:2"}, 3) == 0.0 and ndcg_at_k(RANKED, set(), 10) == 0.0
    # more relevant keys than k: the ideal counts only k of them
    assert ndcg_at_k(["a", "b"], {"a", "b", "c"}, 2) == 1.0


def test_share_found_counts_each_relevant_key() -> None:
    assert share_found_at_k(RANKED, {"D2:4", "X"}, 10) == 0.5
    assert share_found_at_k(RANKED, {"D2:4", "D3:9"}, 2) == 0.5
    assert share_found_at_k(RANKED, set(), 10) == 0.0


def test_every_load_client_sends_at_least_one_request_however_late_it_starts() -> None:
    from benchmarks.load import run_level

    result = run_level("http://127.0.0.1:9", 4, 0.0, lambda api, worker, i: 200, 200)  # deadline already passed
    assert result["requests"] == 4 and result["errors"] == 0 and result["p50_ms"] >= 0


def test_the_load_benchmark_never_sends_a_search_text_twice() -> None:
    """A repeated text is answered by the server's query cache: every level and mode of a run,
    which number their clients' requests from 0 each time, must still send new texts."""
    from benchmarks.load import QueryTexts

    texts = QueryTexts()
    sent = [texts.next(worker, i) for clients in (1, 8, 32, 1, 8) for worker in range(clients) for i in range(40)]
    assert len(set(sent)) == len(sent)
