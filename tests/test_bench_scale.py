"""`make bench-full` at a small size: the one-tier run measures what its report prints, and the
many-agents run drives a real server past its budget without errors."""

from __future__ import annotations

import pytest

from benchmarks import agents, scale
from memvec.index.tokenize import tokenize


def test_scale_text_has_stopwords_a_common_word_and_a_unique_token() -> None:
    texts = scale.zipf_texts(2_000, seed=1)
    assert len(set(texts)) == len(texts) and all(t.split()[-1] == f"n{i}" for i, t in enumerate(texts))
    kept = sum(len(tokenize(t)) for t in texts) / sum(len(t.split()) for t in texts)
    assert 0.4 < kept < 0.9  # the tokenizer drops the stopword ranks, as in real text
    assert 0.2 < sum("diary" in t for t in texts) / len(texts) < 0.3


@pytest.mark.slow
def test_one_tier_small() -> None:
    point = scale.run(3_000, n_queries=20)
    assert point["n"] == 3_000 and point["ingest_s"] > 0
    for label in ("flat", "auto_build", "auto"):
        row = point[label]
        assert row["kind"] == "flat"  # below auto_hnsw_from
        assert row["rss_bytes_per_record"] > 0 and row["hybrid_ms"]["p50"] > 0 and row["common_bm25_ms"]["p50"] > 0
    assert point["auto"]["recall_at_10_vs_exact"] == 1.0
    assert "| 3,000 | flat (built from the store) |" in scale.markdown([point])


@pytest.mark.slow
def test_many_agents_small() -> None:
    result = agents.run(agents=30, per_agent=20, requests=150)
    assert result["budget"] == 3 and result["errors"] == 0
    assert result["indexes_loaded"] == 3 and result["indexes_budget"] == 3
    assert result["hit_count"] + result["miss_count"] == 150 and result["miss_count"] > 100
    assert result["max_rss"] >= result["rss_when_budget_full"] > 0
    assert "Errors: 0." in agents.markdown(result)


@pytest.mark.slow
def test_crossover_table_small() -> None:
    rows = scale.crossover(sizes=(3_000,), n_queries=20)
    assert rows[0]["n"] == 3_000 and rows[0]["flat_p50_ms"] > 0 and rows[0]["hnsw_build_s"] > 0
    assert rows[0]["recall_at_10"] >= 0.9
    assert "| 3,000 |" in scale.crossover_markdown(rows)
