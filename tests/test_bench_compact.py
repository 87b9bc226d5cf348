"""`make bench-compact` at a small size: every kind is measured, fp16 halves the vector bytes and
keeps the exact top 10."""

from __future__ import annotations

from benchmarks.compact import markdown, run


def test_compact_benchmark_small() -> None:
    result = run(2_000, n_queries=30)
    rows = {r["kind"]: r for r in result["rows"]}
    assert set(rows) == {"flat", "hnsw", "flat-fp16", "hnsw-fp16"}
    assert rows["flat"]["recall_at_10_vs_exact"] == 1.0 and rows["flat-fp16"]["recall_at_10_vs_exact"] >= 0.99
    assert rows["flat"]["bytes_per_vector"] - rows["flat-fp16"]["bytes_per_vector"] >= 0.99 * 384 * 2
    assert "| hnsw-fp16 |" in markdown(result)
