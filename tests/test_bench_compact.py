"""`make bench-compact` at a small size: every kind is measured, fp16 halves the vector bytes and
keeps the exact top 10, sq8 quarters them and keeps 95% of it."""

from __future__ import annotations

import pytest

from benchmarks.compact import markdown, run


@pytest.mark.slow
def test_compact_benchmark_small() -> None:
    result = run(2_000, n_queries=30)
    rows = {r["kind"]: r for r in result["rows"]}
    assert set(rows) == {"flat", "hnsw", "flat-fp16", "hnsw-fp16", "flat-sq8", "hnsw-sq8"}
    assert rows["flat"]["recall_at_10_vs_exact"] == 1.0 and rows["flat-fp16"]["recall_at_10_vs_exact"] >= 0.99
    assert rows["flat"]["bytes_per_vector"] - rows["flat-fp16"]["bytes_per_vector"] >= 0.99 * 384 * 2
    assert rows["flat-sq8"]["recall_at_10_vs_exact"] >= 0.95
    assert rows["flat"]["bytes_per_vector"] - rows["flat-sq8"]["bytes_per_vector"] >= 0.99 * 384 * 3
    assert "| hnsw-sq8 |" in markdown(result)
